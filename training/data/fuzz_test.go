package data

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// Fuzz targets: parsing arbitrary bytes must never panic, and whatever
// parses must satisfy the Dataset invariants. maxValues is lowered so that
// a fuzzed header or index cannot make a worker allocate gigabytes, and
// LIBSVM's free dense size so that inputs reach its bound on sparse
// files; the buffers and the sniff window are shrunk for speed (and to
// exercise lines longer than a buffer or the window), and the line limit
// lowered so that inputs reach it.

func fuzzSetup(f *testing.F) {
	mv, bs, ss, ml, df := maxValues, bufSize, sniffSize, maxLine, libsvmDenseFree
	maxValues, bufSize, sniffSize, maxLine, libsvmDenseFree = 1<<20, 64, 64, 1<<10, 1<<10
	f.Cleanup(func() { maxValues, bufSize, sniffSize, maxLine, libsvmDenseFree = mv, bs, ss, ml, df })
}

// wideSeeds are inputs whose lines are longer than the fuzz tests' sniff
// window or than their line limit.
func wideSeeds() []string {
	return []string{
		string(wideText(30, 2, ",")), string(wideText(30, 2, "\t")), string(wideText(30, 1, " ")),
		"\n# c\n" + string(wideText(20, 2, ";")),
		string(wideText(200, 2, ",")), // over the 1 KiB line limit
	}
}

