package data

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// idxImages encodes n images of rows×cols pixels; pixel k of the file is
// byte(k*7).
func idxImages(n, rows, cols int) []byte {
	b := binary.BigEndian.AppendUint32(nil, idxImagesMagic)
	for _, v := range []int{n, rows, cols} {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	for k := range n * rows * cols {
		b = append(b, byte(k*7))
	}
	return b
}

func idxLabels(labels ...byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, idxLabelsMagic)
	b = binary.BigEndian.AppendUint32(b, uint32(len(labels)))
	return append(b, labels...)
}

// writeIDX writes an images/labels pair with MNIST-style names into a
// temporary directory and returns the images path.
func writeIDX(t *testing.T, images, labels []byte, gz bool) string {
	t.Helper()
	dir := t.TempDir()
	ip := filepath.Join(dir, "train-images-idx3-ubyte")
	lp := filepath.Join(dir, "train-labels-idx1-ubyte")
	if gz {
		images, labels = gzipBytes(t, images), gzipBytes(t, labels)
		ip, lp = ip+".approx.gz", lp+".gz"
	}
	if err := os.WriteFile(ip, images, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lp, labels, 0o644); err != nil {
		t.Fatal(err)
	}
	return ip
}

func TestIDXLabelsPath(t *testing.T) {
	for in, want := range map[string]string{
		"d/train-images-idx3-ubyte.approx.gz": "d/train-labels-idx1-ubyte.gz",
		"t10k-images-idx3-ubyte.gz":           "t10k-labels-idx1-ubyte.gz",
		"/x/t10k-images-idx3-ubyte":           "/x/t10k-labels-idx1-ubyte",
	} {
		if got := IDXLabelsPath(in); got != want {
			t.Errorf("IDXLabelsPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIDX(t *testing.T) {
	for _, gz := range []bool{false, true} {
		p := writeIDX(t, idxImages(3, 2, 2), idxLabels(7, 1, 7), gz)
		d, err := Load(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkDataset(t, d)
		want := make([]float32, 12)
		for k := range want {
			want[k] = float32(byte(k * 7))
		}
		if d.N != 3 || d.D != 4 || !slices.Equal(d.X, want) {
			t.Fatalf("got %d×%d %v, want 3×4 %v", d.N, d.D, d.X, want)
		}
		if !slices.Equal(d.Classes, []string{"1", "7"}) || !slices.Equal(labelsOf(d), []string{"7", "1", "7"}) {
			t.Fatalf("classes %q labels %q", d.Classes, labelsOf(d))
		}
		d, err = Load(p, &Options{MaxRows: 2})
		if err != nil || d.N != 2 || !slices.Equal(d.X, want[:8]) {
			t.Fatalf("MaxRows: %v %v", d, err)
		}
	}
}

func TestIDXExplicitLabels(t *testing.T) {
	p := writeIDX(t, idxImages(2, 1, 1), idxLabels(1, 2), false)
	other := filepath.Join(t.TempDir(), "lbl")
	if err := os.WriteFile(other, idxLabels(3, 4), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Load(p, &Options{Labels: other})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Classes, []string{"3", "4"}) {
		t.Fatalf("classes %q", d.Classes)
	}
	// IDX by magic, without an IDX-style name.
	img := filepath.Join(t.TempDir(), "images")
	if err := os.WriteFile(img, gzipBytes(t, idxImages(2, 1, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(img, &Options{Labels: other}); err != nil {
		t.Fatal(err)
	}
}

func TestIDXMalformed(t *testing.T) {
	good := idxImages(3, 2, 2)
	huge := slices.Clone(good)
	binary.BigEndian.PutUint32(huge[4:], 1<<31) // n
	binary.BigEndian.PutUint32(huge[8:], 1<<12)
	binary.BigEndian.PutUint32(huge[12:], 1<<12)
	bigN := slices.Clone(good)
	binary.BigEndian.PutUint32(bigN[4:], 1000000) // 4M values: under the cap, over the data
	zero := slices.Clone(good)
	binary.BigEndian.PutUint32(zero[8:], 0)
	badMagic := slices.Clone(good)
	badMagic[3] = 0x02
	lbls := idxLabels(1, 2, 3)
	tests := []struct {
		name           string
		images, labels []byte
		gz             bool
		file           string // which file the error names: "images" or "labels"
		msg            string
	}{
		{"huge header", huge, lbls, false, "images", "dataset too large"},
		{"huge header gz", huge, lbls, true, "images", "dataset too large"},
		{"count beyond file size", bigN, lbls, false, "images", "header says 1000000 images"},
		{"count beyond data gz", bigN, idxLabels(make([]byte, 1000000)...), true, "images", "image 4 of 1000000: unexpected EOF"},
		{"zero size", zero, lbls, false, "images", "image size 0×2"},
		{"bad magic", badMagic, lbls, false, "images", "magic 0x00000802, want 0x00000803"},
		{"labels as images", lbls, lbls, false, "images", "an IDX labels file"},
		{"short header", good[:10], lbls, false, "images", "header: unexpected EOF"},
		{"short header gz", good[:10], lbls, true, "images", "header: unexpected EOF"},
		{"truncated gz", good[:len(good)-1], lbls, true, "images", "image 3 of 3: unexpected EOF"},
		{"trailing data gz", append(slices.Clone(good), 9), lbls, true, "images", "trailing data"},
		{"label count", good, idxLabels(1, 2), false, "labels", "2 labels for 3 images"},
		{"labels truncated gz", good, lbls[:len(lbls)-1], true, "labels", "label 3 of 3: unexpected EOF"},
		{"labels bad magic", good, good, false, "labels", "magic 0x00000803, want 0x00000801"},
		{"labels trailing gz", good, append(slices.Clone(lbls), 0), true, "labels", "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeIDX(t, tt.images, tt.labels, tt.gz)
			name := filepath.Base(p)
			if tt.file == "labels" {
				name = filepath.Base(IDXLabelsPath(p))
			}
			_, err := Load(p, nil)
			wantParseError(t, err, name, 0, tt.msg)
			if tt.msg == "dataset too large" && !errors.Is(err, ErrTooLarge) {
				t.Errorf("want ErrTooLarge, got %v", err)
			}
		})
	}
}

func TestIDXMissingLabels(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x-images-idx3-ubyte")
	if err := os.WriteFile(p, idxImages(1, 1, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want a missing labels file", err)
	}
}
