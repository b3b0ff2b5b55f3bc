package data

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// occupancyR is the start of UCI Occupancy Detection's datatraining.txt,
// written by R's write.table: the header names 7 columns, every row has 8
// fields, the first a quoted row name.
const occupancyR = `"date","Temperature","Humidity","Light","CO2","HumidityRatio","Occupancy"
"1","2015-02-04 17:51:00",23.18,27.272,426,721.25,0.00479298817650529,1
"2","2015-02-04 17:51:59",23.15,27.2675,429.5,714,0.00478344094931065,1
"3","2015-02-04 17:53:00",23.15,27.245,426,713.5,0.00477946352442199,1
"4","2015-02-04 17:54:00",23.15,27.2,426,708.25,0.00477150882608175,0
`

// TestRowNamesShorterHeader: a header that names all but the first column
// (R's write.table) reads, the first column as row names and never as a
// feature, with or without the flags the issue tried.
func TestRowNamesShorterHeader(t *testing.T) {
	for _, o := range []*Options{
		nil,
		{Header: HeaderYes},
		{LabelColumn: Column{Name: "Occupancy"}},
		{TimeColumns: []Column{{Name: "date"}}},
		{Ignore: []Column{{Name: "HumidityRatio"}}},
		{Ignore: []Column{{Index: 1}}}, // the row names, by number
	} {
		d, err := readString(occupancyR, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		checkDataset(t, d)
		want := []string{"Temperature", "Humidity", "Light", "CO2", "HumidityRatio"}
		if o != nil && len(o.Ignore) > 0 && o.Ignore[0].Name != "" {
			want = want[:4]
		}
		if !slices.Equal(d.Features, want) || d.N != 4 || d.Times == nil {
			t.Fatalf("%+v: features %q, %d rows, times %v", o, d.Features, d.N, d.Times)
		}
		if d.Row(0)[0] != 23.18 || !slices.Equal(labelsOf(d), []string{"1", "1", "1", "0"}) {
			t.Fatalf("%+v: row 0 %v, labels %q", o, d.Row(0), labelsOf(d))
		}
		s := d.Spec
		if s.Label != (Column{Name: "Occupancy", Index: 8}) || !slices.Equal(s.Times, []Column{{Name: "date", Index: 2}}) {
			t.Fatalf("%+v: spec %+v", o, s)
		}
		if o == nil || len(o.Ignore) == 0 || o.Ignore[0].Index != 1 {
			if s.RowNames != (Column{Index: 1}) || !strings.Contains(s.Describe(), "row names in column 1 (not a feature)") {
				t.Fatalf("%+v: row names %+v, Describe %q", o, s.RowNames, s.Describe())
			}
		}
		// The next file of the same shape reads the same by the spec's
		// text form, as eval reads it.
		spec, err := ParseReadSpec(s.String())
		if err != nil {
			t.Fatal(err)
		}
		again, err := readString(occupancyR, spec.Options())
		if err != nil {
			t.Fatalf("%+v: read again with %s: %v", o, s, err)
		}
		if diff := sameData(d, again); diff != "" {
			t.Fatalf("%+v: read again with %s: %s", o, s, diff)
		}
	}
	// A later row of the wrong width names the shape it should have.
	_, err := readString(occupancyR+`"5",2015-02-04 17:55:00,23.1,27.2,426,704.5,0.0047
`, nil)
	wantParseError(t, err, "t.txt", 6, "7 columns, want 8: a row name and the 7 columns named on line 1")
}

// TestRowNamesEmptyFirstName: R's write.csv and pandas' to_csv with its
// index name the first column "" (or nothing): it is read as row names,
// never a feature, whatever its values.
func TestRowNamesEmptyFirstName(t *testing.T) {
	for name, text := range map[string]string{
		"write.csv":     "\"\",\"temp\",\"co2\",\"room\"\n\"a1\",21.5,400,\"empty\"\n\"b7\",22.5,800,\"busy\"\n\"c3\",21,420,\"empty\"\n",
		"to_csv":        ",temp,co2,room\n0,21.5,400,empty\n1,22.5,800,busy\n2,21,420,empty\n",
		"to_csv ;":      ";temp;co2;room\n7;21.5;400;empty\n3;22.5;800;busy\n5;21;420;empty\n",
		"to_csv spaces": " ,temp,co2,room\n0,21.5,400,empty\n1,22.5,800,busy\n2,21,420,empty\n",
	} {
		d, err := readString(text, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkDataset(t, d)
		if !slices.Equal(d.Features, []string{"temp", "co2"}) || !slices.Equal(d.Row(1), []float32{22.5, 800}) || !slices.Equal(labelsOf(d), []string{"empty", "busy", "empty"}) {
			t.Fatalf("%s: features %q, row 1 %v, labels %q", name, d.Features, d.Row(1), labelsOf(d))
		}
		if d.Spec.RowNames != (Column{Index: 1}) {
			t.Fatalf("%s: row names %+v", name, d.Spec.RowNames)
		}
	}
	// Named by number, the unnamed column may still be the label.
	d, err := readString(",temp,co2\nx,1,2\ny,3,4\n", &Options{LabelColumn: Column{Index: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(labelsOf(d), []string{"x", "y"}) || d.D != 2 || d.Spec.RowNames != (Column{}) {
		t.Fatalf("labels %q, D %d, row names %+v", labelsOf(d), d.D, d.Spec.RowNames)
	}
	// An unnamed column elsewhere is still an error: it is not row names.
	_, err = readString("temp,,co2,y\n1,2,3,a\n4,5,6,b\n", nil)
	wantParseError(t, err, "t.txt", 2, "no name in the header row")
}

// indexed returns n rows of a logger file whose first column, named
// index, holds first, first+1, …; the features are not in steps of one.
func indexed(index string, first, n int, header bool) string {
	var b strings.Builder
	if header {
		fmt.Fprintf(&b, "%s,temp,co2,room\n", index)
	}
	for i := range n {
		fmt.Fprintf(&b, "%d,%.1f,%d,%s\n", first+i, 20+float64(i%5)*0.3, 400+(i*37)%200, []string{"empty", "busy"}[i/3%2])
	}
	return b.String()
}

// TestRowNumberColumn: a column that is just the row number (each value
// one more than the one before) is left out and said so, whatever its
// name, with or without a header, unless asked for.
func TestRowNumberColumn(t *testing.T) {
	for _, c := range []struct {
		text string
		col  Column
	}{
		{indexed("X", 1, 20, true), Column{Name: "X", Index: 1}},
		{indexed("Unnamed: 0", 0, 20, true), Column{Name: "Unnamed: 0", Index: 1}},
		{indexed("id", 1001, 20, true), Column{Name: "id", Index: 1}},
		{indexed("", 0, 20, false), Column{Index: 1}},
	} {
		d, err := readString(c.text, nil)
		if err != nil {
			t.Fatalf("%q: %v", c.col, err)
		}
		checkDataset(t, d)
		s := d.Spec
		if d.D != 2 || d.Row(3)[0] != 20.9 || !slices.Equal(s.RowNumbers, []Column{c.col}) {
			t.Fatalf("%+v: D %d, row 3 %v, row numbers %+v", c.col, d.D, d.Row(3), s.RowNumbers)
		}
		if want := c.col.describe() + " is the row number: left out"; !strings.Contains(s.Describe(), want) {
			t.Fatalf("%+v: Describe %q, want it to say %q", c.col, s.Describe(), want)
		}
		// Read again as eval reads the next file: the same columns.
		spec, err := ParseReadSpec(s.String())
		if err != nil {
			t.Fatal(err)
		}
		next := indexed(c.col.Name, 5000, 10, c.col.Name != "")
		a, err := readString(next, spec.Options())
		if err != nil {
			t.Fatalf("%+v: next file with %s: %v", c.col, s, err)
		}
		if a.D != 2 || a.Row(0)[0] != 20 {
			t.Fatalf("%+v: next file: D %d, row 0 %v", c.col, a.D, a.Row(0))
		}
		// Asked for, it is a feature.
		k, err := readString(c.text, &Options{KeepRowNumbers: true})
		if err != nil {
			t.Fatal(err)
		}
		if k.D != 3 || k.Spec.RowNumbers != nil {
			t.Fatalf("%+v: kept: D %d, row numbers %+v", c.col, k.D, k.Spec.RowNumbers)
		}
	}
	for name, text := range map[string]string{
		"a gap":        strings.Replace(indexed("id", 1, 20, true), "\n8,", "\n9,", 1),
		"steps of two": "id,temp,room\n" + lines(12, func(i int) string { return fmt.Sprintf("%d,%d,x", 2*i, i%3) }),
		"too few rows": indexed("id", 1, 9, true),
		"decreasing":   "id,temp,room\n" + lines(12, func(i int) string { return fmt.Sprintf("%d,%d,x", 20-i, i%3) }),
		"fractions":    "id,temp,room\n" + lines(12, func(i int) string { return fmt.Sprintf("%d.5,%d,x", i, i%3) }),
		"missing values": "id,temp,room\n" + lines(12, func(i int) string {
			return fmt.Sprintf("%s,%d,x", map[bool]string{true: "NA", false: fmt.Sprint(i)}[i == 4], i%3)
		}),
	} {
		d, err := readString(text, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := strings.Count(text[:strings.IndexByte(text, '\n')], ","); d.Spec.RowNumbers != nil || d.D != want {
			t.Errorf("%s: row numbers %+v, D %d; want none, %d", name, d.Spec.RowNumbers, d.D, want)
		}
	}
	// Nothing left but the row number: say what to do.
	_, err := readString("id,room\n"+lines(12, func(i int) string { return fmt.Sprintf("%d,x%d", i, i%2) }), nil)
	wantParseError(t, err, "t.txt", 2, "is the row number")
}

// lines returns n lines, line i (from 0) made by row(i).
func lines(n int, row func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(row(i) + "\n")
	}
	return b.String()
}

// TestRowNamesFuzzSeeds: the shapes above read and read again through
// their spec in FuzzCSV (a sanity check that the seeds are accepted).
func TestRowNamesFuzzSeeds(t *testing.T) {
	for _, s := range rowNameSeeds() {
		d, err := Read(bytes.NewReader([]byte(s)), "seed", nil)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		checkDataset(t, d)
	}
}

// rowNameSeeds are FuzzCSV seeds of the shapes R and pandas write.
func rowNameSeeds() []string {
	return []string{
		occupancyR,
		indexed("Unnamed: 0", 0, 12, true),
		indexed("", 1, 12, false),
		",temp,co2,room\n0,21.5,400,empty\n1,22.5,800,busy\n",
		"\"\",\"temp\",\"room\"\n\"r1\",21.5,\"empty\"\n\"r2\",22.5,\"busy\"\n",
	}
}
