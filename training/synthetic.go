package training

import (
	"math"

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
