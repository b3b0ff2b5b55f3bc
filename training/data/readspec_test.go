package data

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestReadSpecText(t *testing.T) {
	tests := []struct {
		spec ReadSpec
		text string
	}{
		{ReadSpec{Format: FormatCSV, Delimiter: ';', Header: true, Label: Column{Name: "Room Occupancy"},
			Times: []Column{{Name: "Date"}, {Name: "Time"}}, Features: []string{"S1_Temp", `quote"d, with comma`}, NumFeatures: 2},
			`format=csv delimiter=';' header=yes label="Room Occupancy" time="Date","Time" features="S1_Temp","quote\"d, with comma" d=2`},
		{ReadSpec{Format: FormatCSV, Delimiter: ' ', Label: Column{Index: 1}, NumFeatures: 256},
			`format=csv delimiter=' ' label=1 d=256`},
		{ReadSpec{Format: FormatCSV, Delimiter: '\t', Label: Column{Index: -1}, Times: []Column{{Index: 3}}, TimeFeatures: true,
			Ignore: []Column{{Index: 2}, {Name: "id"}}, NumFeatures: 4},
			`format=csv delimiter='\t' label=last time=3 time-features=yes ignore=2,"id" d=4`},
		{ReadSpec{Format: FormatCSV, Delimiter: ',', Header: true, Label: Column{Name: "RainTomorrow"}, Group: Column{Name: "Location"},
			Features: []string{"MinTemp"}, NumFeatures: 1},
			`format=csv delimiter=',' header=yes label="RainTomorrow" group="Location" features="MinTemp" d=1`},
		{ReadSpec{Format: FormatARFF, Label: Column{Name: "eyeDetection"}, Features: []string{"AF3"}, NumFeatures: 1},
			`format=arff label="eyeDetection" features="AF3" d=1`},
		{ReadSpec{Format: FormatLIBSVM, NumFeatures: 123}, `format=libsvm d=123`},
		{ReadSpec{Format: FormatIDX}, `format=idx`},
	}
	for _, tt := range tests {
		if got := tt.spec.String(); got != tt.text {
			t.Errorf("String() = %s\nwant       %s", got, tt.text)
		}
		got, err := ParseReadSpec(tt.text)
		if err != nil {
			t.Errorf("%s: %v", tt.text, err)
			continue
		}
		if !reflect.DeepEqual(*got, tt.spec) {
			t.Errorf("%s: parsed %+v, want %+v", tt.text, *got, tt.spec)
		}
	}
	// A reader's spec carries both name and number; the text keeps the name.
	s := ReadSpec{Format: FormatCSV, Delimiter: ',', Header: true, Label: Column{Name: "y", Index: 3}, NumFeatures: 2, Features: []string{"a", "b"}}
	if got := s.String(); got != `format=csv delimiter=',' header=yes label="y" features="a","b" d=2` {
		t.Errorf("String() = %s", got)
	}
}

func TestParseReadSpecErrors(t *testing.T) {
	for text, msg := range map[string]string{
		``:                                   "no format",
		`delimiter=','`:                      "no format",
		`format=auto`:                        `format "auto"`,
		`format=dense`:                       `format "dense"`,
		`format=csv  d=1`:                    "unknown key",
		`format=csv d=1 format=csv`:          "repeated or out of order",
		`d=1 format=csv`:                     "repeated or out of order",
		`format=csv color=red`:               `unknown key "color"`,
		`format=csv delimiter=,`:             "rune literal",
		`format=csv delimiter='"'`:           "delimiter",
		`format=csv header=no`:               `"no", want yes`,
		`format=csv label=0`:                 "a number from 1",
		`format=csv label=""`:                "empty column name",
		`format=csv label=x`:                 "want a quoted name",
		`format=csv time=1,`:                 "time",
		`format=csv features="a","a" d=2`:    "empty or repeated",
		`format=csv features="a" d=2`:        "1 feature names for d=2",
		`format=csv features=a d=1`:          "want a quoted name",
		`format=csv d=-1`:                    "out of range",
		`format=csv d=1 `:                    "want key=value",
		`format=csv label="unterminated d=1`: "want a quoted name",
	} {
		_, err := ParseReadSpec(text)
		if !errors.Is(err, ErrReadSpec) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: got %v, want ErrReadSpec containing %q", text, err, msg)
		}
	}
}

func TestReadSpecOptions(t *testing.T) {
	s := &ReadSpec{Format: FormatCSV, Delimiter: ';', Header: true, Label: Column{Name: "y", Index: 5},
		Times: []Column{{Name: "Date", Index: 1}}, Ignore: []Column{{Name: "id", Index: 2}}, Features: []string{"a"}, NumFeatures: 1}
	o := s.Options()
	want := &Options{Format: FormatCSV, NumFeatures: 1, Header: HeaderYes, Delimiter: ';', LabelColumn: Column{Name: "y"},
		TimeColumns: []Column{{Name: "Date"}}, Features: []string{"a"}, KeepRowNumbers: true, NoGroup: true}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("Options() = %+v\nwant %+v", o, want)
	}
	// The group column, by name.
	s.Group = Column{Name: "site", Index: 3}
	want.NoGroup, want.GroupColumn = false, Column{Name: "site"}
	if o = s.Options(); !reflect.DeepEqual(o, want) {
		t.Fatalf("with a group Options() = %+v\nwant %+v", o, want)
	}
	s.Group = Column{}
	// Without names everything is by position, ignored columns included,
	// and a file without time columns is read without looking for any.
	s = &ReadSpec{Format: FormatCSV, Delimiter: ' ', Label: Column{Index: 1}, Ignore: []Column{{Index: 2}}, NumFeatures: 3}
	o = s.Options()
	if o.Header != HeaderNo || !o.NoTime || o.LabelColumn != (Column{Index: 1}) || len(o.Ignore) != 1 || o.NumFeatures != 3 {
		t.Fatalf("positional Options() = %+v", o)
	}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
}

func TestReadSpecDescribe(t *testing.T) {
	d, err := readString("id;Date;Time;a;b;Occupancy\n1;2017/12/22;10:49:41;1;2;x\n", &Options{Ignore: []Column{{Name: "id"}}, LabelColumn: Column{Name: "Occupancy"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `csv, delimiter ';', header row; label column 6 "Occupancy"; time columns 2 "Date" + 3 "Time"; ignored column 1 "id"; 2 features`
	if got := d.Spec.Describe(); got != want {
		t.Errorf("Describe() = %s\nwant         %s", got, want)
	}
	d, err = readString("1 2 3\n", first)
	if err != nil {
		t.Fatal(err)
	}
	want = `csv, columns separated by white space, no header row; label column 1; 2 features (unnamed: matched by position)`
	if got := d.Spec.Describe(); got != want {
		t.Errorf("Describe() = %s\nwant         %s", got, want)
	}
}
