package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// loggerCSV returns n rows as a data logger writes them: a header, Date and
// Time columns (YYYY/MM/DD, HH:MM:SS, 30 s apart), four sensors with
// decimals, a string label that is not in the last column, and delim
// between fields.
func loggerCSV(n int, delim rune) string {
	var b strings.Builder
	d := string(delim)
	b.WriteString(strings.Join([]string{"Date", "Time", "Temp", "Light", "Occupancy", "CO2", "PIR"}, d) + "\n")
	t0 := time.Date(2017, 12, 22, 23, 58, 41, 0, time.UTC) // crosses midnight
	for i := range n {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		state := []string{"empty", "one", "many"}[i/3%3]
		fmt.Fprintf(&b, "%s%s%s%s%.2f%s%d%s%s%s%d%s%d\n", at.Format("2006/01/02"), d, at.Format("15:04:05"), d,
			24.5+float64(i%7)*0.1, d, 100+i%13, d, state, d, 400+2*i, d, i%2)
	}
	return b.String()
}

func TestLoggerCSV(t *testing.T) {
	for _, delim := range []rune{';', ',', '\t'} {
		t.Run(fmt.Sprintf("%q", delim), func(t *testing.T) {
			d, err := readString(loggerCSV(9, delim), &Options{LabelColumn: Column{Name: "Occupancy"}})
			if err != nil {
				t.Fatal(err)
			}
			checkDataset(t, d)
			if !slices.Equal(d.Features, []string{"Temp", "Light", "CO2", "PIR"}) || d.N != 9 {
				t.Fatalf("features %q, %d rows", d.Features, d.N)
			}
			if !slices.Equal(d.Classes, []string{"empty", "many", "one"}) || !slices.Equal(labelsOf(d)[:4], []string{"empty", "empty", "empty", "one"}) {
				t.Fatalf("classes %q labels %q", d.Classes, labelsOf(d))
			}
			if !slices.Equal(d.Row(1), []float32{24.6, 101, 402, 1}) {
				t.Fatalf("row 1 %v", d.Row(1))
			}
			want := time.Date(2017, 12, 22, 23, 59, 11, 0, time.UTC).UnixNano()
			if !d.Ordered || d.Times[1] != want || d.Times[3]-d.Times[2] != int64(30*time.Second) {
				t.Fatalf("times %v (want row 1 = %d), ordered %v", d.Times, want, d.Ordered)
			}
			s := d.Spec
			if s.Format != FormatCSV || s.Delimiter != delim || !s.Header || s.Label != (Column{Name: "Occupancy", Index: 5}) ||
				!slices.Equal(s.Times, []Column{{"Date", 1}, {"Time", 2}}) || s.NumFeatures != 4 {
				t.Fatalf("spec %+v", s)
			}
			if got, want := s.Describe(), `label column 5 "Occupancy"; time columns 1 "Date" + 2 "Time"; 4 features`; !strings.HasSuffix(got, want) {
				t.Fatalf("Describe() = %q, want …%q", got, want)
			}
		})
	}
}

