package bundle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
)

// allocBound is the most Decode may allocate for an input of n bytes: every
// allocation is justified by bytes of input (the worst is the all-columns
// kept form: a 4-byte column index for each bit of a weight plane, 32 bytes
// a byte), plus a constant.
func allocBound(n int) uint64 { return uint64(40*n + 64<<10) }

// decodeAllocs decodes data and returns what Decode allocated, in bytes.
func decodeAllocs(data []byte, opt *DecodeOptions) (*Bundle, uint64, error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, err := Decode(data, opt)
	runtime.ReadMemStats(&after)
	return b, after.TotalAlloc - before.TotalAlloc, err
}

// TestDecodeAllocClassCount pins the fuzzer's find: a class count is read
// before any class, and Decode used to size the class list, its duplicate
// check and the per-vector slices by it when the rest of the bundle held
// only 2 bytes per class — 130 bytes allocated per 2 bytes of input,
// before the first bad label ended the parse. Each count here is followed
// by one good label, one too long, and just enough padding to pass the
// count's size check as it was, and as it is.
func TestDecodeAllocClassCount(t *testing.T) {
	valid, err := Encode(testBundle(tinySpec(t)))
	if err != nil {
		t.Fatal(err)
	}
	bd, err := Inspect(valid)
	if err != nil {
		t.Fatal(err)
	}
	at := -1
	for _, s := range bd.Sections {
		if s.Name == "classes" {
			at = s.Offset
		}
	}
	if at < 0 {
		t.Fatal("no classes section")
	}
	opt := &DecodeOptions{AllowUnsigned: true, MaxSize: 1 << 20, Now: func() time.Time { return testCreated }}
	for _, n := range []int{3, 100, 900, 1800, 3600, MaxClasses} {
		for _, perClass := range []int{2, minClassBytes} {
			data := binary.AppendUvarint(bytes.Clone(valid[:at]), uint64(n))
			data = append(data, 1, 'a', MaxLabel+1)
			data = append(data, make([]byte, n*perClass+trailerSize)...)
			_, allocs, err := decodeAllocs(data, opt)
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("%d classes: %v, want ErrInvalid or ErrTruncated", n, err)
			}
			if allocs > allocBound(len(data)) {
				t.Errorf("%d classes, %d bytes each: Decode of %d bytes allocated %d bytes, bound %d", n, perClass, len(data), allocs, allocBound(len(data)))
			}
		}
	}
}

var sentinels = []error{ErrTooLarge, ErrBadMagic, ErrVersion, ErrTruncated, ErrSignature,
	ErrUnknownKey, ErrUnsigned, ErrExpired, ErrInvalid, ErrTrailing}

