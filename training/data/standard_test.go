package data

import (
	"os"
	"slices"
	"testing"
	"time"
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
		})
	}
}

// TestCovtypeFull checks the full covtype file against the UCI class table
// and the class-2-vs-rest counts.
func TestCovtypeFull(t *testing.T) {
	dir := os.Getenv("TRIT_DATA")
	if dir == "" {
		t.Skip("TRIT_DATA not set")
	}
	d, err := Load(dir+"/covtype/covtype.data.xz", &Options{LabelColumn: -1})
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
