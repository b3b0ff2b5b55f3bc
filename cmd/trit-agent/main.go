// Command trit-agent is the gateway daemon (package agent), with the
// sensors tool (package sensors/sensorcmd) mounted as `trit-agent sensors`.
package main

import (
	"os"

	"github.com/trit-iot/trit/agent"
	"github.com/trit-iot/trit/sensors/sensorcmd"
)

func main() {
	os.Exit(agent.Main(os.Args[1:], os.Stdout, os.Stderr, sensorcmd.New(os.Stdout, os.Stderr)))
}