// FuzzDecode feeds Decode (and Inspect) arbitrary bytes. It must never
// panic, never allocate more than allocBound, fail only with a
// *FormatError wrapping a sentinel, succeed only within the size cap, and
// whatever decodes must re-encode to the same model, in the same format —
// and from format 2 on, where every model has one encoding per format, to
// the same bytes whenever the bundle's self-test holds. The parser is
// reached through unsigned bundles (AllowUnsigned); the seed corpus is the
// golden bundles of every format, signed and unsigned, mutations of them,
// and the format-2, format-3 and format-4 fixtures.
func FuzzDecode(f *testing.F) {
	pub, _ := testKey(f)
	var goldens []string
	for _, c := range goldenCases {
		goldens = append(goldens, c.name)
	}
	for _, c := range goldenV2Cases {
		goldens = append(goldens, c.name)
	}
	for _, c := range goldenV5Cases {
		goldens = append(goldens, c.name)
	}
	for _, name := range goldens {
		data, err := os.ReadFile(goldenPath(name + ".trit"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		unsigned := bytes.Clone(data)
		clear(unsigned[len(unsigned)-trailerSize:])
		f.Add(unsigned)
		f.Add(append(bytes.Clone(unsigned[:len(unsigned)/2]), make([]byte, trailerSize)...))
		flipped := bytes.Clone(unsigned)
		flipped[len(flipped)/3] ^= 0x10
		f.Add(flipped)
		f.Add(append(bytes.Clone(unsigned[:len(unsigned)-trailerSize]), append([]byte{0}, make([]byte, trailerSize)...)...))
	}
	small, err := Encode(testBundle(randomSpec(41, 5, 96, 3, 0.5, true)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(small)
	sparse, err := Encode(testBundle(randomSpec(43, 3, 1000, 2, 0.98, false)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sparse)
	for _, data := range tinyBundles(f) {
		f.Add(data)
	}
	projected, err := Encode(testBundle(shapedSpec(44, shape{d: 9, p: 64, classes: 3, thresholds: 3, proj: 4, zeroFrac: 0.3, projZeroFrac: 0.3, clip: true, named: true})))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(projected)
	f.Add(encodeTiny(f, tinyTreeSpec(f)))
	f.Add(encodeTiny(f, tinyTreeThresholdSpec(f)))
	f.Add(encodeTiny(f, shapedSpec(45, shape{d: 300, p: 32, classes: 3, trees: 3, depth: 2, rho: 3, zeroFrac: 0.5})))
	// Format 4: leaf planes, with ρ after the planes byte and without.
	planes := encodeTiny(f, tinyPlanesSpec(f))
	f.Add(planes)
	f.Add(encodeTiny(f, tinyPlanesThresholdSpec(f)))
	f.Add(encodeTiny(f, shapedSpec(46, shape{d: 300, p: 32, classes: 3, trees: 3, depth: 2, planes: 3, rho: 3, zeroFrac: 0.5})))
	f.Add(encodeTiny(f, shapedSpec(47, shape{d: 4, classes: 2, thresholds: 2, trees: 5, depth: 2, planes: 4, rho: 2, zeroFrac: 0.4, clip: true})))
	for _, p := range []byte{0, 1, 5} { // refused planes bytes, one mutation away from valid
		bad := replaceSection(f, planes, "trees", unhex(f, "02 02 02 03 00 00b8 01 0034 01 0000 01 0038"))
		bad[bytes.Index(bad, unhex(f, "02 02 02 03 00 00b8"))+2] = p
		f.Add(bad)
	}

	// Format 5: calibrated, with no trees, one-plane trees and planes.
	f.Add(encodeTiny(f, calibrated(tinySpec(f))))
	f.Add(encodeTiny(f, calibrated(tinyTreeSpec(f))))
	f.Add(encodeTiny(f, calibrated(tinyPlanesSpec(f))))

	ks, err := NewKeySet(pub)
	if err != nil {
		f.Fatal(err)
	}
	opt := &DecodeOptions{Trusted: ks, AllowUnsigned: true, Now: func() time.Time { return testCreated }}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, n, err := decodeAllocs(data, opt)
		if n > allocBound(len(data)) {
			t.Fatalf("Decode of %d bytes allocated %d bytes", len(data), n)
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("untyped error %v", err)
			}
			found := 0
			for _, s := range sentinels {
				if errors.Is(err, s) {
					found++
				}
			}
			if found != 1 {
				t.Fatalf("error %v wraps %d sentinels, want 1", err, found)
			}
			Inspect(data) // must not panic either
			return
		}
		if len(data) > DefaultMaxSize {
			t.Fatalf("accepted %d bytes over the %d cap", len(data), DefaultMaxSize)
		}
		if _, err := Inspect(data); err != nil {
			t.Fatalf("Decode accepts what Inspect refuses: %v", err)
		}
		if b.Spec.Transform.P > 1<<13 {
			return // generating a large transform would slow fuzzing down
		}
		raw, err := Encode(b)
		if err != nil {
			t.Fatalf("Decode accepts what Encode refuses: %v", err)
		}
		b2, err := Decode(raw, opt)
		if err != nil {
			t.Fatalf("re-encoded bundle does not decode: %v", err)
		}
		if !reflect.DeepEqual(b.Spec, b2.Spec) || !reflect.DeepEqual(b.Header, b2.Header) || !reflect.DeepEqual(b.Compat, b2.Compat) ||
			!reflect.DeepEqual(b.Info, b2.Info) || b.Format != b2.Format || int(data[4]) != b.Format {
			t.Fatal("re-encoded bundle decodes to a different model")
		}
		if b.Format < 2 {
			return
		}
		m, err := inference.New(b.Spec)
		if err != nil {
			t.Fatalf("decoded model does not build: %v", err)
		}
		if SelfTest(m, b) == nil && !bytes.Equal(raw[:len(raw)-trailerSize], data[:len(data)-trailerSize]) {
			t.Fatalf("a format-%d model with two encodings", b.Format)
		}
	})
}