// TestLoggerEndToEnd is the data path of `tritctl train logger.csv
// --label-column Occupancy` then `tritctl eval model.trit test.csv` with no
// flags: the spec of the training file goes through its text form (as in a
// bundle) and reads a test file whose columns are in another order, with
// an extra column, by name.
func TestLoggerEndToEnd(t *testing.T) {
	dir := t.TempDir()
	trainPath := filepath.Join(dir, "logger.csv")
	if err := os.WriteFile(trainPath, []byte(loggerCSV(30, ';')), 0o644); err != nil {
		t.Fatal(err)
	}
	train, err := Load(trainPath, &Options{LabelColumn: Column{Name: "Occupancy"}})
	if err != nil {
		t.Fatal(err)
	}
	text := train.Spec.String()
	want := `format=csv delimiter=';' header=yes label="Occupancy" time="Date","Time" features="Temp","Light","CO2","PIR" d=4`
	if text != want {
		t.Fatalf("spec %s\nwant %s", text, want)
	}
	spec, err := ParseReadSpec(text)
	if err != nil {
		t.Fatal(err)
	}
	// The test file: same logger, columns reordered, one more sensor.
	perm := []int{6, 4, 0, 5, 2, 1, 3}
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSuffix(loggerCSV(30, ';'), "\n"), "\n") {
		f := strings.Split(line, ";")
		g := make([]string, 0, len(f)+1)
		for _, j := range perm {
			g = append(g, f[j])
		}
		extra := "Humidity"
		if i > 0 {
			extra = "55.5"
		}
		b.WriteString(strings.Join(append(g, extra), ";") + "\r\n")
	}
	testPath := filepath.Join(dir, "test.csv")
	if err := os.WriteFile(testPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	test, err := LoadSpec(testPath, spec)
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, test)
	if diff := sameData(train, test); diff != "" {
		t.Fatalf("test file read by spec: %s", diff)
	}
	// A test file without one of the model's columns names it.
	missing := strings.ReplaceAll(b.String(), "CO2", "CO2_ppm")
	_, err = Read(strings.NewReader(missing), "test.csv", spec.Options())
	if !errors.Is(err, ErrColumn) || !strings.Contains(err.Error(), `no column named "CO2"`) || !strings.Contains(err.Error(), "feature 3 of 4") {
		t.Fatalf("missing column: %v", err)
	}
}

func TestHeaderDetection(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		opt      *Options
		features []string
		rows     int
	}{
		{"names over numbers", "a,b,y\n1,2,0\n3,4,1\n", nil, []string{"a", "b"}, 2},
		{"numbers only", "1,2,0\n3,4,1\n", nil, nil, 2},
		{"string labels, no header", "1,2,cat\n3,4,dog\n", nil, nil, 2},
		{"string labels with header", "a,b,animal\n1,2,cat\n3,4,dog\n", nil, []string{"a", "b"}, 2},
		{"numeric names are not detected", "1,2,3\n1,2,0\n", nil, nil, 2},
		{"forced header", "1,2,3\n1,2,0\n", &Options{Header: HeaderYes}, []string{"1", "2"}, 1},
		{"forced no header", "k,1\n5,2\n", &Options{Header: HeaderNo, LabelColumn: Column{Index: 1}}, nil, 2},
		{"detected header", "k,1\n5,2\n", &Options{LabelColumn: Column{Index: 1}}, []string{"1"}, 1},
		{"one data line", "1,2,a\n", nil, nil, 1},
		{"time values are data", "2017/12/22,10:49:41,1,a\n2017/12/22,10:50:11,2,b\n", nil, nil, 2},
		{"white space, usps-like header", "digit p1 p2\n6 -1 0.5\n", &Options{LabelColumn: Column{Name: "digit"}}, []string{"p1", "p2"}, 1},
		{"byte order mark", "\ufeffa,y\n1,0\n", nil, []string{"a"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := readString(tt.in, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkDataset(t, d)
			if !slices.Equal(d.Features, tt.features) || d.N != tt.rows {
				t.Fatalf("features %q, %d rows; want %q, %d", d.Features, d.N, tt.features, tt.rows)
			}
		})
	}
}

