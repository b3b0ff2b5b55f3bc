// Command trit-bench runs the benchmarks of docs/BENCHMARKS.md: the
// paper's comparison and the peers at the same byte budget. See package
// benchmark.
package main

import (
	"os"

	"github.com/trit-iot/trit/benchmark"
)

func main() { os.Exit(benchmark.Main(os.Args[1:])) }
