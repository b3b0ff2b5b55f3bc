// Command trit-fleet is the trit fleet service; see package fleet.
package main

import (
	"os"

	"github.com/trit-iot/trit/fleet"
	_ "github.com/trit-iot/trit/fleet/console" // the web console on the API listener (docs/FLEET.md)
)

func main() { os.Exit(fleet.Main(os.Args[1:], os.Stdout, os.Stderr)) }
