// Command tritctl is the operator's command line for trit; see package ctl.
package main

import (
	"os"

	"github.com/trit-iot/trit/ctl"
)

func main() { os.Exit(ctl.Main(os.Args[1:])) }
