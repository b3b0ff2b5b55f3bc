package bundle

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
)

// testKeySeed is the Ed25519 seed of the golden bundles' signing key. It is
// a published constant, for tests only: a bundle signed with it proves
// nothing, and no gateway may ever trust its public key.
const testKeySeed = "trit golden test key - TEST ONLY"

func testKey(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	if len(testKeySeed) != ed25519.SeedSize {
		t.Fatalf("test key seed has %d bytes, want %d", len(testKeySeed), ed25519.SeedSize)
	}
	priv := ed25519.NewKeyFromSeed([]byte(testKeySeed))
	return priv.Public().(ed25519.PublicKey), priv
}

// otherKey returns a deterministic key different from testKey.
func otherKey(t testing.TB, n byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = n + byte(i)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return priv.Public().(ed25519.PublicKey), priv
}

var testCreated = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// randomSpec builds a random ternary model over a real transform, with a
// float16 scaler (snapped by CompactScaler) and ~zeroFrac zero weights.
func randomSpec(seed uint64, d, p, classes int, zeroFrac float64, named bool) *inference.ModelSpec {
	rnd := rand.New(rand.NewPCG(seed, 0x7e57))
	tr := inference.TransformSpec{Generator: inference.GeneratorV1, Seed: seed * 0x9e3779b97f4a7c15, Sigma: 0.5 + 2*rnd.Float64(), D: d, P: p}
	sc := inference.Scaler{Lo: make([]float32, d), Hi: make([]float32, d)}
	for i := range d {
		lo := float32((rnd.Float64() - 0.7) * 100)
		sc.Lo[i], sc.Hi[i] = lo, lo+float32(rnd.Float64()*300)
		if i%17 == 5 {
			sc.Hi[i] = sc.Lo[i] // a constant feature
		}
	}
	sc = CompactScaler(sc)
	names := make([]string, classes)
	for c := range names {
		names[c] = fmt.Sprintf("class-%d", c)
	}
	nv := inference.Vectors(classes)
	weights := make([][]int8, nv)
	alpha := make([]float32, nv)
	for c := range weights {
		w := make([]int8, p)
		for j := range w {
			switch {
			case rnd.Float64() < zeroFrac:
			case rnd.IntN(2) == 0:
				w[j] = 1
			default:
				w[j] = -1
			}
		}
		weights[c] = w
		alpha[c] = float32(0.01 + rnd.Float64())
	}
	spec, err := inference.NewTernarySpec(tr, sc, names, weights, alpha)
	if err != nil {
		panic(err)
	}
	if named {
		spec.Features = make([]string, d)
		for i := range spec.Features {
			spec.Features[i] = fmt.Sprintf("sensor_%03d", i)
		}
	}
	return spec
}

func testBundle(spec *inference.ModelSpec) *Bundle {
	return &Bundle{
		Header: Header{
			ModelID:   "test-model",
			Release:   7,
			CreatedAt: testCreated,
			ExpiresAt: testCreated.Add(365 * 24 * time.Hour),
		},
		Compat: Compat{MinAgentVersion: "0.3.1", Hardware: "pi-zero/bme280"},
		Spec:   spec,
	}
}

// signed encodes and signs b with priv.
func signed(t testing.TB, b *Bundle, priv ed25519.PrivateKey) []byte {
	t.Helper()
	raw, err := Encode(b)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	out, err := Sign(raw, priv)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return out
}

