package data

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func sample() *Dataset {
	return &Dataset{
		Name:     "s",
		X:        []float32{0, 1, 2, 3, 4, 5, 6, 7},
		N:        4,
		D:        2,
		Y:        []int32{0, 1, 2, 1},
		Classes:  []string{"1", "2", "3"},
		Features: []string{"f1", "f2"},
	}
}

func TestRow(t *testing.T) {
	d := sample()
	r := d.Row(2)
	if !slices.Equal(r, []float32{4, 5}) || cap(r) != 2 {
		t.Fatalf("Row(2) = %v cap %d", r, cap(r))
	}
	_ = append(r, 99) // must not clobber row 3
	if d.X[6] != 6 {
		t.Fatal("append to a row overwrote the next row")
	}
}

func TestRelabel(t *testing.T) {
	d := sample()
	if err := d.Relabel([]string{"3", "9", "2", "1"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"1", "2", "3", "2"}; !slices.Equal(labelsOf(d), want) {
		t.Fatalf("labels %q, want %q", labelsOf(d), want)
	}
	if want := []int32{3, 2, 0, 2}; !slices.Equal(d.Y, want) {
		t.Fatalf("Y %v, want %v", d.Y, want)
	}

	d = sample()
	err := d.Relabel([]string{"1", "2"})
	if !errors.Is(err, ErrUnknownLabel) || !strings.Contains(err.Error(), `"3"`) {
		t.Fatalf("got %v, want ErrUnknownLabel naming \"3\"", err)
	}
	if !slices.Equal(d.Y, sample().Y) || !slices.Equal(d.Classes, sample().Classes) {
		t.Fatal("failed Relabel changed the dataset")
	}
	// A class no row uses may be dropped.
	d = sample()
	d.Classes = append(d.Classes, "unused")
	if err := d.Relabel([]string{"3", "2", "1"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Relabel([]string{"1", "1", "2", "3"}); !errors.Is(err, ErrOptions) {
		t.Fatalf("duplicate classes: got %v", err)
	}
}

func TestSubset(t *testing.T) {
	d := sample()
	s := d.Subset([]int{3, 0, 3})
	checkDataset(t, s)
	if !slices.Equal(s.X, []float32{6, 7, 0, 1, 6, 7}) || !slices.Equal(s.Y, []int32{1, 0, 1}) || s.N != 3 {
		t.Fatalf("got %v %v", s.X, s.Y)
	}
	s.X[0], s.Classes[0], s.Features[0] = -1, "x", "x"
	if d.X[6] != 6 || d.Classes[0] != "1" || d.Features[0] != "f1" {
		t.Fatal("Subset shares memory with its source")
	}
	if e := d.Subset(nil); e.N != 0 || len(e.X) != 0 {
		t.Fatal("empty subset")
	}
}

func TestOneVsRest(t *testing.T) {
	d := sample()
	b, err := d.OneVsRest("2.0") // canonicalised to "2"
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, b)
	if !slices.Equal(b.Classes, []string{"rest", "2"}) || !slices.Equal(b.Y, []int32{0, 1, 0, 1}) {
		t.Fatalf("classes %q Y %v", b.Classes, b.Y)
	}
	b.X[0] = 42
	if d.X[0] != 0 || !slices.Equal(d.Y, sample().Y) {
		t.Fatal("OneVsRest changed its source")
	}
	if _, err := d.OneVsRest("7"); !errors.Is(err, ErrUnknownLabel) || !strings.Contains(err.Error(), `"7"`) {
		t.Fatalf("got %v", err)
	}
	d.Classes[0] = "rest"
	if b, err := d.OneVsRest("rest"); err != nil || b.Classes[0] == b.Classes[1] {
		t.Fatalf("positive class named rest: %v %v", b, err)
	}
}

func TestPad(t *testing.T) {
	d := sample()
	d.pad(3)
	checkDataset(t, d)
	if !slices.Equal(d.X, []float32{0, 1, 0, 2, 3, 0, 4, 5, 0, 6, 7, 0}) {
		t.Fatalf("padded X %v", d.X)
	}
}
