package data

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"testing"
)

// Fuzz targets: parsing arbitrary bytes must never panic, and whatever
// parses must satisfy the Dataset invariants. maxValues is lowered so that
// a fuzzed header or index cannot make a worker allocate gigabytes, and the
// buffers shrunk for speed (and to exercise lines longer than a buffer).

func fuzzSetup(f *testing.F) {
	mv, bs := maxValues, bufSize
	maxValues, bufSize = 1<<20, 64
	f.Cleanup(func() { maxValues, bufSize = mv, bs })
}

func FuzzLIBSVM(f *testing.F) {
	fuzzSetup(f)
	small, _ := os.ReadFile("testdata/small.svm")
	bz2, _ := os.ReadFile("testdata/small.svm.bz2")
	for _, s := range [][]byte{
		small, bz2, gzipBytes(f, small), xzBytes(f, small),
		[]byte("+1 1:0.5 3:-2 # c\n-1 qid:2 2:1e3\n\n1\n"),
		[]byte("1 0:1\n"), []byte("1 2:1 1:1\n"), []byte("1 1:nan\n"), []byte("a 9999999:1\n"),
	} {
		f.Add(s, 0, 0)
	}
	f.Fuzz(func(t *testing.T, in []byte, numFeatures, maxRows int) {
		opt := &Options{Format: FormatLIBSVM, NumFeatures: numFeatures % 50, MaxRows: maxRows % 10}
		if opt.check() != nil {
			opt = &Options{Format: FormatLIBSVM}
		}
		d, err := Read(bytes.NewReader(in), "fuzz", opt)
		if err != nil {
			return
		}
		checkDataset(t, d)
		if opt.NumFeatures > 0 && d.D != opt.NumFeatures {
			t.Fatalf("D=%d with NumFeatures %d", d.D, opt.NumFeatures)
		}
	})
}

func FuzzDense(f *testing.F) {
	fuzzSetup(f)
	for _, s := range []string{
		"6.0000 -1 0.5 1\n9 1 -0.25 0.125\n",
		"2596,51,3,5\n1859,-173,0,2\n",
		"1 2\n1 2 3\n", "x;1;2\n", "1 nan\n", "# c\n\n1\t2\r\n",
	} {
		f.Add([]byte(s), 0, rune(0))
	}
	f.Add(gzipBytes(f, []byte("1 2 3\n")), -1, ',')
	f.Fuzz(func(t *testing.T, in []byte, labelCol int, sep rune) {
		opt := &Options{Format: FormatDense, LabelColumn: labelCol % 4, Separator: sep}
		if opt.check() != nil {
			opt = &Options{Format: FormatDense}
		}
		if d, err := Read(bytes.NewReader(in), "fuzz", opt); err == nil {
			checkDataset(t, d)
			if d.D < 1 {
				t.Fatalf("dense dataset with D=%d", d.D)
			}
		}
		// Auto-detection on the same input must not panic either.
		opt.Format = FormatAuto
		if d, err := Read(bytes.NewReader(in), "fuzz", opt); err == nil {
			checkDataset(t, d)
		}
	})
}

func FuzzIDX(f *testing.F) {
	fuzzSetup(f)
	f.Add(idxImages(3, 2, 2), idxLabels(1, 2, 3), false, 0)
	f.Add(gzipBytes(f, idxImages(2, 1, 3)), gzipBytes(f, idxLabels(0, 9)), true, 1)
	f.Add(idxImages(1, 1, 1)[:10], idxLabels(1), false, 0)
	f.Fuzz(func(t *testing.T, images, labels []byte, sizeKnown bool, maxRows int) {
		src := func(b []byte, name string) (*source, error) {
			r, stop, err := decompress(bufio.NewReader(bytes.NewReader(b)), name)
			if err != nil {
				return nil, err
			}
			s := &source{r: r, name: name, size: -1, stored: int64(len(b)), close: stop}
			if sizeKnown {
				s.size = int64(len(b)) // may lie for compressed input: must still be safe
			}
			return s, nil
		}
		img, err := src(images, "images")
		if err != nil {
			return
		}
		defer img.close()
		lbl, err := src(labels, "labels")
		if err != nil {
			return
		}
		defer lbl.close()
		d, err := readIDX(img, lbl, &Options{MaxRows: maxRows & 7})
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			return
		}
		checkDataset(t, d)
	})
}
