package data

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestGroupColumnGiven: the group column names each row's group, is not a
// feature, and time goes forward within each group, not across them.
func TestGroupColumnGiven(t *testing.T) {
	const in = "date,site,temp,rain\n" +
		"2020-01-01,north,1.5,no\n2020-01-02,north,2.5,yes\n" +
		"2020-01-01,south,3.5,no\n2020-01-03,south,4.5,yes\n"
	d, err := readString(in, &Options{GroupColumn: Column{Name: "site"}})
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, d)
	if !slices.Equal(d.Features, []string{"temp"}) || !slices.Equal(d.X, []float32{1.5, 2.5, 3.5, 4.5}) {
		t.Fatalf("features %q X %v", d.Features, d.X)
	}
	if !slices.Equal(d.Groups, []int32{0, 0, 1, 1}) || !slices.Equal(d.GroupNames, []string{"north", "south"}) {
		t.Fatalf("groups %v %q", d.Groups, d.GroupNames)
	}
	if d.Spec.Group != (Column{Name: "site", Index: 2}) || d.Spec.GroupDetected {
		t.Fatalf("spec group %+v detected %v", d.Spec.Group, d.Spec.GroupDetected)
	}
	if !strings.Contains(d.Spec.Describe(), `groups in column 2 "site" (not a feature)`) {
		t.Fatalf("describe: %s", d.Spec.Describe())
	}
	// The next file reads the same way: the group column is not a feature.
	e, err := readString(in, d.Spec.Options())
	if err != nil || !slices.Equal(e.X, d.X) {
		t.Fatalf("read again: %v %v", e, err)
	}
	// Within a group time must not go back.
	_, err = readString(strings.Replace(in, "2020-01-03,south", "2019-12-31,south", 1), &Options{GroupColumn: Column{Name: "site"}})
	wantParseError(t, err, "t.txt", 5, `"2019-12-31" is earlier than "2020-01-01" on line 4 of group "south"`)
	// Without the group, the same rows go back in time.
	if _, err := readString(in, &Options{NoGroup: true, Ignore: []Column{{Name: "site"}}}); !errors.Is(err, ErrTimeOrder) {
		t.Fatalf("without groups: %v", err)
	}
}

// TestGroupColumnDetected: a free column named like a group (user,
// device, station, …, with or without "id") is the group column, people
// before devices before places; a label so named stays the label; NoGroup
// turns detection off; a missing group value is an error.
func TestGroupColumnDetected(t *testing.T) {
	const in = "PHONEID,USERID,v,label\n1,7,0.5,a\n2,7,1.5,b\n"
	d, err := readString(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, d)
	if d.Spec.Group.Name != "USERID" || !d.Spec.GroupDetected || !slices.Equal(d.Features, []string{"PHONEID", "v"}) {
		t.Fatalf("group %+v features %q", d.Spec.Group, d.Features)
	}
	if !strings.Contains(d.Spec.Describe(), "not a feature, found by its name") {
		t.Fatalf("describe: %s", d.Spec.Describe())
	}
	d, err = readString("temp,Room\n1,kitchen\n2,hall\n", nil)
	if err != nil || d.Groups != nil || !slices.Equal(d.Classes, []string{"hall", "kitchen"}) {
		t.Fatalf("label named room: %v %v", d, err)
	}
	d, err = readString(in, &Options{NoGroup: true})
	if err != nil || d.Groups != nil || d.D != 3 {
		t.Fatalf("NoGroup: %v %v", d, err)
	}
	_, err = readString("station,v,label\nA,1,x\n,2,y\n", nil)
	wantParseError(t, err, "t.txt", 3, `missing group ""`)
	if _, err := readString(in, &Options{NoGroup: true, GroupColumn: Column{Index: 1}}); !errors.Is(err, ErrOptions) {
		t.Fatalf("NoGroup with a group column: %v", err)
	}
	_, err = readString(in, &Options{GroupColumn: Column{Name: "label"}, LabelColumn: Column{Name: "label"}})
	wantParseError(t, err, "t.txt", 2, "the group column is also the label column")
}

// TestGroupColumnPositional: without a header the group column is given
// by number, and a spec reads the next file skipping it.
func TestGroupColumnPositional(t *testing.T) {
	const in = "1,g1,0.5,a\n2,g1,1.5,b\n3,g2,2.5,a\n"
	d, err := readString(in, &Options{Header: HeaderNo, GroupColumn: Column{Index: 2}, KeepRowNumbers: true})
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, d)
	if d.D != 2 || !slices.Equal(d.Groups, []int32{0, 0, 1}) {
		t.Fatalf("D %d groups %v", d.D, d.Groups)
	}
	e, err := readString(in, d.Spec.Options())
	if err != nil || sameData(d, e) != "" {
		t.Fatalf("read again: %v (%s)", err, sameData(d, e))
	}
}

// TestMissingLabel: a missing-value mark in the label column is an error
// naming the line, never a class; SkipUnlabelled drops and counts such
// rows.
func TestMissingLabel(t *testing.T) {
	for _, mark := range []string{"NA", "?", "null", "NaN", "N/A"} {
		in := "a,b,label\n1,2,x\n3,4," + mark + "\n5,6,y\n"
		_, err := readString(in, nil)
		wantParseError(t, err, "t.txt", 3, `column 3 "label": missing label "`+mark+`"`)
		d, err := readString(in, &Options{SkipUnlabelled: true})
		if err != nil {
			t.Fatal(err)
		}
		checkDataset(t, d)
		if d.N != 2 || d.Unlabelled != 1 || !slices.Equal(d.Classes, []string{"x", "y"}) || !slices.Equal(d.X, []float32{1, 2, 5, 6}) {
			t.Fatalf("%s skipped: N %d unlabelled %d classes %q X %v", mark, d.N, d.Unlabelled, d.Classes, d.X)
		}
	}
	_, err := readString("a,label\n1,x\n2,\n", nil)
	wantParseError(t, err, "t.txt", 3, "empty label")
	_, err = readString("a,label\n1,NA\n2,?\n", &Options{SkipUnlabelled: true})
	wantParseError(t, err, "t.txt", 1, "every row's label is missing")
}
