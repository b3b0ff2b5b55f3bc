package data

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

var eegChannels = []string{"AF3", "F7", "F3", "FC5", "T7", "P7", "O1", "O2", "P8", "T8", "FC6", "F4", "F8", "AF4"}

// eegARFF returns n rows laid out like UCI's EEG Eye State ARFF: CRLF, a
// blank line before @DATA, 14 NUMERIC channels, a nominal {0,1} class last,
// and no line ending after the last row.
func eegARFF(n int) string {
	var b strings.Builder
	b.WriteString("@RELATION EEG_DATA\r\n\r\n")
	for _, c := range eegChannels {
		fmt.Fprintf(&b, "@ATTRIBUTE %s  NUMERIC\r\n", c)
	}
	b.WriteString("@ATTRIBUTE eyeDetection {0,1}\r\n\r\n@DATA\r\n")
	for i := range n {
		if i > 0 {
			b.WriteString("\r\n")
		}
		for j := range eegChannels {
			fmt.Fprintf(&b, "%d.%02d,", 4000+i+j, j)
		}
		fmt.Fprintf(&b, "%d", i/2%2)
	}
	return b.String()
}

func TestARFF(t *testing.T) {
	d, err := readString(eegARFF(5), nil) // detected
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, d)
	if d.N != 5 || d.D != 14 || !slices.Equal(d.Features, eegChannels) || !slices.Equal(labelsOf(d), []string{"0", "0", "1", "1", "0"}) {
		t.Fatalf("%d×%d features %q labels %q", d.N, d.D, d.Features, labelsOf(d))
	}
	if d.X[14] != 4001 || d.X[15] != 4002.01 {
		t.Fatalf("row 1 %v", d.Row(1))
	}
	if got := d.Spec.String(); got != `format=arff label="eyeDetection" features="AF3","F7","F3","FC5","T7","P7","O1","O2","P8","T8","FC6","F4","F8","AF4" d=14` {
		t.Fatalf("spec %s", got)
	}
	if d.Ordered || d.Times != nil {
		t.Fatal("an ARFF file is not ordered unless declared so")
	}
	if d, err := readString(eegARFF(3), &Options{Ordered: true, Features: []string{"F8", "AF3"}}); err != nil || !d.Ordered || !slices.Equal(d.Row(0), []float32{4012.12, 4000}) {
		t.Fatalf("ordered, by name: %v %v", d, err)
	}

	const mixed = "% comment\n@relation 'weather data'\n@attribute 'out look' {sunny, 'over cast'}\n" +
		"@attribute temp real\n@attribute when date \"yyyy-MM-dd HH:mm:ss\"\n@attribute note string\n@attribute play {yes,no}\n" +
		"@data\n'over cast',20.5,'2020-01-01 10:00:00','a b',yes\n% c\nsunny, 21 ,'2020-01-01 11:00:00',x,no\n"
	d, err = readString(mixed, &Options{Format: FormatARFF, LabelColumn: Column{Name: "play"}, Ignore: []Column{{Name: "out look"}, {Name: "note"}}})
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, d)
	if !slices.Equal(d.Features, []string{"temp"}) || !slices.Equal(d.X, []float32{20.5, 21}) || !slices.Equal(labelsOf(d), []string{"yes", "no"}) ||
		!slices.Equal(d.Spec.Times, []Column{{"when", 3}}) || d.Times[1]-d.Times[0] != 3600e9 {
		t.Fatalf("features %q X %v labels %q times %v %+v", d.Features, d.X, labelsOf(d), d.Times, d.Spec.Times)
	}
	d, err = readString(mixed, &Options{LabelColumn: Column{Name: "out look"}, Ignore: []Column{{Name: "note"}, {Name: "play"}}})
	if err != nil || !slices.Equal(labelsOf(d), []string{"over cast", "sunny"}) {
		t.Fatalf("quoted nominal label: %v %v", d, err)
	}
}

