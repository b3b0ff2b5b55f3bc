package inference

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The tiled blocks gather with scalar loads, with VGATHERDPS or (AVX-512,
// d <= 64) with in-register permutes, as measured on the CPU; each against
// the reference.
func TestEmbedFastPathEveryGather(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(41, 42))
	for _, wide := range []bool{false, cpu.avx512} { // with AVX-512 and VGATHERDPS: pair tiles
		for _, g := range []int{0, 1, 2} {
			if g == 2 && !wide {
				continue
			}
			k := cpu
			k.avx512, k.gather = wide, g
			for _, d := range []int{5, 16, 24, 33, 64, 100, 256, 784} {
				for _, p := range []int{64, 1000, 3*nextPow2(d) + 5} {
					for _, keep := range []string{"all", "some"} {
						t.Run(fmt.Sprintf("avx512=%v/vgather=%d/d=%d/p=%d/%s", wide, g, d, p, keep), func(t *testing.T) {
							testEmbedFastPath(t, k, rnd, d, p, keep)
						})
					}
				}
			}
		}
	}
}

// The interval test runs 16 lanes wide where there is AVX-512, else 8;
// both against the reference.
func TestIntervalBitsBothWidths(t *testing.T) {
	t.Parallel()
	bothWidths(t, testIntervalBits)
}

// bothWidths runs test with the AVX2 paths, and with the AVX-512 ones
// where the CPU has them.
func bothWidths(t *testing.T, test func(*testing.T, kernels)) {
	for _, wide := range []bool{false, true} {
		if wide && !cpu.avx512 {
			t.Log("no AVX-512 here: only the AVX2 path tested")
			continue
		}
		k := cpu
		k.avx512 = wide
		t.Run(fmt.Sprintf("avx512=%v", wide), func(t *testing.T) { test(t, k) })
	}
}

// Threshold bits with either gather against the Go loop, on inputs equal
// to thresholds, zeros of both signs, NaN and infinities.
func TestThresholdFastPathMatchesReference(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(43, 44))
	for _, n := range []int{1, 63, 64, 65, 200, 1000} {
		d := 1 + rnd.IntN(40)
		tc := thresholdColumns{feature: make([]int32, n), value: make([]float32, n)}
		for i := range n {
			tc.feature[i], tc.value[i] = int32(rnd.IntN(d)), float32(rnd.IntN(5)-2)/2
		}
		xs := make([]float32, d)
		special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -1, 0.5, 1}
		for trial := range 20 {
			for i := range xs {
				xs[i] = special[rnd.IntN(len(special))]
				if trial%2 == 0 {
					xs[i] = float32(rnd.NormFloat64())
				}
			}
			ref := make([]uint64, (n+63)/64)
			tc.embed(&goKernels, ref, xs)
			for _, g := range []int{0, 1} {
				k := cpu
				k.gather = g
				fast := make([]uint64, (n+63)/64)
				tc.embed(&k, fast, xs)
				for w := range fast {
					if fast[w] != ref[w] {
						t.Fatalf("n=%d vgather=%d trial %d: word %d %#x, reference %#x", n, g, trial, w, fast[w], ref[w])
					}
				}
			}
		}
	}
}

// TernaryDot counts with VPOPCNTQ where the CPU has it, else with 64-byte
// nibble tables where it has AVX-512 BW, else with the AVX2 nibble table;
// each against the definition.
func TestTernaryDotEveryCount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name           string
		popcnt, shufbw bool
	}{{"avx2", false, false}, {"avx512bw", false, true}, {"vpopcntq", true, false}} {
		if c.popcnt && !cpu.popcnt512 || c.shufbw && !cpu.shuffle512 {
			t.Logf("no %s here: not tested", c.name)
			continue
		}
		k := cpu
		k.popcnt512, k.shuffle512 = c.popcnt, c.shufbw
		t.Run(c.name, func(t *testing.T) { testTernaryDot(t, &k) })
	}
}

// Tree leaves with either gather.
func TestTreeEmbedBothGathers(t *testing.T) {
	t.Parallel()
	for _, g := range []int{0, 1} {
		k := cpu
		k.gather = g
		t.Run(fmt.Sprintf("vgather=%d", g), func(t *testing.T) { testTreeEmbed(t, k) })
	}
}

