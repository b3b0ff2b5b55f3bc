package bundle

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
)

func TestRoundTrip(t *testing.T) {
	pub, priv := testKey(t)
	for _, c := range []struct {
		name                string
		d, p, classes       int
		zeroFrac            float64
		named               bool
		wantKept            byte
		wantNonZeroOmitted  bool
		wantScalerFloat32   bool
		wideScaler, noExpir bool
	}{
		{name: "multiclass", d: 40, p: 512, classes: 5, zeroFrac: 0.3, named: true, wantKept: keptBitmap},
		// One weight vector: its non-zero plane is the kept set, all ones.
		{name: "binary", d: 9, p: 300, classes: 2, zeroFrac: 0.3, wantKept: keptBitmap, wantNonZeroOmitted: true, noExpir: true},
		{name: "sparse", d: 20, p: 4096, classes: 2, zeroFrac: 0.97, wantKept: keptDeltas, wantNonZeroOmitted: true},
		{name: "dense", d: 7, p: 200, classes: 3, zeroFrac: 0, wantKept: keptBitmap, wantNonZeroOmitted: true},
		{name: "wide scaler", d: 12, p: 256, classes: 4, zeroFrac: 0.5, wideScaler: true, wantScalerFloat32: true, wantKept: keptBitmap},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := randomSpec(uint64(c.d*1000+c.p), c.d, c.p, c.classes, c.zeroFrac, c.named)
			if c.wideScaler {
				spec.Scaler.Lo[1], spec.Scaler.Hi[1] = -1e6, 123456.7
			}
			in := testBundle(spec)
			if c.noExpir {
				in.Header.ExpiresAt = time.Time{}
			}
			data := signed(t, in, priv)
			out, err := Decode(data, trusting(t, pub))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(out.Spec, spec) {
				t.Fatalf("decoded spec differs:\n got %+v\nwant %+v", out.Spec, spec)
			}
			if !reflect.DeepEqual(out.Header, in.Header) {
				t.Fatalf("header: got %+v, want %+v", out.Header, in.Header)
			}
			wantCompat := in.Compat
			wantCompat.Features = spec.Features
			if !reflect.DeepEqual(out.Compat, wantCompat) {
				t.Fatalf("compat: got %+v, want %+v", out.Compat, wantCompat)
			}
			if !out.Signed || out.KeyID != KeyID(pub) {
				t.Fatalf("Signed = %v, key ID %x; want true, %x", out.Signed, out.KeyID, KeyID(pub))
			}

			bd, err := Inspect(data)
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			if got := bd.KeptForm == "deltas"; got != (c.wantKept == keptDeltas) {
				t.Errorf("kept form %s", bd.KeptForm)
			}
			if got := bd.ScalerForm == "float32"; got != c.wantScalerFloat32 {
				t.Errorf("scaler form %s", bd.ScalerForm)
			}
			for i, v := range bd.Vectors {
				if v.NonZeroOmitted != c.wantNonZeroOmitted {
					t.Errorf("vector %d: non-zero plane omitted = %v", i, v.NonZeroOmitted)
				}
			}
			total := 0
			for i, s := range bd.Sections {
				if s.Offset != total {
					t.Fatalf("section %d (%s) at %d, want %d", i, s.Name, s.Offset, total)
				}
				total += s.Size
			}
			if total != len(data) || bd.Size != len(data) {
				t.Fatalf("sections add up to %d, Size %d, bundle has %d bytes", total, bd.Size, len(data))
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
			rnd := rand.New(rand.NewPCG(1, 2))
			s1, s2 := make([]float32, c.classes), make([]float32, c.classes)
			for _, x := range randomInputs(rnd, spec.Scaler, 200) {
				p1, _ := m1.Predict(s1, x)
				p2, _ := m2.Predict(s2, x)
				if p1 != p2 || !reflect.DeepEqual(s1, s2) {
					t.Fatalf("prediction %d %v, after round trip %d %v", p1, s1, p2, s2)
				}
			}
		})
	}
}

func TestEncodeIsDeterministic(t *testing.T) {
	_, priv := testKey(t)
	spec := randomSpec(5, 30, 256, 3, 0.3, false)
	a, b := signed(t, testBundle(spec), priv), signed(t, testBundle(spec), priv)
	if !bytes.Equal(a, b) {
		t.Fatal("two encodings of the same bundle differ")
	}
}

