package benchmark

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
)

// PeersJob is meta.json of an export: what peers.py is asked to do.
type PeersJob struct {
	Dataset    string   `json:"dataset"`
	Classes    []string `json:"classes"`
	Budget     int      `json:"budget"`
	Curve      []int    `json:"curve,omitempty"`
	Methods    []string `json:"methods"`
	Validation string   `json:"validation"`
	Seed       uint64   `json:"seed"`
	Threads    int      `json:"threads"`   // 0: all cores
	TuneRows   int      `json:"tune_rows"` // 0: all
	RBFRows    int      `json:"rbf_rows"`  // 0: skip rbf-svm
	FitRows    int      `json:"fit_rows"`  // 0: all
	// Files, relative to the export directory.
	XTrain string     `json:"x_train"`
	YTrain string     `json:"y_train"`
	XTest  string     `json:"x_test"`
	YTest  string     `json:"y_test"`
	Folds  []foldFile `json:"folds"`
}

type foldFile struct {
	Train string `json:"train"` // row indices into the training rows
	Valid string `json:"valid"`
}

// Export writes, into dir, what peers.py reads: the training and test rows
// scaled by sc (float32 N×D .npy), their class indices (int32 .npy), each
// validation fold's row indices (int32 .npy, into the training rows) and
// meta.json describing job.
func Export(dir string, job *PeersJob, sc *inference.Scaler, train, test *data.Dataset, folds []data.Fold) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	j := *job
	j.XTrain, j.YTrain, j.XTest, j.YTest = "x_train.npy", "y_train.npy", "x_test.npy", "y_test.npy"
	for _, s := range []struct {
		ds    *data.Dataset
		x, y  string
		label string
	}{{train, j.XTrain, j.YTrain, "training"}, {test, j.XTest, j.YTest, "test"}} {
		if s.ds.D != len(sc.Lo) {
			return fmt.Errorf("%s rows have %d features, the scaler %d", s.label, s.ds.D, len(sc.Lo))
		}
		if err := writeScaled(filepath.Join(dir, s.x), sc, s.ds); err != nil {
			return err
		}
		if err := writeInt32(filepath.Join(dir, s.y), len(s.ds.Y), func(i int) int32 { return s.ds.Y[i] }); err != nil {
			return err
		}
	}
	j.Folds = nil
	for k, f := range folds {
		ff := foldFile{Train: fmt.Sprintf("fold%d_train.npy", k), Valid: fmt.Sprintf("fold%d_valid.npy", k)}
		for _, part := range []struct {
			name string
			rows []int
		}{{ff.Train, f.Train}, {ff.Valid, f.Valid}} {
			for _, i := range part.rows {
				if i < 0 || i >= train.N || i > math.MaxInt32 {
					return fmt.Errorf("fold %d: row %d out of range (%d training rows)", k, i, train.N)
				}
			}
			if err := writeInt32(filepath.Join(dir, part.name), len(part.rows), func(i int) int32 { return int32(part.rows[i]) }); err != nil {
				return err
			}
		}
		j.Folds = append(j.Folds, ff)
	}
	return writeJSONFile(filepath.Join(dir, "meta.json"), &j)
}

// npyHeader returns a NumPy .npy version 1.0 header for a C-order array of
// dtype descr ('<f4', '<i4') and shape, padded so the data starts at a
// multiple of 64 bytes.
func npyHeader(descr string, shape ...int) []byte {
	sh := ""
	for _, n := range shape {
		sh += fmt.Sprintf("%d, ", n)
	}
	if len(shape) > 1 {
		sh = sh[:len(sh)-2]
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, sh)
	total := 10 + len(dict) + 1
	pad := (64 - total%64) % 64
	h := []byte("\x93NUMPY\x01\x00")
	h = binary.LittleEndian.AppendUint16(h, uint16(len(dict)+pad+1))
	h = append(h, dict...)
	for range pad {
		h = append(h, ' ')
	}
	return append(h, '\n')
}

func writeScaled(path string, sc *inference.Scaler, ds *data.Dataset) error {
	return writeNPY(path, npyHeader("<f4", ds.N, ds.D), func(w *bufio.Writer) error {
		row := make([]float32, ds.D)
		var b [4]byte
		for i := range ds.N {
			if err := sc.Apply(row, ds.Row(i)); err != nil {
				return fmt.Errorf("row %d: %w", i, err)
			}
			for _, v := range row {
				binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
				w.Write(b[:])
			}
		}
		return nil
	})
}

func writeInt32(path string, n int, at func(int) int32) error {
	return writeNPY(path, npyHeader("<i4", n), func(w *bufio.Writer) error {
		var b [4]byte
		for i := range n {
			binary.LittleEndian.PutUint32(b[:], uint32(at(i)))
			w.Write(b[:])
		}
		return nil
	})
}

func writeNPY(path string, header []byte, body func(*bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.Write(header)
	if err := body(w); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

func numCPU() int { return runtime.NumCPU() }
