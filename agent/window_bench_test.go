package agent

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
)

// benchRunning is a model of p random features over the test features,
// with a 256-bit drift fingerprint, bound to channels in order.
func benchRunning(b *testing.B, seed uint64, p int) *running {
	b.Helper()
	k := newKeys(b)
	data := makeBundle(b, bundleOpts{release: 1, seed: seed, p: p, signer: k.release})
	trusted, err := bundle.LoadKeySet(k.releasePub)
	if err != nil {
		b.Fatal(err)
	}
	bd, err := bundle.Decode(data, &bundle.DecodeOptions{MaxSize: len(data), Trusted: trusted})
	if err != nil {
		b.Fatal(err)
	}
	spec := bd.Spec
	n := min(256, len(spec.Kept))
	fp := &inference.Fingerprint{Columns: make([]int32, n), Rates: make([]uint8, n)}
	for i := range n {
		fp.Columns[i], fp.Rates[i] = int32(i), 128
	}
	spec.Fingerprint = fp
	m, err := inference.New(spec)
	if err != nil {
		b.Fatal(err)
	}
	return &running{model: m, bind: &binding{direct: []int{0, 1, 2}, vec: make([]float32, 3)}, sc: newScoring(m, 600)}
}

// BenchmarkWindow is the inference loop's CPU per window (docs/BENCHMARKS.md
// "Shadow scoring"): the active model alone (with its drift meter), and
// with a candidate of the same size scored in shadow.
//
//	go test -run '^$' -bench Window -benchmem ./agent
func BenchmarkWindow(b *testing.B) {
	values := []float64{0.1, -0.4, 0.7}
	at := time.Now()
	for _, p := range []int{256, 2048} {
		for _, shadow := range []bool{false, true} {
			name := map[bool]string{false: "single", true: "shadow"}[shadow]
			b.Run(name+"/p="+itoa(p), func(b *testing.B) {
				l := &loop{stats: newStats(at), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
				r := benchRunning(b, 1, p)
				if shadow {
					l.shadow.Store(&shadowRun{r: benchRunning(b, 2, p), rollout: "r", seq: 1, bundle: "c", lowMin: 0.1})
				}
				l.window(nil, r, values, at) // aligns the candidate
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					values[0] = float64(i%200)/100 - 1
					l.window(nil, r, values, at)
				}
			})
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for ; n > 0; n /= 10 {
		i--
		buf[i] = byte('0' + n%10)
	}
	return string(buf[i:])
}
