package synthetic

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"

	"github.com/trit-iot/trit/sensors/features"
)

// DefaultRate is the accelerometer sample rate of the simulation, in Hz.
const DefaultRate = 1000

// DefaultSpec is the feature pipeline the demo trains and runs with, on a
// synthetic source named "accel" (or an ADXL345 named "accel" at 1 kHz):
// for each axis, RMS, peak-to-peak and the energy below, around and above
// the shaft harmonics, plus the mean temperature; windows of 256 samples.
func DefaultSpec() features.PipelineSpec {
	bands := [][2]float64{{0, 50}, {50, 150}, {150, 500}}
	axis := func(ch string) features.Spec {
		return features.Spec{Channel: ch, Window: 256, Stats: []string{features.StatRMS, features.StatP2P}, Bands: bands}
	}
	return features.PipelineSpec{Rate: DefaultRate, Features: []features.Spec{
		axis("accel.x"), axis("accel.y"), axis("accel.z"),
		{Channel: "accel.temperature", Window: 256, Stats: []string{features.StatMean}},
	}}
}

// DatasetOptions configures MakeDataset. Zero fields mean defaults; a nil
// *DatasetOptions means all defaults.
type DatasetOptions struct {
	Spec     *features.PipelineSpec // default DefaultSpec(); channels named "accel.*"
	PerState int                    // rows per state (default 500)
	Seed     uint64
}

// Dataset is a labelled feature dataset.
type Dataset struct {
	Features []string    // feature names, in column order
	Rows     [][]float32 // one feature vector per row
	Labels   []State     // the state each row was generated in
}

// MakeDataset simulates PerState independent machine segments per state,
// runs each through the real feature pipeline and returns one row per
// segment, in a shuffled (seeded) order.
func MakeDataset(o *DatasetOptions) (*Dataset, error) {
	var c DatasetOptions
	if o != nil {
		c = *o
	}
	spec := DefaultSpec()
	if c.Spec != nil {
		spec = *c.Spec
	}
	if c.PerState <= 0 {
		c.PerState = 500
	}
	rate := spec.Rate
	if rate == 0 {
		rate = DefaultRate
	}
	channels := Channels("accel")
	p, err := features.NewPipeline(spec, channels)
	if err != nil {
		return nil, fmt.Errorf("synthetic: dataset spec: %w", err)
	}
	d := &Dataset{Features: p.FeatureNames()}
	vals := make([]float64, len(channels))
	for _, st := range States {
		for i := range c.PerState {
			m := NewMachine(st, rate, c.Seed*1_000_003+uint64(st)*100_000+uint64(i))
			p.Reset()
			for ready := false; !ready; {
				vals[0], vals[1], vals[2], vals[3] = m.Next()
				ready, _ = p.Push(vals)
			}
			d.Rows = append(d.Rows, p.Vector(nil))
			d.Labels = append(d.Labels, st)
		}
	}
	r := rand.New(rand.NewPCG(c.Seed, 0x64617461))
	r.Shuffle(len(d.Rows), func(i, j int) {
		d.Rows[i], d.Rows[j] = d.Rows[j], d.Rows[i]
		d.Labels[i], d.Labels[j] = d.Labels[j], d.Labels[i]
	})
	return d, nil
}

// WriteCSV writes the dataset with a header row, "label" first and then the
// feature names; the label is the state's integer value (0 normal,
// 1 imbalance, 2 bearing_fault).
func (d *Dataset) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("label")
	for _, f := range d.Features {
		bw.WriteByte(',')
		bw.WriteString(f)
	}
	bw.WriteByte('\n')
	var buf []byte
	for i, row := range d.Rows {
		buf = strconv.AppendInt(buf[:0], int64(d.Labels[i]), 10)
		for _, v := range row {
			buf = append(buf, ',')
			buf = strconv.AppendFloat(buf, float64(v), 'g', -1, 32)
		}
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	return bw.Flush()
}
