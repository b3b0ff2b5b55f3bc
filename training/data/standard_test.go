package data

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
)

// TestStandards loads every shared dataset and checks the counts recorded in
// PROVENANCE.md. It needs the real data: set TRIT_DATA to the shared data
// directory (e.g. /work/shared/data).
func TestStandards(t *testing.T) {
	dir := os.Getenv("TRIT_DATA")
	if dir == "" {
		t.Skip("TRIT_DATA not set; skipping the smoke test on the shared datasets")
	}
	tests := []struct {
		name                    string
		nTrain, nTest, d        int
		classes                 []string
		trainCounts, testCounts []int // per class, in Classes order; nil: unchecked
	}{
		{"usps", 7291, 2007, 256, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"},
			[]int{1194, 1005, 731, 658, 652, 556, 664, 645, 542, 644},
			[]int{359, 264, 198, 166, 200, 160, 170, 147, 166, 177}},
		{"mnist", 60000, 10000, 784, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"},
			[]int{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949},
			[]int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}},
		{"covtype", 464810, 116202, 54, []string{"rest", "2"}, nil, nil},
		{"ijcnn1", 49990, 91701, 22, []string{"-1", "1"}, []int{45137, 4853}, []int{82989, 8712}},
		{"cod-rna", 59535, 271617, 8, []string{"-1", "1"}, []int{39690, 19845}, []int{181078, 90539}},
		{"a9a", 32561, 16281, 123, []string{"-1", "1"}, []int{24720, 7841}, []int{12435, 3846}},
		{"w8a", 49749, 14951, 300, []string{"-1", "1"}, []int{48270, 1479}, []int{14497, 454}},
		{"occupancy", 7090, 3039, 16, []string{"0", "1", "2", "3"}, []int{5483, 459, 655, 493}, []int{2745, 0, 93, 201}},
		{"eeg-eye-state", 10486, 4494, 14, []string{"0", "1"}, []int{4922, 5564}, []int{3335, 1159}},
		// Classes sort lexically: Move-Forward, Sharp-Right-Turn, Slight-Left-Turn, Slight-Right-Turn.
		{"wall-following", 3817, 1639, 24, wallClasses, []int{1543, 1467, 229, 578}, []int{662, 630, 99, 248}},
		{"wall-following-chrono", 3819, 1637, 24, wallClasses, []int{1535, 1480, 221, 583}, []int{670, 617, 107, 243}},
		{"electricity", 31718, 13594, 7, []string{"DOWN", "UP"}, []int{18323, 13395}, []int{7752, 5842}},
		{"noaa-weather", 12711, 5448, 8, []string{"0", "1"}, []int{8955, 3756}, []int{3506, 1942}},
		{"ozone-eighthr", 1773, 761, 72, []string{"0", "1"}, []int{1642, 131}, []int{732, 29}},
		{"seismic-bumps", 1808, 776, 18, []string{"0", "1"}, []int{1664, 144}, []int{750, 26}},
		{"ujiindoorloc", 19937, 1111, 520, []string{"B0F0", "B0F1", "B0F2", "B0F3", "B1F0", "B1F1", "B1F2", "B1F3", "B2F0", "B2F1", "B2F2", "B2F3", "B2F4"},
			[]int{1059, 1356, 1443, 1391, 1368, 1484, 1396, 948, 1942, 2162, 1577, 2709, 1102},
			[]int{78, 208, 165, 85, 30, 143, 87, 47, 24, 111, 54, 40, 39}},
		{"weather-aus", 93856, 48337, 16, []string{"No", "Yes"}, []int{72237, 21619}, []int{38079, 10258}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			train, test, err := LoadStandard(dir, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: loaded %d+%d rows × %d in %v", tt.name, train.N, test.N, train.D, time.Since(start).Round(time.Millisecond))
			if train.N != tt.nTrain || test.N != tt.nTest || train.D != tt.d || test.D != tt.d {
				t.Errorf("got %d×%d train, %d×%d test; want %d×%d, %d×%d",
					train.N, train.D, test.N, test.D, tt.nTrain, tt.d, tt.nTest, tt.d)
			}
			if !slices.Equal(train.Classes, tt.classes) || !slices.Equal(test.Classes, tt.classes) {
				t.Errorf("classes %q / %q, want %q", train.Classes, test.Classes, tt.classes)
			}
			if tt.trainCounts != nil && !slices.Equal(classCounts(train), tt.trainCounts) {
				t.Errorf("train class counts %v, want %v", classCounts(train), tt.trainCounts)
			}
			if tt.testCounts != nil && !slices.Equal(classCounts(test), tt.testCounts) {
				t.Errorf("test class counts %v, want %v", classCounts(test), tt.testCounts)
			}
			checkDataset(t, train)
			checkDataset(t, test)
		})
	}
}