func TestEncodeRejects(t *testing.T) {
	for _, c := range []struct {
		name   string
		modify func(b *Bundle)
		want   string
	}{
		{"no spec", func(b *Bundle) { b.Spec = nil }, "no model spec"},
		{"empty model ID", func(b *Bundle) { b.Header.ModelID = "" }, "model ID: empty"},
		{"long model ID", func(b *Bundle) { b.Header.ModelID = strings.Repeat("m", 65) }, "model ID: 65 bytes"},
		{"control char", func(b *Bundle) { b.Header.ModelID = "a\x1b[31m" }, "control character"},
		{"bad UTF-8", func(b *Bundle) { b.Header.ModelID = "a\xff" }, "UTF-8"},
		{"release 0", func(b *Bundle) { b.Header.Release = 0 }, "release counter is 0"},
		{"no created-at", func(b *Bundle) { b.Header.CreatedAt = time.Time{} }, "created-at"},
		{"expires first", func(b *Bundle) { b.Header.ExpiresAt = testCreated.Add(-time.Hour) }, "before created-at"},
		{"version", func(b *Bundle) { b.Compat.MinAgentVersion = "1.2" }, "major.minor.patch"},
		{"version zeros", func(b *Bundle) { b.Compat.MinAgentVersion = "1.02.3" }, "leading zeros"},
		{"feature count", func(b *Bundle) { b.Compat.Features = []string{"a"} }, "1 feature names for 8"},
		{"features differ", func(b *Bundle) {
			b.Spec.Features = []string{"a", "b", "c", "d", "e", "f", "g", "h"}
			b.Compat.Features = []string{"a", "b", "c", "d", "e", "f", "g", "x"}
		}, "differ"},
		{"duplicate feature", func(b *Bundle) {
			b.Spec.Features = make([]string, b.Spec.Transform.D)
			for i := range b.Spec.Features {
				b.Spec.Features[i] = "f"
			}
		}, "listed twice"},
		{"empty class", func(b *Bundle) { b.Spec.Classes[0] = "" }, "class 0: empty"},
		{"unsnapped scaler", func(b *Bundle) { b.Spec.Scaler.Hi[0] = 1.0001 }, "CompactScaler"},
		{"inverted scaler", func(b *Bundle) { b.Spec.Scaler.Lo[0], b.Spec.Scaler.Hi[0] = 2, 1 }, "range [2, 1]"},
		{"sign tail", func(b *Bundle) {
			k := len(b.Spec.Kept)
			b.Spec.Sign[0][k/64] |= 1 << 63
		}, "sign bits past"},
		{"invalid spec", func(b *Bundle) { b.Spec.Alpha[0] = -1 }, "invalid model"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// 100 kept columns: the last word has a tail.
			spec := randomSpec(9, 8, 100, 3, 0, false)
			b := testBundle(spec)
			c.modify(b)
			_, err := Encode(b)
			if err == nil {
				t.Fatal("Encode accepted it")
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want ErrInvalid mentioning %q", err, c.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	pub, priv := testKey(t)
	spec := randomSpec(11, 16, 256, 3, 0.3, false)
	b := testBundle(spec)
	unsigned, err := Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	good := signed(t, b, priv)
	// handSign signs bytes Sign would refuse to (it parses first).
	handSign := func(data []byte) []byte {
		data = bytes.Clone(data)
		id := KeyID(pub)
		copy(data[len(data)-trailerSize:], id[:])
		copy(data[len(data)-64:], ed25519.Sign(priv, data[:len(data)-64]))
		return data
	}
	trailing := handSign(append(append(bytes.Clone(unsigned[:len(unsigned)-trailerSize]), 0), make([]byte, trailerSize)...))
	badVersion := bytes.Clone(good)
	badVersion[4] = FormatVersion + 1
	version0 := bytes.Clone(good)
	version0[4] = 0
	_, other := otherKey(t, 1)
	byOther := signed(t, b, other)
	expired := testBundle(spec)
	expired.Header.ExpiresAt = testCreated.Add(-time.Second)
	expired.Header.CreatedAt = testCreated.Add(-time.Hour)
	// Sign checks structure only, so an expired bundle can be signed.
	expiredData := signed(t, expired, priv)

	for _, c := range []struct {
		name string
		data []byte
		opt  *DecodeOptions
		want error
	}{
		{"ok", good, trusting(t, pub), nil},
		{"too large", good, &DecodeOptions{MaxSize: len(good) - 1}, ErrTooLarge},
		{"default cap", append(bytes.Clone(good), make([]byte, DefaultMaxSize)...), nil, ErrTooLarge},
		{"bad magic", append([]byte("TRAT"), good[4:]...), trusting(t, pub), ErrBadMagic},
		{"short non-magic", []byte("XY"), nil, ErrBadMagic},
		{"empty", nil, nil, ErrTruncated},
		{"magic only", []byte("TRIT"), nil, ErrTruncated},
		{"version", badVersion, trusting(t, pub), ErrVersion},
		{"version 0", version0, trusting(t, pub), ErrVersion},
		{"short", good[:minSize-1], trusting(t, pub), ErrTruncated},
		{"unsigned", unsigned, trusting(t, pub), ErrUnsigned},
		{"unsigned allowed", unsigned, &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}, nil},
		{"no trusted keys", good, nil, ErrUnknownKey},
		{"unknown key", byOther, trusting(t, pub), ErrUnknownKey},
		{"signed, AllowUnsigned, untrusted", good, &DecodeOptions{AllowUnsigned: true}, ErrUnknownKey},
		{"trailing", trailing, trusting(t, pub), ErrTrailing},
		{"appended", append(bytes.Clone(good), 0), trusting(t, pub), ErrUnknownKey},
		{"expired", expiredData, trusting(t, pub), ErrExpired},
		{"expiry in the future", good, trusting(t, pub), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.data, c.opt)
			if !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
				t.Fatalf("Decode: %v, want %v", err, c.want)
			}
			var fe *FormatError
			if err != nil && !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
		})
	}

	// Expiry is relative to Now: the same bundle is fine before.
	opt := trusting(t, pub)
	opt.Now = func() time.Time { return expired.Header.ExpiresAt }
	if _, err := Decode(expiredData, opt); err != nil {
		t.Fatalf("at its expiry instant: %v", err)
	}
}