// TestARFFNumericNominal: a nominal attribute whose values are numbers
// (electricity's day of the week {1,…,7}) is a feature holding them.
func TestARFFNumericNominal(t *testing.T) {
	const in = "@relation r\n@attribute day {1,2,3,4,5,6,7}\n@attribute v real\n@attribute c {UP,DOWN}\n@data\n2,0.5,UP\n7,0.25,DOWN\n"
	d, err := readString(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, d)
	if !slices.Equal(d.X, []float32{2, 0.5, 7, 0.25}) || !slices.Equal(d.Features, []string{"day", "v"}) {
		t.Fatalf("X %v features %q", d.X, d.Features)
	}
}

// TestARFFNominalWords: a nominal attribute of words (seismic-bumps'
// hazard levels {a,b,c,d} and shifts {W,N}) is a feature holding each
// word's position in its declaration; a word not declared is an error
// naming the column.
func TestARFFNominalWords(t *testing.T) {
	const head = "@relation r\n@attribute hazard {a,b,c,d}\n@attribute shift {W,N}\n@attribute 'v' real\n@attribute class {1,0}\n@data\n"
	d, err := readString(head+"a,N,0.5,0\nd,W,1,1\n'c',N,2,0\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, d)
	if !slices.Equal(d.X, []float32{0, 1, 0.5, 3, 0, 1, 2, 1, 2}) || !slices.Equal(d.Features, []string{"hazard", "shift", "v"}) {
		t.Fatalf("X %v features %q", d.X, d.Features)
	}
	_, err = readString(head+"a,N,0.5,0\ne,W,1,1\n", nil)
	wantParseError(t, err, "t.txt", 8, `column 1 "hazard": "e": not among the attribute's values "a", "b", "c", "d"`)
}

func TestARFFMalformed(t *testing.T) {
	head := "@relation r\n@attribute a numeric\n@attribute c {x,y}\n@data\n"
	tests := []struct {
		name, in string
		opt      *Options
		line     int
		msg      string
	}{
		{"no @data", "@relation r\n@attribute a numeric\n", nil, 2, "no @DATA line"},
		{"attribute first", "@attribute a numeric\n", &Options{Format: FormatARFF}, 1, "@ATTRIBUTE before @RELATION"},
		{"unknown keyword", "@relation r\n@attrib a numeric\n", nil, 2, `"@attrib" where @RELATION, @ATTRIBUTE or @DATA was expected`},
		{"unsupported type", "@relation r\n@attribute a relational\n", nil, 2, `type "relational" is not supported`},
		{"no type", "@relation r\n@attribute a\n", nil, 2, `has no type`},
		{"duplicate attribute", "@relation r\n@attribute a real\n@attribute a real\n", nil, 3, `attributes 1 and 2 are both named "a"`},
		{"label not declared", head + "1,x\n2,z\n", nil, 6, `column 2 "c": data: unknown label "z": not among the attribute's values "x", "y"`},
		{"missing value refused", head + "?,x\n", &Options{RefuseMissing: true}, 5, `column 1 "a": data: missing value: "?"`},
		{"missing label", head + "1,?\n", nil, 5, `column 2 "c": missing label`},
		{"string feature", "@relation r\n@attribute a string\n@attribute b real\n@attribute c {x,y}\n@data\np,1,x\n", nil, 6,
			`column 1 "a": data: column: attribute is string, and only numeric and nominal attributes can be features`},
		{"sparse row", head + "{0 1, 1 x}\n", nil, 5, "sparse ARFF rows"},
		{"short row", head + "1\n", nil, 5, "1 columns, want 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readString(tt.in, tt.opt)
			wantParseError(t, err, "t.txt", tt.line, tt.msg)
		})
	}
	if _, err := readString(head+"1,x\n", &Options{Format: FormatARFF, LabelColumn: Column{Name: "C"}}); !errors.Is(err, ErrColumn) {
		t.Fatalf("unknown label attribute: %v", err)
	}
}
