package data

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// genText returns n rows of d features as LIBSVM (sparse=true) or dense
// whitespace-separated text with 6-decimal values, like usps.
func genText(n, d int, sparse bool) []byte {
	rng := rand.New(rand.NewPCG(3, 4))
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "%d", i%10)
		for j := range d {
			v := rng.Float64()*2 - 1
			if sparse {
				fmt.Fprintf(&b, " %d:%.6f", j+1, v)
			} else {
				fmt.Fprintf(&b, " %.6f", v)
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func benchmarkRead(b *testing.B, in []byte) {
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := Read(bytes.NewReader(in), "bench", &Options{LabelColumn: Column{Index: 1}}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadLIBSVM(b *testing.B) { benchmarkRead(b, genText(2000, 256, true)) }
func BenchmarkReadDense(b *testing.B)  { benchmarkRead(b, genText(2000, 256, false)) }

func BenchmarkReadDenseGzip(b *testing.B) {
	benchmarkRead(b, gzipBytes(b, genText(2000, 256, false)))
}

var sink float32

// BenchmarkParseValue compares parseValue with the plain strconv call it
// shortcuts for integers.
func BenchmarkParseValue(b *testing.B) {
	for _, tok := range []string{"2596", "-0.930435"} {
		t := []byte(tok)
		b.Run(tok, func(b *testing.B) {
			for b.Loop() {
				v, _ := parseValue(t)
				sink += v
			}
		})
		b.Run(tok+"/naive", func(b *testing.B) {
			for b.Loop() {
				v, _ := strconv.ParseFloat(string(t), 32)
				sink += float32(v)
			}
		})
	}
}

// Benchmarks on the shared datasets; they need TRIT_DATA.

func benchmarkLoad(b *testing.B, rel string, opt *Options) {
	dir := os.Getenv("TRIT_DATA")
	if dir == "" {
		b.Skip("TRIT_DATA not set")
	}
	for b.Loop() {
		if _, err := Load(dir+"/"+rel, opt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadMNISTTrain(b *testing.B) {
	benchmarkLoad(b, "mnist/train-images-idx3-ubyte.approx.gz", nil)
}

func BenchmarkLoadCovtype(b *testing.B) {
	benchmarkLoad(b, "covtype/covtype.data.xz", &Options{LabelColumn: Column{Index: -1}})
}

func BenchmarkLoadUSPSTrain(b *testing.B) {
	benchmarkLoad(b, "usps/zip.train.gz", &Options{LabelColumn: Column{Index: 1}})
}
