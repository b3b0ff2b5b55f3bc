package main

// The README's own-data path trains on docs/examples/room.csv and
// evaluates on docs/examples/room-next-week.csv: a week each of a room
// logger's readings, simulated here. TestExampleRoomLogs checks that the
// committed files are what roomLog makes; regenerate them with
//
//	go test ./cmd/tritctl -run TestExampleRoomLogs -update

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite docs/examples/room*.csv from the generator")

// The example files: the week to train on and the week after it.
var roomLogs = []struct {
	file  string
	start time.Time // a Monday
	seed  uint64
}{
	{"room.csv", time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC), 1},
	{"room-next-week.csv", time.Date(2024, 3, 11, 0, 0, 0, 0, time.UTC), 2},
}

func TestExampleRoomLogs(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "docs", "examples")
	for _, l := range roomLogs {
		want := roomLog(l.start, l.seed)
		path := filepath.Join(dir, l.file)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what roomLog makes: regenerate it with go test ./cmd/tritctl -run TestExampleRoomLogs -update", path)
		}
		if len(want) > 50<<10 {
			t.Errorf("%s has %d bytes: keep the examples small", l.file, len(want))
		}
	}
}

// rng is SplitMix64: a few lines, the same numbers on every platform and
// Go version (the files are golden).
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// uniform returns a number in [0, 1).
func (r *rng) uniform() float64 { return float64(r.next()>>11) / (1 << 53) }

// noise returns roughly normal noise of standard deviation sd: the sum of
// four uniforms, with no platform maths.
func (r *rng) noise(sd float64) float64 {
	s := r.uniform() + r.uniform() + r.uniform() + r.uniform() - 2
	return s * sd * 1.7320508 // the sum's SD is 1/√3
}

// roomLog returns a week of readings, every 15 minutes from start (a
// Monday), of an office's logger as it exports them: Date, Time,
// Temperature (°C), Humidity (%), Light (lux), CO2 (ppm) and the
// Occupancy someone noted: empty, occupied (its one occupant at work) or
// meeting (four to seven people). The occupant arrives about 8:00 and
// leaves about 17:30 on most weekdays, with a lunch break; meetings of 45
// to 90 minutes are held on most days, present or not. CO₂ follows the
// people in the room with a lag, lamps are on when someone is there, the
// heating keeps working hours, and daylight comes through the window
// every day, weekends included.
func roomLog(start time.Time, seed uint64) []byte {
	r := rng(seed)
	var b strings.Builder
	b.WriteString("Date,Time,Temperature,Humidity,Light,CO2,Occupancy\n")
	temp, hum, co2 := 18.5, 36.0, 430.0
	for day := range 7 {
		weekday := day < 5
		present := weekday && r.uniform() < 0.85
		arrive := 8*60 - 40 + int(r.uniform()*90)
		leave := 17*60 + int(r.uniform()*120)
		lunch := 12*60 + int(r.uniform()*40)
		var meetings [][2]int
		for range 2 {
			if weekday && r.uniform() < 0.6 {
				from := 9*60 + 15*int(r.uniform()*28)
				meetings = append(meetings, [2]int{from, from + 45 + 15*int(r.uniform()*4)})
			}
		}
		cloud := 0.4 + 0.6*r.uniform()
		for step := range 96 {
			at := start.Add(time.Duration(day*96+step) * 15 * time.Minute)
			m := step * 15
			state, people := "empty", 0.0
			if present && m >= arrive && m < leave && (m < lunch || m >= lunch+45) {
				state, people = "occupied", 1
			}
			for _, mt := range meetings {
				if m >= mt[0] && m < mt[1] {
					state, people = "meeting", 4+float64(int(r.uniform()*4))
				}
			}
			setpoint := 18.0
			if weekday && m >= 6*60+30 && m < 18*60 {
				setpoint = 21.0
			}
			temp += 0.3*(setpoint+0.15*people-temp) + r.noise(0.05)
			hum += 0.2*(38+1.2*people-hum) + r.noise(0.3)
			co2 += 0.35*(430+250*people-co2) + r.noise(8)
			h := float64(m) / 60
			daylight := max(0, 1-(h-13)*(h-13)/30) * 250 * (cloud + r.noise(0.1))
			lamps := 0.0
			if people > 0 && r.uniform() < 0.95 {
				lamps = 350 + r.noise(20)
			}
			light := max(0, daylight+lamps+r.noise(3))
			fmt.Fprintf(&b, "%s,%s,%.2f,%.2f,%.0f,%.0f,%s\n", at.Format("2006-01-02"), at.Format("15:04:05"), temp, hum, light, co2, state)
		}
	}
	return []byte(b.String())
}