// trusting returns decode options trusting the given keys, at testCreated.
func trusting(t testing.TB, keys ...ed25519.PublicKey) *DecodeOptions {
	t.Helper()
	ks, err := NewKeySet(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return &DecodeOptions{Trusted: ks, Now: func() time.Time { return testCreated }}
}

// randomInputs returns n raw inputs spread a little beyond the scaler's
// range.
func randomInputs(rnd *rand.Rand, sc inference.Scaler, n int) [][]float32 {
	out := make([][]float32, n)
	for k := range out {
		x := make([]float32, len(sc.Lo))
		for i := range x {
			lo, hi := float64(sc.Lo[i]), float64(sc.Hi[i])
			w := hi - lo + 1
			x[i] = float32(lo - 0.1*w + 1.2*w*rnd.Float64())
		}
		out[k] = x
	}
	return out
}

// shape describes a format-2 test model (see shapedSpec).
type shape struct {
	d, p, classes int
	thresholds    int     // at most this many thresholds per feature (0: none)
	trees, depth  int     // oblivious trees (0: none) and their depth
	planes        int     // the trees' leaf planes (Trees.Planes; 0: one)
	rho           int32   // threshold weight
	proj          int     // projection outputs (0: none)
	zeroFrac      float64 // fraction of zero weights
	projZeroFrac  float64 // fraction of zero projection coefficients
	clip, named   bool
}

// shapedSpec builds a random model of the given shape: float16 scaler
// (CompactScaler) with a constant feature, thresholds snapped with
// CompactThresholds, trees snapped with CompactTrees, a random ternary
// projection, and a real transform.
func shapedSpec(seed uint64, s shape) *inference.ModelSpec {
	rnd := rand.New(rand.NewPCG(seed, 0x5ca1e))
	base := &inference.ModelSpec{Scaler: inference.Scaler{Lo: make([]float32, s.d), Hi: make([]float32, s.d), Clip: s.clip}}
	for i := range s.d {
		lo := float32((rnd.Float64() - 0.7) * 100)
		base.Scaler.Lo[i], base.Scaler.Hi[i] = lo, lo+float32(rnd.Float64()*300)
		if i%17 == 5 {
			base.Scaler.Hi[i] = base.Scaler.Lo[i]
		}
	}
	base.Scaler = CompactScaler(base.Scaler)
	if s.thresholds > 0 {
		th := make([][]float32, s.d)
		for i := range th {
			for range rnd.IntN(s.thresholds + 1) {
				th[i] = append(th[i], float32(rnd.Float64()*2-1))
			}
		}
		th[0] = append(th[0], 0.5) // at least one threshold
		base.Thresholds = CompactThresholds(th)
	}
	if s.trees > 0 {
		tr := &inference.Trees{Depth: s.depth, Planes: s.planes}
		for range s.trees * s.depth {
			tr.Feature = append(tr.Feature, uint16(rnd.IntN(s.d)))
			tr.Value = append(tr.Value, float32(rnd.Float64()*2.4-1.2))
		}
		base.Trees = CompactTrees(tr)
	}
	base.ThresholdWeight = s.rho
	in := s.d
	if s.proj > 0 {
		p := &inference.Projection{}
		words := (s.d + 63) / 64
		for range s.proj {
			sg, nz := make([]uint64, words), make([]uint64, words)
			inference.PackTernary(sg, nz, randomTrits(rnd, s.d, s.projZeroFrac))
			p.Sign, p.NonZero = append(p.Sign, sg), append(p.NonZero, nz)
			p.Scale = append(p.Scale, float32(0.05+rnd.Float64()/4))
			p.Bias = append(p.Bias, float32(rnd.NormFloat64()/4))
		}
		base.Projection = p
		in = s.proj
	}
	if s.p > 0 {
		base.Transform = inference.TransformSpec{Generator: inference.GeneratorV1, Seed: seed * 0x9e3779b97f4a7c15, Sigma: 0.5 + 2*rnd.Float64(), D: in, P: s.p}
	}
	for c := range s.classes {
		base.Classes = append(base.Classes, fmt.Sprintf("class-%d", c))
	}
	nv := inference.Vectors(s.classes)
	weights, alpha := make([][]int8, nv), make([]float32, nv)
	for c := range weights {
		weights[c] = randomTrits(rnd, base.Columns(), s.zeroFrac)
		alpha[c] = float32(0.01 + rnd.Float64())
	}
	spec, err := inference.NewSpec(base, weights, alpha)
	if err != nil {
		panic(err)
	}
	if s.named {
		spec.Features = make([]string, s.d)
		for i := range spec.Features {
			spec.Features[i] = fmt.Sprintf("sensor_%03d", i)
		}
	}
	return spec
}

// randomTrits returns n values in {-1, 0, 1}, about zeroFrac of them 0.
func randomTrits(rnd *rand.Rand, n int, zeroFrac float64) []int8 {
	w := make([]int8, n)
	for j := range w {
		switch {
		case rnd.Float64() < zeroFrac:
		case rnd.IntN(2) == 0:
			w[j] = 1
		default:
			w[j] = -1
		}
	}
	return w
}

// roundTrip signs a bundle of spec carrying info, decodes it and checks
// that it is the given format, decodes to spec, passes its self-test,
// predicts as spec does on random inputs (seeded with seed), re-encodes to
// the same bytes and inspects consistently. It returns the signed bytes
// and their breakdown.
func roundTrip(t *testing.T, spec *inference.ModelSpec, info map[string]string, format byte, seed uint64) ([]byte, *Breakdown) {
	t.Helper()
	pub, priv := testKey(t)
	in := testBundle(spec)
	in.Info = info
	data := signed(t, in, priv)
	out, err := Decode(data, trusting(t, pub))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if out.Format != int(format) || data[4] != format {
		t.Fatalf("format %d / byte %d, want %d", out.Format, data[4], format)
	}
	if !reflect.DeepEqual(out.Spec, spec) {
		t.Fatalf("decoded spec differs:\n got %+v\nwant %+v", out.Spec, spec)
	}
	m1, err := inference.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := inference.New(out.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := SelfTest(m2, out); err != nil {
		t.Fatalf("SelfTest: %v", err)
	}
	rnd := rand.New(rand.NewPCG(seed, seed+1))
	nc, nv := len(spec.Classes), inference.Vectors(len(spec.Classes))
	s1, s2 := make([]float32, nc), make([]float32, nc)
	r1, r2 := make([]int32, nv), make([]int32, nv)
	for _, x := range randomInputs(rnd, spec.Scaler, 200) {
		p1, _ := m1.Predict(s1, x)
		p2, _ := m2.Predict(s2, x)
		m1.PredictRaw(r1, x)
		m2.PredictRaw(r2, x)
		if p1 != p2 || !slices.Equal(s1, s2) || !slices.Equal(r1, r2) {
			t.Fatalf("x = %v: predicts %d %v %v after the round trip, %d %v %v before", x, p2, s2, r2, p1, s1, r1)
		}
	}
	if again := signed(t, out, priv); !bytes.Equal(again, data) {
		t.Error("re-encoding gives different bytes")
	}
	bd, err := Inspect(data)
	if err != nil {
		t.Fatal(err)
	}
	checkBreakdown(t, bd, data, spec)
	return data, bd
}

// sectionCase pins one section of an encoded bundle: its bytes in hex.
type sectionCase struct {
	data            []byte
	name, sec, want string
}

// checkSections compares each case's section with its pinned bytes.
func checkSections(t *testing.T, cases []sectionCase) {
	t.Helper()
	for _, c := range cases {
		got := section(t, c.data, c.sec)
		if want := unhex(t, c.want); !bytes.Equal(got, want) {
			t.Errorf("%s: %s section = % x, want % x", c.name, c.sec, got, want)
		}
	}
}