// distinctGroups returns the names of the groups d's rows are in.
func distinctGroups(d *Dataset) []string {
	var out []string
	for _, g := range d.Groups {
		if n := d.GroupNames[g]; !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

var wallClasses = []string{"Move-Forward", "Sharp-Right-Turn", "Slight-Left-Turn", "Slight-Right-Turn"}

// TestSensorStandards checks what PROVENANCE.md says of the sensor sets
// beyond their counts: feature names, time order and the exact split.
func TestSensorStandards(t *testing.T) {
	dir := os.Getenv("TRIT_DATA")
	if dir == "" {
		t.Skip("TRIT_DATA not set")
	}
	t.Run("occupancy", func(t *testing.T) {
		train, test, err := LoadStandard(dir, "occupancy")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"S1_Temp", "S2_Temp", "S3_Temp", "S4_Temp", "S1_Light", "S2_Light", "S3_Light", "S4_Light",
			"S1_Sound", "S2_Sound", "S3_Sound", "S4_Sound", "S5_CO2", "S5_CO2_Slope", "S6_PIR", "S7_PIR"}
		if !slices.Equal(train.Features, want) || !slices.Equal(test.Features, want) {
			t.Fatalf("features %q", train.Features)
		}
		at := func(s string) int64 {
			v, _ := time.Parse("2006-01-02 15:04:05", s)
			return v.UnixNano()
		}
		// PROVENANCE: train 2017-12-22 10:49:41 … 2017-12-26 00:35:20, test from 00:35:51 to 2018-01-11 09:00:09.
		if train.Times[0] != at("2017-12-22 10:49:41") || train.Times[train.N-1] != at("2017-12-26 00:35:20") ||
			test.Times[0] != at("2017-12-26 00:35:51") || test.Times[test.N-1] != at("2018-01-11 09:00:09") {
			t.Fatalf("times %d…%d, %d…%d", train.Times[0], train.Times[train.N-1], test.Times[0], test.Times[test.N-1])
		}
		if !train.Ordered || !test.Ordered {
			t.Fatal("not ordered")
		}
		if got := train.Spec.String(); got != `format=csv delimiter=',' header=yes label="Room_Occupancy_Count" time="Date","Time" features=`+quoteJoin(want)+` d=16` {
			t.Fatalf("spec %s", got)
		}
		if !slices.Equal(train.Row(0), []float32{24.94, 24.75, 24.56, 25.38, 121, 34, 53, 40, 0.08, 0.19, 0.06, 0.06, 390, 0.769230769231, 0, 0}) {
			t.Fatalf("first row %v", train.Row(0))
		}
	})
	t.Run("seismic-bumps", func(t *testing.T) {
		train, _, err := LoadStandard(dir, "seismic-bumps")
		if err != nil {
			t.Fatal(err)
		}
		// The first data line: a,a,N,15180,48,-72,-72,a,0,0,0,0,0,0,0,0,0,0,0 (a = 0, N = 1).
		if !train.Ordered || !slices.Equal(train.Row(0), []float32{0, 0, 1, 15180, 48, -72, -72, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) {
			t.Fatalf("ordered %v, first row %v", train.Ordered, train.Row(0))
		}
	})
	t.Run("ujiindoorloc", func(t *testing.T) {
		train, test, err := LoadStandard(dir, "ujiindoorloc")
		if err != nil {
			t.Fatal(err)
		}
		// 16 training phones, 11 test ones: 13 and 14 in both.
		if phones := distinctGroups(train); len(phones) != 16 || len(distinctGroups(test)) != 11 {
			t.Fatalf("phones %v / %v", phones, distinctGroups(test))
		}
		if slices.Contains(train.X, 100) || train.Features[0] != "WAP001" || train.Features[519] != "WAP520" {
			t.Fatalf("features %q…, a WAP still 100", train.Features[:2])
		}
	})
	t.Run("weather-aus", func(t *testing.T) {
		train, test, err := LoadStandard(dir, "weather-aus")
		if err != nil {
			t.Fatal(err)
		}
		if len(distinctGroups(train)) != 32 || len(distinctGroups(test)) != 17 || train.GroupNames[train.Groups[0]] != "Albury" {
			t.Fatalf("stations %d / %d", len(distinctGroups(train)), len(distinctGroups(test)))
		}
		// The first data line: 2008-12-01,Albury,13.4,22.9,0.6,NA,NA,W,44,W,WNW,20,24,71,22,1007.7,1007.1,8,NA,16.9,21.8,No,No
		nan := float32(math.NaN())
		want := []float32{13.4, 22.9, 0.6, nan, nan, 44, 20, 24, 71, 22, 1007.7, 1007.1, 8, nan, 16.9, 21.8}
		if !slices.EqualFunc(train.Row(0), want, func(a, b float32) bool { return a == b || a != a && b != b }) {
			t.Fatalf("first row %v", train.Row(0))
		}
	})
	t.Run("eeg-eye-state", func(t *testing.T) {
		train, test, err := LoadStandard(dir, "eeg-eye-state")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(train.Features, eegChannels) || !train.Ordered || !test.Ordered || train.Times != nil {
			t.Fatalf("features %q ordered %v/%v", train.Features, train.Ordered, test.Ordered)
		}
	})
	t.Run("wall-following", func(t *testing.T) {
		full, err := Load(filepath.Join(dir, "wall-following/sensor_readings_24.data"), &Standards()[9].Opt)
		if err != nil {
			t.Fatal(err)
		}
		if !full.Ordered || full.N != 5456 || full.Features != nil {
			t.Fatalf("%d rows, ordered %v, features %q", full.N, full.Ordered, full.Features)
		}
		tr, te := hashSplit(full, "42", 70)
		for _, c := range []struct {
			rows []int
			want string
		}{
			{tr, "9896714deee790576b81be97797b7492292ee8c1712f0095f0c93e0be37f034c"},
			{te, "9fc401ace99f2bee17a31186c358c4230e71ab0fcd29143ac720ef76dd752224"},
		} {
			h := sha256.New()
			for _, i := range c.rows {
				fmt.Fprintf(h, "%d\n", i)
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != c.want {
				t.Errorf("check hash of %d indices: %s, want %s (PROVENANCE.md)", len(c.rows), got, c.want)
			}
		}
		train, test, err := LoadStandard(dir, "wall-following")
		if err != nil {
			t.Fatal(err)
		}
		// The training rows keep file order: row k of train is file row tr[k].
		if !train.Ordered || !test.Ordered || !slices.Equal(train.Row(5), full.Row(tr[5])) || !slices.Equal(test.Row(7), full.Row(te[7])) {
			t.Fatal("split rows are not the file's rows in order")
		}
	})
}

func quoteJoin(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ",")
}

// TestRobustScalingEEG compares, on eeg-eye-state's training rows, the
// robust scaler's ranges with min-max's: the spikes (up to 715,897, see
// PROVENANCE.md) set the min-max range, not the robust one.
//
//	TRIT_DATA=/work/shared/data go test ./training/data -run RobustScalingEEG -v
func TestRobustScalingEEG(t *testing.T) {
	dir := os.Getenv("TRIT_DATA")
	if dir == "" {
		t.Skip("TRIT_DATA not set")
	}
	train, test, err := LoadStandard(dir, "eeg-eye-state")
	if err != nil {
		t.Fatal(err)
	}
	rs, mm := FitRobustScaler(train), FitScaler(train)
	// How much of [-1, 1] the ordinary test readings get: the width of
	// the scaled 1st–99th percentile range of each channel, out of 2.
	spread := func(s inference.Scaler) []float64 {
		w := make([]float64, test.D)
		dst := make([]float32, test.D)
		cols := make([][]float32, test.D)
		for i := range test.N {
			if err := s.Apply(dst, test.Row(i)); err != nil {
				t.Fatal(err)
			}
			for j, v := range dst {
				cols[j] = append(cols[j], v)
			}
		}
		for j, c := range cols {
			slices.Sort(c)
			w[j] = float64(c[len(c)*99/100] - c[len(c)/100])
		}
		return w
	}
	sr, sm := spread(rs), spread(mm)
	t.Logf("%-4s %21s %21s  scaled width of the test 1–99%% range: robust, min-max", "", "robust [lo, hi]", "min-max [lo, hi]")
	for j, name := range train.Features {
		t.Logf("%-4s [%8.2f, %8.2f] [%8.2f, %9.2f] %6.3f %6.3f", name, rs.Lo[j], rs.Hi[j], mm.Lo[j], mm.Hi[j], sr[j], sm[j])
		if rs.Hi[j]-rs.Lo[j] > 1500 {
			t.Errorf("%s: robust range [%g, %g] is wider than the channel's ordinary readings", name, rs.Lo[j], rs.Hi[j])
		}
		if sr[j] <= sm[j] {
			t.Errorf("%s: ordinary readings get %.3f of the scale with robust scaling, %.3f with min-max", name, sr[j], sm[j])
		}
	}
	if slices.Max(mm.Hi) < 100000 {
		t.Errorf("min-max ranges %v: the spikes were expected to show", mm.Hi)
	}
}

// TestCovtypeFull checks the full covtype file against the UCI class table
// and the class-2-vs-rest counts.
func TestCovtypeFull(t *testing.T) {
	dir := os.Getenv("TRIT_DATA")
	if dir == "" {
		t.Skip("TRIT_DATA not set")
	}
	d, err := Load(dir+"/covtype/covtype.data.xz", &Options{LabelColumn: Column{Index: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{211840, 283301, 35754, 2747, 9493, 17367, 20510}; !slices.Equal(classCounts(d), want) {
		t.Errorf("class counts %v, want %v", classCounts(d), want)
	}
	_, test, err := LoadStandard(dir, "covtype")
	if err != nil {
		t.Fatal(err)
	}
	// Stratified: each class gets its proportional share of test rows.
	if got, want := classCounts(test), []int{59542, 56660}; !slices.Equal(got, want) {
		t.Errorf("test class counts %v, want %v", got, want)
	}
}
