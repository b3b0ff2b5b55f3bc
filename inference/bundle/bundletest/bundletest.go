// Package bundletest builds bundles for tests of the code that ships and
// installs them (agent, fleet, end-to-end tests): small valid models, and
// well-formed, correctly signed bundles that still fail on the gateway.
package bundletest

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
)

// Spec returns a small valid ternary model over d features in [-1, 1] with
// the given class labels, p embedding bits and a transform seeded by seed.
// Its weights follow a fixed pattern; it classifies nothing meaningfully.
func Spec(seed uint64, d, p int, classes []string) (*inference.ModelSpec, error) {
	lo, hi := make([]float32, d), make([]float32, d)
	for i := range hi {
		lo[i], hi[i] = -1, 1
	}
	nv := inference.Vectors(len(classes))
	weights := make([][]int8, nv)
	alpha := make([]float32, nv)
	for v := range weights {
		w := make([]int8, p)
		for j := range w {
			w[j] = int8((j+v+int(seed%7))%3) - 1
		}
		weights[v], alpha[v] = w, 0.25+float32(v)/8
	}
	return inference.NewTernarySpec(inference.TransformSpec{Generator: inference.GeneratorV1, Seed: seed, Sigma: 1, D: d, P: p},
		inference.Scaler{Lo: lo, Hi: hi}, classes, weights, alpha)
}

// ThresholdSpec returns a small valid model without random features (p =
// 0, format 2 only): d clipped features in [-1, 1], each with perFeature
// evenly spaced threshold bits, and the given class labels. Its weights
// follow a fixed pattern; it classifies nothing meaningfully.
func ThresholdSpec(d, perFeature int, classes []string) (*inference.ModelSpec, error) {
	lo, hi := make([]float32, d), make([]float32, d)
	th := make([][]float32, d)
	for i := range d {
		lo[i], hi[i] = -1, 1
		for k := 1; k <= perFeature; k++ {
			th[i] = append(th[i], float32(2*k)/float32(perFeature+1)-1)
		}
	}
	base := &inference.ModelSpec{
		Classes:    classes,
		Scaler:     inference.Scaler{Lo: lo, Hi: hi, Clip: true},
		Thresholds: bundle.CompactThresholds(th),
	}
	nv := inference.Vectors(len(classes))
	weights := make([][]int8, nv)
	alpha := make([]float32, nv)
	for v := range weights {
		w := make([]int8, base.Columns())
		for j := range w {
			w[j] = int8((j+2*v)%3) - 1
		}
		weights[v], alpha[v] = w, 0.5+float32(v)/4
	}
	return inference.NewSpec(base, weights, alpha)
}

// Signed encodes spec as release of model id (created at created, never
// expiring, for agents 0.0.0 and up) and signs it with priv.
func Signed(spec *inference.ModelSpec, id string, release uint64, created time.Time, priv ed25519.PrivateKey) ([]byte, error) {
	raw, err := bundle.Encode(&bundle.Bundle{
		Header: bundle.Header{ModelID: id, Release: release, CreatedAt: created},
		Compat: bundle.Compat{MinAgentVersion: "0.0.0"},
		Spec:   spec,
	})
	if err != nil {
		return nil, err
	}
	return bundle.Sign(raw, priv)
}

// BreakSelfTest returns a copy of the signed bundle data whose self-test
// expectation is off by one in one score, re-signed with priv. The result
// decodes and verifies like any good bundle, but fails its self-test — the
// health check — on every gateway: it stands for a model that does not
// compute on the device what it computed where it was built.
func BreakSelfTest(data []byte, priv ed25519.PrivateKey, trusted *bundle.KeySet) ([]byte, error) {
	bd, err := bundle.Inspect(data)
	if err != nil {
		return nil, err
	}
	var off, size int
	for _, s := range bd.Sections {
		if s.Name == "selftest" {
			off, size = s.Offset, s.Size
		}
	}
	if size == 0 {
		return nil, fmt.Errorf("bundletest: no self-test section in %v", bd.Sections)
	}
	// Try flipping bit 1 of each byte of the section: for the first byte of
	// a score's varint that changes the score by one and keeps the encoding
	// valid; the first candidate that decodes and fails the self-test wins.
	for i := off; i < off+size; i++ {
		unsigned := bytes.Clone(data)
		clear(unsigned[len(unsigned)-72:])
		unsigned[i] ^= 0x02
		signed, err := bundle.Sign(unsigned, priv)
		if err != nil {
			continue
		}
		b, err := bundle.Decode(signed, &bundle.DecodeOptions{Trusted: trusted})
		if err != nil {
			continue
		}
		m, err := inference.New(b.Spec)
		if err != nil {
			continue
		}
		if bundle.SelfTest(m, b) != nil {
			return signed, nil
		}
	}
	return nil, fmt.Errorf("bundletest: could not break the self-test of this bundle")
}
