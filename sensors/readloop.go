package sensors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/trit-iot/trit/sensors/features"
)

// maxReadErrors is how many consecutive read errors ReadLoop tolerates.
const maxReadErrors = 3

// LoopOptions configures ReadLoop. Zero fields mean defaults; a nil
// *LoopOptions means all defaults.
type LoopOptions struct {
	// Count is how many readings to take; 0 means until ctx is done or the
	// source ends.
	Count int
	// Every prints one reading in Every (default 1: all); the others still
	// feed the pipeline, whose feature lines are all printed. At 1 kHz,
	// Every = 1000 prints a reading a second.
	Every int
}

// ReadLoop reads from src and prints readings to w, one line each
//
//	2025-01-02T03:04:05.123Z accel.x=0.0123 accel.y=-0.004 ...
//
// followed by a "features" line whenever pipeline (nil for none), built on
// src's channels, has a vector ready. A read error is printed and the loop
// goes on; after several in a row it returns the last. It returns nil when
// ctx is done or the source ends.
func ReadLoop(ctx context.Context, w io.Writer, src Source, pipeline *features.Pipeline, o *LoopOptions) error {
	var opt LoopOptions
	if o != nil {
		opt = *o
	}
	n, every := opt.Count, max(opt.Every, 1)
	channels := src.Channels()
	var names []string
	var vec []float32
	if pipeline != nil {
		if !slices.Equal(pipeline.Channels(), channels) {
			return fmt.Errorf("sensors: the feature pipeline is built for channels %v, the source has %v", pipeline.Channels(), channels)
		}
		names = pipeline.FeatureNames()
	}
	p := &errWriter{w: w}
	var line []byte
	fails := 0
	for i := 0; n <= 0 || i < n; i++ {
		r, err := src.Read(ctx)
		switch {
		case ctx.Err() != nil, errors.Is(err, io.EOF):
			return p.err
		case err != nil:
			p.printf("error: %v\n", err)
			if fails++; fails >= maxReadErrors {
				return err
			}
			continue
		}
		fails = 0
		if i%every == 0 {
			line = r.Time.UTC().AppendFormat(line[:0], time.RFC3339Nano)
			for j, v := range r.Values {
				line = append(line, ' ')
				line = append(line, channels[j]...)
				line = append(line, '=')
				line = strconv.AppendFloat(line, v, 'g', 6, 64)
			}
			p.printf("%s\n", line)
			if p.err != nil {
				return p.err
			}
		}
		if pipeline == nil {
			continue
		}
		ready, err := pipeline.Push(r.Values)
		if err != nil {
			return err
		}
		if !ready {
			continue
		}
		vec = pipeline.Vector(vec)
		line = append(line[:0], "  features:"...)
		for j, v := range vec {
			line = append(line, ' ')
			line = append(line, names[j]...)
			line = append(line, '=')
			line = strconv.AppendFloat(line, float64(v), 'g', 6, 32)
		}
		p.printf("%s\n", line)
	}
	return p.err
}
