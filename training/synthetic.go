package training

import (
	"math"
	"strconv"

	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/internal/splitmix"
)

// TwoCircles returns the paper's synthetic "circle" dataset: n points in the
// plane, half on a circle of radius 1 (class "outer") and half on a circle of
// radius factor (class "inner"), each with Gaussian noise of standard
// deviation noise in both coordinates. No linear classifier separates them;
// a Gaussian-kernel one does. Deterministic for a seed.
func TwoCircles(n int, factor, noise float64, seed uint64) *data.Dataset {
	r := splitmix.New(seed)
	uniform := r.Float64
	gauss := func() float64 {
		// Box–Muller; this generator feeds tests and demos, not models, so
		// the platform's math functions are fine here.
		u1, u2 := uniform(), uniform()
		return math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
	}
	ds := &data.Dataset{
		Name:     "two-circles",
		N:        n,
		D:        2,
		X:        make([]float32, 0, 2*n),
		Y:        make([]int32, n),
		Classes:  []string{"inner", "outer"},
		Features: []string{"x", "y"},
	}
	for i := range n {
		radius, class := factor, int32(0)
		if i%2 == 1 {
			radius, class = 1, 1
		}
		angle := 2 * math.Pi * uniform()
		ds.X = append(ds.X,
			float32(radius*math.Cos(angle)+noise*gauss()),
			float32(radius*math.Sin(angle)+noise*gauss()))
		ds.Y[i] = class
	}
	return ds
}

// OfficeSeries returns a synthetic, time-ordered, nearly linear sensor
// series like an office occupancy logger: n readings a minute apart of
// temperature, humidity, light, CO₂ and humidity ratio that drift slowly
// (random walks) and jump when the room is occupied; the label is
// "occupied" when a noisy linear score of the readings is high, which
// happens in runs (working hours) covering about a quarter of the rows.
// Neighbouring rows are nearly identical, so a random validation split
// leaks; occasional sensor spikes (one reading in 500, 50× the usual
// range) stress the scaling. Deterministic for a seed.
func OfficeSeries(n int, seed uint64) *data.Dataset {
	r := splitmix.New(seed)
	uniform := r.Float64
	gauss := func() float64 {
		u1, u2 := uniform(), uniform()
		return math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
	}
	ds := &data.Dataset{
		Name:     "office-series",
		N:        n,
		D:        5,
		X:        make([]float32, 0, 5*n),
		Y:        make([]int32, n),
		Classes:  []string{"empty", "occupied"},
		Features: []string{"temperature", "humidity", "light", "co2", "humidity_ratio"},
	}
	temp, hum, co2 := 21.0, 30.0, 450.0
	occupied := false
	for i := range n {
		// Occupied runs last 80 minutes on average, empty ones 240.
		if u := uniform(); occupied && u < 1.0/80 || !occupied && u < 1.0/240 {
			occupied = !occupied
		}
		occ := 0.0
		if occupied {
			occ = 1
		}
		temp += 0.01*gauss() + 0.004*(occ*22.5+(1-occ)*20.5-temp)
		hum += 0.05*gauss() + 0.002*(30-hum)
		co2 += 3*gauss() + 0.02*(occ*900+(1-occ)*430-co2)
		light := 30 + occ*250 + 120*gauss()
		ratio := 0.0045 + 0.00001*hum + 0.0002*gauss()
		row := []float64{temp, hum, light, co2, ratio}
		if uniform() < 1.0/500 {
			k := r.Intn(5)
			row[k] *= 50
		}
		for _, v := range row {
			ds.X = append(ds.X, float32(v))
		}
		// The label is what the sensors say, with a little noise: a linear
		// rule on light and CO₂.
		score := (light-155)/120 + (co2-665)/250 + 0.8*gauss()
		if score > 0 {
			ds.Y[i] = 1
		}
	}
	return ds
}

// DriftingSensors returns a synthetic, time-ordered recording of an array
// of d chemical-style sensors telling k classes (gases) apart, whose
// response drifts as the sensors age: each class has a fixed response
// pattern over the sensors, weak on each and clear over all of them; each
// sensor's offset wanders (a slow random walk) and its gain with it, so
// the same gas reads differently later — by the end of the n readings the
// offsets have moved by about twice a class pattern's size — and the
// class is held for runs of about 50 readings. A model fitted on the
// early rows meets shifted inputs later and its accuracy falls with time:
// the stream for whether "unknown" rises with the errors, and for the
// search's time on a wide recording. Deterministic for a seed.
func DriftingSensors(n, d, k int, seed uint64) *data.Dataset {
	r := splitmix.New(seed)
	gauss := func() float64 {
		u1, u2 := r.Float64(), r.Float64()
		return math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
	}
	ds := &data.Dataset{Name: "drifting-sensors", N: n, D: d, X: make([]float32, 0, n*d), Y: make([]int32, n), Ordered: true}
	for c := range k {
		ds.Classes = append(ds.Classes, "gas"+strconv.Itoa(c))
	}
	for j := range d {
		ds.Features = append(ds.Features, "s"+strconv.Itoa(j))
	}
	scale := 1.5 / math.Sqrt(float64(d)) // each pattern's size on one sensor
	step := 2 * scale / math.Sqrt(float64(max(n, 1)))
	pattern := make([]float64, k*d) // class c's response on sensor j
	for i := range pattern {
		pattern[i] = scale * gauss()
	}
	gain, offset := make([]float64, d), make([]float64, d)
	for j := range gain {
		gain[j] = 1
	}
	class := 0
	for i := range n {
		if r.Float64() < 1.0/50 {
			class = r.Intn(k)
		}
		ds.Y[i] = int32(class)
		for j := range d {
			gain[j] = max(0.2, gain[j]+step*gauss())
			offset[j] += step * gauss()
			v := gain[j]*pattern[class*d+j] + offset[j] + 0.3*scale*gauss()
			ds.X = append(ds.X, float32(v))
		}
	}
	return ds
}
