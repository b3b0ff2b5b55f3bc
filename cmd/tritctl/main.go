// Command tritctl is the operator's command line for trit; see package ctl.
package main

import (
	"os"

	"github.com/trit-iot/trit/tritctl"
)

func main() { os.Exit(tritctl.Main(os.Args[1:])) }
