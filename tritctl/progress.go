package tritctl

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/trit-iot/trit/training"
)

func stderrIsTerminal() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// progress turns training events into a progress bar on a terminal, or into
// a plain line at most every few seconds (and at each stage's end) when
// stderr is a log or a pipe. quiet disables both (used with --json).
type progress struct {
	e     *env
	quiet bool
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	stage string
	last  time.Time
}

func (p *progress) report(ev training.Event) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.e.isTerminal {
		if p.bar == nil || p.stage != ev.Stage {
			p.bar = progressbar.NewOptions(ev.Total,
				progressbar.OptionSetWriter(p.e.stderr),
				progressbar.OptionSetDescription(ev.Stage),
				progressbar.OptionShowCount(),
				progressbar.OptionSetElapsedTime(true),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionClearOnFinish())
			p.stage = ev.Stage
		}
		p.bar.Set(ev.Done)
		return
	}
	if ev.Stage != p.stage || ev.Done == ev.Total || time.Since(p.last) > 5*time.Second {
		fmt.Fprintf(p.e.stderr, "%s: %d/%d\n", ev.Stage, ev.Done, ev.Total)
		p.stage, p.last = ev.Stage, time.Now()
	}
}
