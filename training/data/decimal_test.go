package data

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// euCSV is what a spreadsheet set to a German or French locale saves:
// ';' between the columns and a decimal comma.
const euCSV = "temp;hum;light;label\n" +
	"14,03;70,85;381,9;cold\n" +
	"22,5;41,2;12;warm\n" +
	"-0,75;90;0,5;cold\n"

// TestDecimalComma: a ';' file with decimal commas reads as the numbers it
// holds, with or without a header, with --header yes, and with a white
// space delimiter; the read spec records the comma, so the next file
// reads the same way; a comma-separated file's decimal commas are read
// only when asked for.
func TestDecimalComma(t *testing.T) {
	want := [][]float32{{14.03, 70.85, 381.9}, {22.5, 41.2, 12}, {-0.75, 90, 0.5}}
	check := func(t *testing.T, d *Dataset, header bool) {
		t.Helper()
		if d.N != 3 || d.D != 3 {
			t.Fatalf("%d rows × %d features, want 3 × 3", d.N, d.D)
		}
		for i, w := range want {
			if !slices.Equal(d.Row(i), w) {
				t.Errorf("row %d = %v, want %v", i, d.Row(i), w)
			}
		}
		if !slices.Equal(labelsOf(d), []string{"cold", "warm", "cold"}) {
			t.Errorf("labels %q", labelsOf(d))
		}
		if d.Spec.Decimal != ',' || d.Spec.Header != header {
			t.Errorf("spec %+v: want decimal ',' and header %v", d.Spec, header)
		}
		if !strings.Contains(d.Spec.Describe(), "decimal comma") {
			t.Errorf("Describe() = %q does not say decimal comma", d.Spec.Describe())
		}
	}
	for _, c := range []struct {
		name, text string
		o          *Options
		header     bool
	}{
		{"detected", euCSV, nil, true},
		{"header yes", euCSV, &Options{Header: HeaderYes}, true},
		{"no header", strings.SplitN(euCSV, "\n", 2)[1], nil, false},
		{"given", euCSV, &Options{Decimal: ','}, true},
		{"tab", strings.ReplaceAll(euCSV, ";", "\t"), nil, true},
		{"white space", strings.ReplaceAll(euCSV, ";", "  "), nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := readString(c.text, c.o)
			if err != nil {
				t.Fatal(err)
			}
			check(t, d, c.header)
		})
	}

	// Through the spec's text form, as a bundle keeps it: eval reads the
	// next file with a decimal comma even when its first rows have none.
	d, err := readString(euCSV, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := d.Spec.String()
	if !strings.Contains(text, " decimal=','") {
		t.Fatalf("spec text %q has no decimal=','", text)
	}
	spec, err := ParseReadSpec(text)
	if err != nil || spec.Decimal != ',' {
		t.Fatalf("ParseReadSpec(%q) = %+v, %v", text, spec, err)
	}
	next := "label;light;temp;hum\ncold;381;14;70\nwarm;12,25;22,5;41,2\n"
	path := filepath.Join(t.TempDir(), "next.csv")
	if err := os.WriteFile(path, []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	nd, err := LoadSpec(path, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(nd.Row(1), []float32{22.5, 41.2, 12.25}) {
		t.Errorf("next file's row 1 = %v", nd.Row(1))
	}

	// A comma-separated file with quoted decimal commas: read with
	// Decimal ',' only (by default a quoted "1,5" could as well be a
	// thousands separator).
	quoted := "a,b,label\n\"1,5\",2,x\n\"2,25\",3,y\n"
	if _, err := readString(quoted, nil); err == nil || !strings.Contains(err.Error(), "--decimal ,") {
		t.Errorf("quoted decimal commas without Decimal: %v, want an error suggesting --decimal ,", err)
	}
	q, err := readString(quoted, &Options{Decimal: ','})
	if err != nil || !slices.Equal(q.Row(1), []float32{2.25, 3}) {
		t.Errorf("quoted decimal commas with Decimal ',': %v", err)
	}
	if text := q.Spec.String(); !strings.Contains(text, "delimiter=',' decimal=','") {
		t.Errorf("spec %q", text)
	}
}

// TestDecimalCommaErrors: when the first rows do not show the decimal
// comma (integers), the row that does says to give --decimal ,; with a
// decimal comma a '.' in a number is refused, naming the place, not
// guessed at; a decimal point can be forced.
func TestDecimalCommaErrors(t *testing.T) {
	late := "temp;hum;label\n14;70;cold\n22;41;warm\n23;40;warm\n22,5;41;warm\n"
	_, err := readString(late, nil)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 5 || pe.Column != 1 || !strings.Contains(err.Error(), `invalid number "22,5" (a decimal comma? read the file with --decimal ,)`) {
		t.Errorf("a decimal comma on line 5 only: %v", err)
	}
	if d, err := readString(late, &Options{Decimal: ','}); err != nil || d.Row(3)[0] != 22.5 {
		t.Errorf("with Decimal ',': %v", err)
	}
	mixed := "temp;hum;label\n14,5;70;cold\n1.234,5;41;warm\n"
	_, err = readString(mixed, nil)
	if !errors.As(err, &pe) || pe.Line != 3 || !strings.Contains(err.Error(), `invalid number "1.234,5"`) || !strings.Contains(err.Error(), "decimal comma") {
		t.Errorf("a '.' in a decimal-comma file: %v", err)
	}
	if _, err := readString(euCSV, &Options{Decimal: '.'}); err == nil || !strings.Contains(err.Error(), "--decimal ,") {
		t.Errorf("decimal commas read with a point: %v", err)
	}
	if _, err := readString(euCSV, &Options{Decimal: ';'}); !errors.Is(err, ErrOptions) {
		t.Errorf("Decimal ';': %v, want ErrOptions", err)
	}
	for in, want := range map[string]rune{"": 0, "auto": 0, ",": ',', "comma": ',', ".": '.', "point": '.'} {
		if got, err := ParseDecimal(in); err != nil || got != want {
			t.Errorf("ParseDecimal(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseDecimal(";"); !errors.Is(err, ErrOptions) {
		t.Errorf("ParseDecimal(;): %v", err)
	}
	// A ';' file with decimal points is still read with points.
	if d, err := readString("a;b;label\n1.5;2;x\n2.5;3;y\n", nil); err != nil || d.Row(1)[0] != 2.5 || d.Spec.Decimal != 0 {
		t.Errorf("decimal points in a ';' file: %v", err)
	}
}