// TestGatherMeasured runs the start-up measurement that chooses between
// VGATHERDPS and scalar loads, and checks it returns a setting.
func TestGatherMeasured(t *testing.T) {
	t.Parallel()
	start := time.Now()
	g := measureGather()
	took := time.Since(start)
	if g < 0 || g > 2 || !cpu.avx512 && g == 2 || !cpu.simd && g != 0 {
		t.Fatalf("measureGather() = %d", g)
	}
	if m := cpu.gatherMode(); m < 0 || m > 2 || cpu.gather != -1 {
		t.Fatalf("cpu's gather %d, measured %d", cpu.gather, m)
	}
	t.Logf("gather mode chosen: %d (0 scalar loads, 1 VGATHERDPS, 2 AVX-512 permutes), measured in %v", g, took)
}

// The blocks of d = 8 run the table path where there is FMA3, else the
// in-register path or (with VGATHERDPS or the AVX-512 permutes) tiles;
// every one against Embed, with either interval test.
func TestEmbed8EveryPath(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(87, 88))
	for _, f := range []bool{false, cpu.fma3} {
		for _, wide := range []bool{false, cpu.avx512} {
			for _, g := range []int{0, 1, 2} {
				if g == 2 && !wide {
					continue // the permutes need AVX-512
				}
				k := cpu
				k.fma3, k.avx512, k.gather = f, wide, g
				t.Run(fmt.Sprintf("fma3=%v/avx512=%v/vgather=%d", f, wide, g), func(t *testing.T) { testEmbed8(t, k, rnd) })
			}
		}
	}
}

// FWHT runs 16 lanes wide where there is AVX-512, else 8; both against
// the reference loop.
func TestFWHTBothWidths(t *testing.T) {
	t.Parallel()
	bothWidths(t, func(t *testing.T, k kernels) { testFWHT(t, &k) })
}

// BenchmarkFWHTWidths times FWHT's 8-lane (AVX2) and 16-lane (AVX-512)
// paths on the same machine.
//
//	go test -run '^$' -bench FWHTWidths -count 5 ./inference
func BenchmarkFWHTWidths(b *testing.B) {
	for _, n := range []int{256, 1024, 4096} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		for _, wide := range []bool{false, true} {
			if wide && !cpu.avx512 {
				continue
			}
			k := cpu
			k.avx512 = wide
			name := itoa(n) + "/avx2"
			if wide {
				name = itoa(n) + "/avx512"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					fwht(&k, x)
				}
			})
		}
	}
}

// BenchmarkEmbedTablePaths times embedColumns of every column of d = 8
// and d = 16 transforms (256 blocks) through the table paths and through
// the other paths each gather setting gives, 8 and 16 lanes wide.
//
//	go test -run '^$' -bench EmbedTablePaths -count 5 ./inference
func BenchmarkEmbedTablePaths(b *testing.B) {
	for _, d := range []int{8, 16} {
		for _, c := range []struct {
			table, wide bool
			g           int
		}{{false, false, 0}, {true, false, 0}, {false, true, 0}, {false, true, 1}, {false, true, 2}, {true, true, 0}} {
			if c.wide && !cpu.avx512 || c.table && !cpu.fma3 {
				continue
			}
			k := cpu
			k.fma3, k.avx512, k.gather = c.table, c.wide, c.g
			p := 256 * d
			tr, err := newTransform(TransformSpec{Generator: GeneratorV1, Seed: 5, Sigma: 1, D: d, P: p}, k)
			if err != nil {
				b.Fatal(err)
			}
			ws, x, cols := tr.NewWorkspace(), make([]float32, d), allColumns(p)
			for i := range x {
				x[i] = float32(i%5) - 2
			}
			plan, dst := tr.columnPlan(cols), make([]uint64, p/64)
			name := fmt.Sprintf("d=%d/table=%v/avx512=%v/gather=%d", d, c.table, c.wide, c.g)
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					clear(dst)
					tr.embedColumns(dst, 0, x, cols, plan, ws)
				}
			})
		}
	}
}

// The table paths' block loops 8 lanes wide too.
func TestTableBlocksBothWidths(t *testing.T) {
	t.Parallel()
	k := cpu
	k.avx512 = false
	testTableBlocks(t, k)
}