// flipBundles are the small bundles the flip and truncation tests break:
// format 1, and format 2 with every kind of section.
func flipBundles(t *testing.T) map[string]*Bundle {
	t.Helper()
	v1 := testBundle(randomSpec(13, 6, 128, 3, 0.3, true))
	v1.Format = 1
	full := testBundle(shapedSpec(14, shape{d: 6, p: 96, classes: 3, thresholds: 4, proj: 3, zeroFrac: 0.3, projZeroFrac: 0.4, clip: true, named: true}))
	full.Info = map[string]string{"read": "header=1", "train.accuracy": "0.93"}
	sensor := testBundle(shapedSpec(15, shape{d: 4, classes: 4, thresholds: 8, zeroFrac: 0.4, clip: true}))
	return map[string]*Bundle{"format 1": v1, "format 2": full, "format 2, p = 0": sensor}
}

// TestByteFlipsFail flips every bit of a small signed format-1 bundle, and
// one bit of every byte of the format-2 ones (TestUnsignedByteFlips flips
// each of their bits, signature aside; one Ed25519 check per flip is slow
// under qemu): each must be refused (never a panic, never success).
func TestByteFlipsFail(t *testing.T) {
	pub, priv := testKey(t)
	opt := trusting(t, pub)
	for name, b := range flipBundles(t) {
		data := signed(t, b, priv)
		for i := range data {
			for bit := range 8 {
				if b.Format != 1 && bit != i%8 {
					continue
				}
				flipped := bytes.Clone(data)
				flipped[i] ^= 1 << bit
				if _, err := Decode(flipped, opt); err == nil {
					t.Fatalf("%s: bundle with byte %d bit %d flipped decoded fine", name, i, bit)
				}
			}
		}
	}
}