func FuzzLIBSVM(f *testing.F) {
	fuzzSetup(f)
	small, _ := os.ReadFile("testdata/small.svm")
	bz2, _ := os.ReadFile("testdata/small.svm.bz2")
	for _, s := range [][]byte{
		small, bz2, gzipBytes(f, small), xzBytes(f, small),
		[]byte("+1 1:0.5 3:-2 # c\n-1 qid:2 2:1e3\n\n1\n"),
		[]byte("1 0:1\n"), []byte("1 2:1 1:1\n"), []byte("1 1:nan\n"), []byte("a 9999999:1\n"),
		[]byte("1 268435455:1\n"), []byte("1 1:1\n2 2000:1\n"), // far wider than the file holds
		genText(2, 30, true), genText(2, 200, true), // longer than the window, than the line limit
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
	for _, s := range wideSeeds() {
		f.Add([]byte(s), 0, rune(0))
	}
	f.Add(gzipBytes(f, []byte("1 2 3\n")), -1, ',')
	f.Fuzz(func(t *testing.T, in []byte, labelCol int, sep rune) {
		opt := &Options{Format: FormatDense, LabelColumn: Column{Index: labelCol % 4}, Delimiter: sep}
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

// FuzzCSV reads arbitrary text with header, delimiter, label, time and
// ignored-column options, and checks that whatever reads is read again,
// identically, by its ReadSpec after a round trip through its text form.
func FuzzCSV(f *testing.F) {
	fuzzSetup(f)
	for _, s := range []string{
		loggerCSV(20, ';'),
		"Date,Time,a,b,label\n2017/12/22,10:49:41,1,2,x\n2017/12/22,10:50:11,3,4,y\n",
		"time,a,class\n2020-01-01T00:00:00Z,1,a\n2020-01-01T00:00:01+01:00,2,b\n",
		"\ufeff\"a b\",\"c,d\",y\n1,\"2\",p\n3,4,\"q\"\"r\"\n",
		"t\tx\ty\n1.5\t2\t0\n1.5\t3\t1\n",
		",a,b\n0,1,2\n1,3,4\n",
		"a,a,y\n1,2,3\n",
		"ts;v;lab\n2019-03-31 02:30:00;1;a\n2019-03-31 01:30:00;2;b\n",
		"1/1/1998,?,2.5,NA,0.\n1/2/1998,1,,nan,1.\n", // missing values, as in UCI's ozone data
		euCSV, "1;2;a\n3;4,5;b\n5;1.234,5;a\n", // decimal commas
	} {
		f.Add([]byte(s), uint8(0), uint8(0), "", "", "")
	}
	for _, s := range wideSeeds() {
		f.Add([]byte(s), uint8(0), uint8(0), "", "", "")
	}
	for _, s := range rowNameSeeds() { // R's and pandas' row names and index columns
		f.Add([]byte(s), uint8(0), uint8(0), "", "", "")
	}
	f.Add([]byte(occupancyR), uint8(1), uint8(1), "Occupancy", "date", "1")
	f.Add([]byte("1,2,3\n4,5,6\n"), uint8(2), uint8(1), "1", "", "2")
	f.Add([]byte("x;y;z\n1;2;a\n"), uint8(1), uint8(2), "z", "x", "")
	f.Add([]byte("a;lab\n1.5;2,5\n2.5;3\n"), uint8(0), uint8(6), "", "", "") // a point asked for, a comma number in the label
	f.Add([]byte("a,b,lab\n\"1,5\",2,x\n\"2,5\",3,y\n"), uint8(0), uint8(12), "", "", "")
	f.Fuzz(func(t *testing.T, in []byte, header, delim uint8, label, times, ignore string) {
		opt := &Options{Format: FormatCSV, Header: Header(header % 3), Delimiter: []rune{0, ',', ';', '\t', ' ', '|'}[delim%6], Decimal: []rune{0, '.', ','}[delim/6%3]}
		if label != "" {
			opt.LabelColumn, _ = ParseColumn(label)
		}
		for _, s := range strings.Split(times, ",") {
			if c, err := ParseColumn(s); err == nil {
				opt.TimeColumns = append(opt.TimeColumns, c)
			}
		}
		for _, s := range strings.Split(ignore, ",") {
			if c, err := ParseColumn(s); err == nil {
				opt.Ignore = append(opt.Ignore, c)
			}
		}
		if opt.check() != nil {
			return
		}
		d, err := Read(bytes.NewReader(in), "fuzz", opt)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) && !errors.Is(err, ErrOptions) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			return
		}
		checkDataset(t, d)
		text := d.Spec.String()
		spec, err := ParseReadSpec(text)
		if err != nil {
			t.Fatalf("spec %q does not parse: %v", text, err)
		}
		again, err := Read(bytes.NewReader(in), "fuzz", spec.Options())
		if err != nil {
			t.Fatalf("read with its own spec %q: %v", text, err)
		}
		if diff := sameData(d, again); diff != "" {
			t.Fatalf("read with its own spec %q: %s", text, diff)
		}
	})
}

func FuzzARFF(f *testing.F) {
	fuzzSetup(f)
	f.Add([]byte(eegARFF(10)))
	f.Add([]byte("@relation r\n@attribute 'a b' real\n@attribute c {x,'y z'}\n@data\n1,x\n% c\n2,'y z'\n"))
	f.Add([]byte("@RELATION r\n@ATTRIBUTE when DATE\n@ATTRIBUTE v NUMERIC\n@ATTRIBUTE c STRING\n@DATA\n2001-01-01T00:00:00,1,a\n"))
	f.Add([]byte("@relation r\n@attribute a numeric\n@attribute c {0,1}\n@data\n{0 1, 1 0}\n"))
	f.Add([]byte("@relation r\n@attribute a numeric\n@attribute c {0,1}\n@data\n" + strings.Repeat("1", 2000) + ",0\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := Read(bytes.NewReader(in), "fuzz.arff", &Options{Format: FormatARFF})
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			return
		}
		checkDataset(t, d)
		spec, err := ParseReadSpec(d.Spec.String())
		if err != nil {
			t.Fatalf("spec %q does not parse: %v", d.Spec, err)
		}
		again, err := Read(bytes.NewReader(in), "fuzz.arff", spec.Options())
		if err != nil {
			t.Fatalf("read with its own spec %q: %v", d.Spec, err)
		}
		if diff := sameData(d, again); diff != "" {
			t.Fatalf("read with its own spec %q: %s", d.Spec, diff)
		}
	})
}

// FuzzParseReadSpec checks that a spec that parses prints in canonical
// form: parsing that form gives the same spec and the same text.
func FuzzParseReadSpec(f *testing.F) {
	for _, s := range []string{
		`format=csv delimiter=';' header=yes label="Room_Occupancy_Count" time="Date","Time" features="S1_Temp","S2 \"x\"" d=2`,
		`format=csv delimiter=' ' label=1 d=256`,
		`format=csv delimiter='\t' label=last time=3 time-features=yes ignore=2,"id" d=4`,
		`format=arff label="eyeDetection" features="AF3" d=1`,
		`format=libsvm d=123`, `format=idx d=784`, `format=dense`, `format=csv d=0`, `d=1 format=csv`,
		`format=csv label=""`, `format=csv features="a","a" d=2`, `format=csv delimiter='"'`,
		`format=csv delimiter=';' decimal=',' header=yes d=1`, `format=csv decimal='.'`, `format=csv decimal=';'`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseReadSpec(text)
		if err != nil {
			if !errors.Is(err, ErrReadSpec) {
				t.Fatalf("error %v does not wrap ErrReadSpec", err)
			}
			return
		}
		canon := s.String()
		s2, err := ParseReadSpec(canon)
		if err != nil {
			t.Fatalf("%q parsed, but its canonical form %q does not: %v", text, canon, err)
		}
		if !reflect.DeepEqual(s, s2) || s2.String() != canon {
			t.Fatalf("%q: %+v, then %q gives %+v", text, s, canon, s2)
		}
		if err := s.Options().check(); err != nil {
			t.Fatalf("%q: options %v", text, err)
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
