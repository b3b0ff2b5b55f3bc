// Command trit-fleet is the trit fleet service: the service (package fleet)
// in its process shell (package fleet/server), which serves the web console
// (fleet/console) on the API listener.
package main

import (
	"os"

	"github.com/trit-iot/trit/fleet/server"
)

func main() { os.Exit(server.Main(os.Args[1:], os.Stdout, os.Stderr)) }