func TestDelimiters(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		opt   *Options
		delim rune
		x     []float32
	}{
		{"comma", "a,b,y\n1,2,p\n", nil, ',', []float32{1, 2}},
		{"semicolon with decimal-comma text", "a;b;y\n1;2;\"p,q\"\n", nil, ';', []float32{1, 2}},
		{"tab", "a\tb c\ty\n1\t2\tp\n", nil, '\t', []float32{1, 2}},
		{"tab with an empty label field", "a\tb\ty\n1\t2\t\"\"\n", &Options{LabelColumn: Column{Index: 1}, Ignore: []Column{{Index: 3}}}, '\t', []float32{2}},
		{"white space", "a  b y\n 1 2\tp\n", nil, ' ', []float32{1, 2}},
		{"given pipe", "a|b|y\n1|2|p\n", &Options{Delimiter: '|'}, '|', []float32{1, 2}},
		{"quoted fields", "\"a,1\",\"b \"\"2\"\"\",y\n\"1\",2,\"p\nq\"\n", nil, ',', []float32{1, 2}},
		{"inconsistent: first line decides", "a;b,c;y\n1;2;p\n", nil, ';', []float32{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := readString(tt.in, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkDataset(t, d)
			if d.Spec.Delimiter != tt.delim || !slices.Equal(d.X, tt.x) {
				t.Fatalf("delimiter %q X %v; want %q %v", d.Spec.Delimiter, d.X, tt.delim, tt.x)
			}
		})
	}
	d, err := readString("\"a,1\",\"b \"\"2\"\"\",y\n1,2,p\n", nil)
	if err != nil || !slices.Equal(d.Features, []string{"a,1", `b "2"`}) {
		t.Fatalf("quoted names: %q %v", d.Features, err)
	}
	// A quoted line break: the next row's error names its own line.
	_, err = readString("a,b,y\n1,2,\"p\nq\"\n1,x,p\n", nil)
	wantParseError(t, err, "t.txt", 4, `column 2 "b": invalid number "x"`)
}

