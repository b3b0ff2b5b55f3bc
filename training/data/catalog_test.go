package data

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestStandardsTable(t *testing.T) {
	names := map[string]bool{}
	for _, s := range Standards() {
		if names[s.Name] {
			t.Errorf("%s listed twice", s.Name)
		}
		names[s.Name] = true
		if s.Train == "" || (s.Test == "" && s.SplitFrac <= 0 && s.TestRows <= 0 && s.HashKey == "" && len(s.TestGroups) == 0) {
			t.Errorf("%s: no train file or no test set: %+v", s.Name, s)
		}
		if err := s.Opt.check(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	for _, n := range []string{"usps", "mnist", "covtype", "ijcnn1", "cod-rna", "a9a", "w8a", "occupancy", "eeg-eye-state", "wall-following", "wall-following-chrono", "seismic-bumps", "ujiindoorloc", "weather-aus"} {
		if !names[n] {
			t.Errorf("%s missing", n)
		}
	}
}

// fakeShared writes files named like the shared data directory's.
func fakeShared(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadStandardPadding(t *testing.T) {
	dir := fakeShared(t, map[string][]byte{
		// train uses index 3 at most, test index 5: both become 5 wide.
		"cod-rna/cod-rna.xz":   xzBytes(t, []byte("-1 1:1 3:2\n1 2:1\n")),
		"cod-rna/cod-rna.t.xz": xzBytes(t, []byte("1 5:1\n")),
		// test uses index 2 at most.
		"ijcnn1/ijcnn1.trn.bz2": []byte("-1.0 1:1 4:2\n1.0 2:1\n"),
		"ijcnn1/ijcnn1.tst.bz2": []byte("1 2:7\n"),
	})
	train, test, err := LoadStandard(dir, "cod-rna")
	if err != nil {
		t.Fatal(err)
	}
	if train.D != 5 || test.D != 5 || !slices.Equal(train.X, []float32{1, 0, 2, 0, 0, 0, 1, 0, 0, 0}) {
		t.Fatalf("train %d wide %v, test %d wide", train.D, train.X, test.D)
	}
	train, test, err = LoadStandard(dir, "ijcnn1")
	if err != nil {
		t.Fatal(err)
	}
	if train.D != 4 || test.D != 4 || !slices.Equal(test.X, []float32{0, 7, 0, 0}) {
		t.Fatalf("train %d wide, test %d wide %v", train.D, test.D, test.X)
	}
	if !slices.Equal(test.Classes, train.Classes) || test.Classes[test.Y[0]] != "1" {
		t.Fatalf("test classes %q, row 0 %q", test.Classes, test.Classes[test.Y[0]])
	}
}

func TestLoadStandardRelabel(t *testing.T) {
	dir := fakeShared(t, map[string][]byte{
		// The test set has only some of the digits, written as integers.
		"usps/zip.train.gz": gzipBytes(t, []byte("6.0000 1 2\n9.0000 3 4\n0.0000 5 6\n")),
		"usps/zip.test.gz":  gzipBytes(t, []byte("9 1 1\n")),
		"a9a/a9a.xz":        xzBytes(t, []byte("-1 1:1\n+1 2:1\n")),
		"a9a/a9a.t.xz":      xzBytes(t, []byte("+2 1:1\n")),
	})
	train, test, err := LoadStandard(dir, "usps")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(train.Classes, []string{"0", "6", "9"}) || !slices.Equal(test.Classes, train.Classes) || test.Y[0] != 2 {
		t.Fatalf("train %q test %q Y %v", train.Classes, test.Classes, test.Y)
	}
	_, _, err = LoadStandard(dir, "a9a")
	if !errors.Is(err, ErrUnknownLabel) || !strings.Contains(err.Error(), `"2"`) {
		t.Fatalf("test label not in train: got %v", err)
	}
	if train, _, err := LoadStandard(dir, "mnist"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing files: got %v %v", train, err)
	}
	if _, _, err := LoadStandard(dir, "nope"); !errors.Is(err, ErrUnknownDataset) {
		t.Fatalf("unknown name: got %v", err)
	}
}

// TestLoadStandardShifted: weather-aus splits by station (rows without a
// label in neither part), ujiindoorloc's label is building and floor with
// FLOOR dropped from the features and "not detected" (100) at the weak end.
func TestLoadStandardShifted(t *testing.T) {
	weather := "Date,Location,MinTemp,MaxTemp,Rainfall,Evaporation,Sunshine,WindGustDir,WindGustSpeed,WindDir9am,WindDir3pm,WindSpeed9am,WindSpeed3pm,Humidity9am,Humidity3pm,Pressure9am,Pressure3pm,Cloud9am,Cloud3pm,Temp9am,Temp3pm,RainToday,RainTomorrow\n"
	row := func(date, site, rain string) string {
		return date + "," + site + ",13.4,22.9,0.6,NA,NA,W,44,W,WNW,20,24,71,22,1007.7,1007.1,8,NA,16.9,21.8,No," + rain + "\n"
	}
	weather += row("2008-12-01", "Albury", "No") + row("2008-12-02", "Albury", "NA") + row("2008-12-03", "Albury", "Yes")
	for _, s := range []string{"Adelaide", "MountGambier", "Nuriootpa", "Woomera", "Albany", "Witchcliffe", "PearceRAAF", "PerthAirport",
		"Perth", "SalmonGums", "Walpole", "Hobart", "Launceston", "AliceSprings", "Darwin", "Katherine", "Uluru"} {
		weather += row("2008-12-01", s, "Yes")
	}
	uji := "WAP001,WAP002,LONGITUDE,LATITUDE,FLOOR,BUILDINGID,SPACEID,RELATIVEPOSITION,USERID,PHONEID,TIMESTAMP\n" +
		"-60,100,-7541.2,4864920.7,2,1,106,2,2,23,1371713733\n100,-80,-7541.2,4864920.7,0,2,106,2,2,13,1371713734\n"
	dir := fakeShared(t, map[string][]byte{
		"weather-aus/weatherAUS.csv.xz":      xzBytes(t, []byte(weather)),
		"ujiindoorloc/trainingData.csv.xz":   xzBytes(t, []byte(uji)),
		"ujiindoorloc/validationData.csv.xz": xzBytes(t, []byte(strings.Replace(uji, ",23,", ",0,", 1))),
	})
	train, test, err := LoadStandard(dir, "weather-aus")
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, train)
	checkDataset(t, test)
	if train.N != 2 || test.N != 17 || train.D != 16 || !slices.Equal(distinctGroups(train), []string{"Albury"}) || slices.Contains(distinctGroups(test), "Albury") {
		t.Fatalf("train %d×%d %q, test %d %q", train.N, train.D, distinctGroups(train), test.N, distinctGroups(test))
	}
	train, test, err = LoadStandard(dir, "ujiindoorloc")
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, train)
	if !slices.Equal(train.Classes, []string{"B1F2", "B2F0"}) || !slices.Equal(train.Features, []string{"WAP001", "WAP002"}) ||
		!slices.Equal(train.X, []float32{-60, -110, -110, -80}) || !slices.Equal(test.Classes, train.Classes) {
		t.Fatalf("classes %q features %q X %v", train.Classes, train.Features, train.X)
	}
	if !slices.Equal(distinctGroups(train), []string{"23", "13"}) || !slices.Equal(distinctGroups(test), []string{"0", "13"}) {
		t.Fatalf("phones %q / %q", distinctGroups(train), distinctGroups(test))
	}
	// A test station that is not in the file is an error, not an empty test set.
	if _, _, err := splitGroups(train, []string{"Nowhere"}); !errors.Is(err, ErrOptions) {
		t.Fatalf("unknown test group: %v", err)
	}
}

// TestDefaultDir: ../shared/data is found from a subdirectory of the
// directory that has it (the README's try/), as a relative path; $TRIT_DATA
// wins; with none up to the root it is ../shared/data.
func TestDefaultDir(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"shared/data", "repo/try/deeper"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TRIT_DATA", "")
	for dir, want := range map[string]string{
		"repo":            "../shared/data",
		"repo/try":        "../../shared/data",
		"repo/try/deeper": "../../../shared/data",
	} {
		t.Chdir(filepath.Join(root, dir))
		if got := DefaultDir(); got != want {
			t.Errorf("from %s: %q, want %q", dir, got, want)
		}
	}
	t.Chdir(t.TempDir())
	if got := DefaultDir(); got != "../shared/data" {
		t.Errorf("with none: %q", got)
	}
	t.Setenv("TRIT_DATA", "/srv/data")
	if got := DefaultDir(); got != "/srv/data" {
		t.Errorf("TRIT_DATA: %q", got)
	}
}