// TestUnsignedByteFlips flips every bit of the unsigned format-2 bundles,
// where no signature stops them: the parser must refuse the bytes, or
// decode a model whose self-test fails, or decode exactly the model the
// bytes say — the one whose canonical encoding they are. No flip may
// reach a second encoding of a model.
func TestUnsignedByteFlips(t *testing.T) {
	lax := &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}
	for name, b := range flipBundles(t) {
		if b.Format == 1 {
			continue
		}
		data, err := Encode(b)
		if err != nil {
			t.Fatal(err)
		}
		body := len(data) - trailerSize
		refused, selfTest, other := 0, 0, 0
		for i := range body {
			for bit := range 8 {
				flipped := bytes.Clone(data)
				flipped[i] ^= 1 << bit
				got, err := Decode(flipped, lax)
				if err != nil {
					var fe *FormatError
					if !errors.As(err, &fe) {
						t.Fatalf("%s: byte %d bit %d: untyped error %v", name, i, bit, err)
					}
					refused++
					continue
				}
				m, err := inference.New(got.Spec)
				if err != nil {
					t.Fatalf("%s: byte %d bit %d: decodes but does not build: %v", name, i, bit, err)
				}
				if SelfTest(m, got) != nil {
					selfTest++
					continue
				}
				again, err := Encode(got)
				if err != nil {
					t.Fatalf("%s: byte %d bit %d: decodes but does not encode: %v", name, i, bit, err)
				}
				if !bytes.Equal(again, flipped) {
					t.Fatalf("%s: byte %d bit %d: decodes, passes the self-test, but is not canonical", name, i, bit)
				}
				other++
			}
		}
		t.Logf("%s: %d flips refused, %d fail the self-test, %d are other valid bundles (labels, times, α…)", name, refused, selfTest, other)
	}
}

func TestTruncationFails(t *testing.T) {
	pub, priv := testKey(t)
	opt := trusting(t, pub)
	lax := &DecodeOptions{AllowUnsigned: true, Now: opt.Now}
	for name, b := range flipBundles(t) {
		data := signed(t, b, priv)
		unsigned, err := Encode(b)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(data) {
			if _, err := Decode(data[:n], opt); err == nil {
				t.Fatalf("%s: signed bundle truncated to %d bytes decoded fine", name, n)
			}
		}
		// Unsigned, with the trailer kept: the parser itself must notice.
		body := unsigned[:len(unsigned)-trailerSize]
		for n := preambleSize; n < len(body); n++ {
			cut := append(bytes.Clone(body[:n]), make([]byte, trailerSize)...)
			_, err := Decode(cut, lax)
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("%s: unsigned body cut to %d bytes: %v, want ErrTruncated or ErrInvalid", name, n, err)
			}
		}
	}
}

// TestHostileCounts checks that huge counts fail on the bytes left, before
// anything is allocated for them.
func TestHostileCounts(t *testing.T) {
	header := func() []byte {
		out := append([]byte(Magic), FormatVersion)
		out = appendString(out, "m")
		out = binary.LittleEndian.AppendUint64(out, 1)
		out = binary.LittleEndian.AppendUint64(out, 1)
		return binary.LittleEndian.AppendUint64(out, 0)
	}
	lax := &DecodeOptions{AllowUnsigned: true}
	for _, c := range []struct {
		name string
		body []byte
		want error
	}{
		{"feature count", binary.AppendUvarint(header(), 60000), ErrTruncated},
		{"feature count over MaxD", binary.AppendUvarint(header(), 1<<40), ErrInvalid},
		{"names", binary.AppendUvarint(binary.AppendUvarint(header(), 1), 1), ErrTruncated},
		{"string length", append(append([]byte(Magic), FormatVersion), 0xff, 0xff, 0xff, 0xff, 0x0f), ErrInvalid},
		{"overlong varint", append(append([]byte(Magic), FormatVersion), 0x81, 0x00), ErrInvalid},
		{"varint overflow", append(append([]byte(Magic), FormatVersion), bytes.Repeat([]byte{0xff}, 11)...), ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := append(c.body, make([]byte, trailerSize)...)
			_, err := Decode(data, lax)
			if !errors.Is(err, c.want) {
				t.Fatalf("Decode: %v, want %v", err, c.want)
			}
		})
	}
}

func TestCheckAgent(t *testing.T) {
	c := Compat{MinAgentVersion: "1.4.2"}
	for v, want := range map[string]error{
		"1.4.2": nil, "1.4.10": nil, "1.10.0": nil, "2.0.0": nil,
		"1.4.1": ErrAgentTooOld, "1.3.99": ErrAgentTooOld, "0.9.9": ErrAgentTooOld,
		"1.4": ErrInvalid, "v1.4.2": ErrInvalid, "1.04.2": ErrInvalid, "": ErrInvalid,
	} {
		if err := c.CheckAgent(v); !errors.Is(err, want) || (err == nil) != (want == nil) {
			t.Errorf("CheckAgent(%q) = %v, want %v", v, err, want)
		}
	}
}