func TestLabelColumn(t *testing.T) {
	const in = "id,Target,a,b\n1,x,2,3\n2,y,4,5\n"
	tests := []struct {
		name     string
		in       string
		opt      *Options
		label    Column
		features []string
	}{
		{"default: named target", in, &Options{Ignore: []Column{{Name: "id"}}}, Column{"Target", 2}, []string{"a", "b"}},
		{"by name", in, &Options{LabelColumn: Column{Name: "Target"}, Ignore: []Column{{Index: 1}}}, Column{"Target", 2}, []string{"a", "b"}},
		{"by number", in, &Options{LabelColumn: Column{Index: 2}, Ignore: []Column{{Name: "id"}}}, Column{"Target", 2}, []string{"a", "b"}},
		{"last", "a,b,c\n1,2,3\n", &Options{LabelColumn: Column{Index: -1}}, Column{"c", 3}, []string{"a", "b"}},
		{"default: last", "a,b,c\n1,2,3\n", nil, Column{"c", 3}, []string{"a", "b"}},
		{"default: two label-like names, so the last", "class,y,c\n1,2,3\n", nil, Column{"c", 3}, []string{"class", "y"}},
		{"default: last that is not a time", "a,b,time\n1,2,3\n", nil, Column{"b", 2}, []string{"a"}},
		{"default: last that is not ignored", "a,b,c\n1,2,3\n", &Options{Ignore: []Column{{Index: -1}}}, Column{"b", 2}, []string{"a"}},
		{"no header: by number", "1 2 3\n", &Options{LabelColumn: Column{Index: 2}}, Column{"", 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := readString(tt.in, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkDataset(t, d)
			if d.Spec.Label != tt.label || !slices.Equal(d.Features, tt.features) {
				t.Fatalf("label %+v features %q; want %+v %q", d.Spec.Label, d.Features, tt.label, tt.features)
			}
		})
	}
}

func TestTimeColumns(t *testing.T) {
	at := func(s string) int64 {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UnixNano()
	}
	tests := []struct {
		name     string
		in       string
		opt      *Options
		times    []int64
		spec     []Column
		features []string
	}{
		{"ISO 8601 with T and zone", "when,a,y\n2017-12-22T10:49:41Z,1,p\n2017-12-22T11:49:42+01:00,2,q\n", nil,
			[]int64{at("2017-12-22T10:49:41Z"), at("2017-12-22T10:49:42Z")}, []Column{{"when", 1}}, []string{"a"}},
		{"ISO 8601 with a space, fractions, no zone", "a,stamp,y\n1,2017-12-22 10:49:41.25,p\n2,2017-12-22 10:49:41.5,q\n", nil,
			[]int64{at("2017-12-22T10:49:41.25Z"), at("2017-12-22T10:49:41.5Z")}, []Column{{"stamp", 2}}, []string{"a"}},
		{"slashes", "t,a,y\n2017/12/22 10:49:41,1,p\n2018/1/2 00:00:00,2,q\n", nil,
			[]int64{at("2017-12-22T10:49:41Z"), at("2018-01-02T00:00:00Z")}, []Column{{"t", 1}}, []string{"a"}},
		{"date only", "day,a,y\n2017-12-22,1,p\n2017-12-23,2,q\n", nil,
			[]int64{at("2017-12-22T00:00:00Z"), at("2017-12-23T00:00:00Z")}, []Column{{"day", 1}}, []string{"a"}},
		{"Date,Time pair", "Date,Time,a,y\n2017/12/22,23:59:59,1,p\n2017/12/23,00:00:29,2,q\n", nil,
			[]int64{at("2017-12-22T23:59:59Z"), at("2017-12-23T00:00:29Z")}, []Column{{"Date", 1}, {"Time", 2}}, []string{"a"}},
		{"no header, by value", "2017-12-22T10:49:41,1,p\n2017-12-22T10:49:42,2,q\n", nil,
			[]int64{at("2017-12-22T10:49:41Z"), at("2017-12-22T10:49:42Z")}, []Column{{"", 1}}, nil},
		{"seconds in a column named time", "time,a,y\n1513939781,1,p\n1513939781.5,2,q\n", nil,
			[]int64{at("2017-12-22T10:49:41Z"), at("2017-12-22T10:49:41.5Z")}, []Column{{"time", 1}}, []string{"a"}},
		{"ties are in order", "Timestamp,a,y\n2017-12-22 10:49,1,p\n2017-12-22 10:49,2,q\n", nil,
			[]int64{at("2017-12-22T10:49:00Z"), at("2017-12-22T10:49:00Z")}, []Column{{"Timestamp", 1}}, []string{"a"}},
		{"given by name", "a,sec,y\n1,5,p\n2,6,q\n", &Options{TimeColumns: []Column{{Name: "sec"}}},
			[]int64{5e9, 6e9}, []Column{{"sec", 2}}, []string{"a"}},
		{"numeric time as a feature too", "time,a,y\n5,1,p\n6,2,q\n", &Options{TimeFeatures: true},
			[]int64{5e9, 6e9}, []Column{{"time", 1}}, []string{"time", "a"}},
		{"none", "time,a,y\n6,1,p\n5,2,q\n", &Options{NoTime: true}, nil, nil, []string{"time", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := readString(tt.in, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkDataset(t, d)
			if !slices.Equal(d.Times, tt.times) || !slices.Equal(d.Spec.Times, tt.spec) || !slices.Equal(d.Features, tt.features) {
				t.Fatalf("times %v spec %+v features %q; want %v %+v %q", d.Times, d.Spec.Times, d.Features, tt.times, tt.spec, tt.features)
			}
			if d.Ordered != (tt.times != nil) {
				t.Fatalf("ordered %v", d.Ordered)
			}
		})
	}
	d, err := readString("1,2,p\n", &Options{Ordered: true})
	if err != nil || !d.Ordered || d.Times != nil {
		t.Fatalf("Options.Ordered: %+v %v", d, err)
	}
}

func TestTimeOrderRefused(t *testing.T) {
	in := "Date,Time,a,y\n2017/12/22,10:00:00,1,p\n2017/12/22,10:00:30,1,p\n2017/12/22,10:00:15,1,p\n"
	_, err := readString(in, nil)
	pe := wantParseError(t, err, "t.txt", 4, `column 1 "Date": data: rows out of time order: "2017/12/22 10:00:15" is earlier than "2017/12/22 10:00:30" on line 3`)
	if !errors.Is(err, ErrTimeOrder) || pe.Column != 1 {
		t.Fatalf("got %v", err)
	}
	// Without time columns the file reads in file order.
	if d, err := readString(in, &Options{NoTime: true, Ignore: []Column{{Name: "Date"}, {Name: "Time"}}}); err != nil || d.N != 3 || d.Ordered {
		t.Fatalf("NoTime: %v %v", d, err)
	}
}

func TestCSVMalformed(t *testing.T) {
	tests := []struct {
		name, in string
		opt      *Options
		line     int
		msg      string
	}{
		{"non-numeric feature names its header", "Date,Temp,y\n2017-01-01,20.5,a\n2017-01-02,warm,b\n", nil, 3, `column 2 "Temp": invalid number "warm"`},
		{"a text column", "status,a,y\nok,1,p\n", nil, 2, `column 1 "status": invalid number "ok" (if the column is not a feature, skip it: --ignore-column "status"; if it is the label: --label-column "status")`},
		{"no such label", "a,b\n1,2\n", &Options{LabelColumn: Column{Name: "B"}}, 1, `label column: no column named "B" (there is "b": names are case-sensitive)`},
		{"label by name, no header", "1,2\n3,4\n", &Options{LabelColumn: Column{Name: "b"}}, 1, `the first line does not look like a header row`},
		{"label by name, header no", "a,b\n3,4\n", &Options{Header: HeaderNo, LabelColumn: Column{Name: "b"}}, 1, `is given by name, but the file has no header row`},
		{"no such ignored column", "a,b\n1,2\n", &Options{Ignore: []Column{{Name: "c"}}}, 1, `ignored column: no column named "c" (the header has "a", "b")`},
		{"ignored label", "a,b\n1,2\n", &Options{LabelColumn: Column{Index: 2}, Ignore: []Column{{Name: "b"}}}, 2, `column 2 "b": data: column: the label column is also ignored`},
		{"time column out of range", "a,b\n1,2\n", &Options{TimeColumns: []Column{{Index: 3}}}, 2, `time column 3 but the line has 2 columns`},
		{"time column that is no time", "a,b,c\n1,x,2\n", &Options{TimeColumns: []Column{{Name: "b"}}}, 2, `column 2 "b": "x" is not a time`},
		{"named time column that is no time", "time,b,c\nsoon,1,2\n", nil, 2, `column 1 "time": "soon" is not a time`},
		{"time of another kind", "Date,a,y\n2017-01-01,1,p\n2017-01-01 10:00,2,q\n", nil, 3, `column 1 "Date": "2017-01-01 10:00" is not a date like the first row's`},
		{"duplicate feature names", "a,a,y\n1,2,3\n", nil, 2, `column 1 "a": data: column: columns 1 and 2 are both named "a"`},
		{"unnamed feature", "a,,y\n0,1,2\n", nil, 2, `column 2: data: column: the feature column has no name`},
		{"ragged row", "a,b,y\n1,2,3\n1,2\n", nil, 3, "2 columns, want 3 as on line 1"},
		{"header longer than rows", "a,b,c,y\n1,2,3\n", nil, 2, "3 columns, want 4 as on line 1"},
		{"bare quote", "a,b,y\n1,2\"x,3\n", nil, 2, `byte 4 of the line: bare " in non-quoted-field`},
		{"unterminated quote", "a,b,y\n1,2,\"3\n", nil, 2, `extraneous or missing " in quoted-field`},
		{"header only", "a,b,y\n", nil, 1, "no data rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readString(tt.in, tt.opt)
			wantParseError(t, err, "t.txt", tt.line, tt.msg)
		})
	}
}

func TestFeaturesByName(t *testing.T) {
	opt := &Options{Features: []string{"b", "a"}}
	d, err := readString("a,y,b,extra\n1,p,2,x\n3,q,4,y\n", opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.X, []float32{2, 1, 4, 3}) || !slices.Equal(d.Features, []string{"b", "a"}) || !slices.Equal(labelsOf(d), []string{"p", "q"}) {
		t.Fatalf("X %v features %q labels %q", d.X, d.Features, labelsOf(d))
	}
	// Without a header the features are taken by position.
	d, err = readString("1,2,p\n", opt)
	if err != nil || !slices.Equal(d.Features, []string{"b", "a"}) || !slices.Equal(d.X, []float32{1, 2}) {
		t.Fatalf("positional: %v %v", d, err)
	}
	_, err = readString("1,2,3,p\n", opt)
	wantParseError(t, err, "t.txt", 1, "3 feature columns, want 2 (the file has no header")
	_, err = readString("a,y\n1,p\n", opt)
	wantParseError(t, err, "t.txt", 1, `feature 1 of 2: no column named "b"`)
	_, err = readString("a,b\n1,2\n", &Options{Features: []string{"a", "b"}, LabelColumn: Column{Index: 2}})
	wantParseError(t, err, "t.txt", 2, `feature 2 of 2 is the label column here`)
	// The default label is the last column that is not one of Features.
	d, err = readString("y,b,a\np,1,2\n", opt)
	if err != nil || !slices.Equal(d.X, []float32{1, 2}) || d.Spec.Label != (Column{"y", 1}) {
		t.Fatalf("default label among features: %v %v", d, err)
	}
}

func TestSniffCSV(t *testing.T) {
	for _, in := range []string{
		"2017-12-22 10:49:41 1 2\n", // white space and a time of day: not LIBSVM
		"2017-12-22T10:49:41,1,p\n", // one ISO field with colons and commas
		"Date,Time,a,y\n2017/12/22,10:49:41,1,p\n",
	} {
		d, err := readString(in, nil)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if d.Spec.Format != FormatCSV || d.Times == nil {
			t.Errorf("%q: read as %s, times %v", in, d.Spec.Format, d.Times)
		}
	}
}

func TestParseColumn(t *testing.T) {
	for in, want := range map[string]Column{
		"3": {Index: 3}, " last ": {Index: -1}, "LAST": {Index: -1}, "-1": {Index: -1}, "Room_Occupancy_Count": {Name: "Room_Occupancy_Count"},
		"1a": {Name: "1a"},
	} {
		got, err := ParseColumn(in)
		if err != nil || got != want {
			t.Errorf("ParseColumn(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, _ := ParseColumn(got.String()); back != got {
			t.Errorf("%+v.String() = %q reads back as %+v", got, got.String(), back)
		}
	}
	for _, in := range []string{"", "0", "-2", "99999999999999999999"} {
		if _, err := ParseColumn(in); !errors.Is(err, ErrOptions) {
			t.Errorf("ParseColumn(%q): got %v", in, err)
		}
	}
	for in, want := range map[string]rune{"": 0, "auto": 0, "tab": '\t', `\t`: '\t', ";": ';', "space": ' ', "|": '|'} {
		if got, err := ParseDelimiter(in); err != nil || got != want {
			t.Errorf("ParseDelimiter(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"ab", "\"", "\n", "#"} {
		if _, err := ParseDelimiter(in); !errors.Is(err, ErrOptions) {
			t.Errorf("ParseDelimiter(%q): got %v", in, err)
		}
	}
	for in, want := range map[string]Header{"": HeaderAuto, "Yes": HeaderYes, "no": HeaderNo} {
		if got, err := ParseHeader(in); err != nil || got != want {
			t.Errorf("ParseHeader(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseHeader("maybe"); !errors.Is(err, ErrOptions) {
		t.Errorf("ParseHeader(maybe): %v", err)
	}
}
