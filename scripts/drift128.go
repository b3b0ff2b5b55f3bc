//go:build ignore

// drift128 writes the search-time benchmark's generated recording to
// standard output: 20,000 rows in time order × 128 dense features (16
// simulated gas sensors, 8 features each) and 6 classes, the sensors'
// gain and offset drifting over the recording — the shape of issue 36's
// "≤ 30 s for sets up to 20,000 rows × 128 features" (docs/BENCHMARKS.md
// "The default search: time and memory"):
//
//	go run scripts/drift128.go > drift128.csv
//	/usr/bin/time -v tritctl train drift128.csv --label-column gas -o d.trit --json
//
// Seeded: the same file every time.
package main

import (
	"bufio"
	"fmt"
	"math"
	"math/rand"
	"os"
)

func main() {
	r := rand.New(rand.NewSource(7))
	n, sensors, per, K := 20000, 16, 8, 6
	resp := make([][]float64, K)
	for k := range resp {
		resp[k] = make([]float64, sensors)
		for s := range resp[k] {
			resp[k][s] = 1 + 0.25*r.NormFloat64()
		}
	}
	shape := make([][]float64, sensors)
	dg, do := make([]float64, sensors), make([]float64, sensors)
	for s := range shape {
		shape[s] = make([]float64, per)
		for f := range shape[s] {
			shape[s][f] = 0.5 + r.Float64()
		}
		dg[s] = r.NormFloat64() * 0.4
		do[s] = r.NormFloat64() * 30
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprint(w, "time")
	for s := 0; s < sensors; s++ {
		for f := 0; f < per; f++ {
			fmt.Fprintf(w, ",s%d_%d", s, f)
		}
	}
	fmt.Fprintln(w, ",gas")
	for i := 0; i < n; i++ {
		t := float64(i) / float64(n)
		y := r.Intn(K)
		conc := 10 + 490*r.Float64()
		fmt.Fprintf(w, "%d", 1700000000+60*i)
		for s := 0; s < sensors; s++ {
			base := resp[y][s]*math.Log1p(conc)*20*(1+dg[s]*t) + do[s]*t
			for f := 0; f < per; f++ {
				v := base*shape[s][f]*(1+0.3*math.Sin(float64(f)+resp[y][s])) + r.NormFloat64()*120
				fmt.Fprintf(w, ",%.3f", v)
			}
		}
		fmt.Fprintf(w, ",g%d\n", y)
	}
}
