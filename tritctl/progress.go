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
//
// A stage's total can be an estimate (the search stops early when a
// candidate cannot catch up), so a stage ends when the next one starts or
// finish is called, at 100%: its total becomes what was done.
type progress struct {
	e     *env
	quiet bool
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	stage string
	// done and total of the current stage; printed is the last count a
	// line showed.
	done, total, printed int
	estimate             int // the total as first announced
	last                 time.Time
}

func (p *progress) report(ev training.Event) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Stage != p.stage {
		p.endStage()
		p.stage, p.estimate, p.printed = ev.Stage, ev.Total, -1
	}
	p.done, p.total = ev.Done, max(ev.Total, ev.Done) // an estimate exceeded
	if p.e.isTerminal {
		if p.bar == nil {
			p.bar = progressbar.NewOptions(p.total,
				progressbar.OptionSetWriter(p.e.stderr),
				progressbar.OptionSetDescription(ev.Stage),
				progressbar.OptionShowCount(),
				progressbar.OptionSetElapsedTime(true),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionClearOnFinish())
		}
		if p.bar.GetMax() != p.total {
			p.bar.ChangeMax(p.total)
		}
		p.bar.Set(p.done)
		return
	}
	if p.printed < 0 || p.done == p.total || time.Since(p.last) > 5*time.Second {
		p.line("")
	}
}

// finish ends the last stage (call it when training returns).
func (p *progress) finish() {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endStage()
	p.stage = ""
}

// endStage shows the current stage complete: its total is what was done.
func (p *progress) endStage() {
	if p.stage == "" {
		return
	}
	if p.e.isTerminal {
		if p.bar != nil {
			p.bar.ChangeMax(max(p.done, 1))
			p.bar.Set(max(p.done, 1))
			p.bar.Finish()
			p.bar = nil
		}
		return
	}
	if p.done < p.total {
		p.total = p.done
		p.line(fmt.Sprintf(" (done; %d estimated at the start)", p.estimate))
	} else if p.printed != p.done {
		p.line("")
	}
}

func (p *progress) line(note string) {
	fmt.Fprintf(p.e.stderr, "%s: %d/%d%s\n", p.stage, p.done, p.total, note)
	p.printed, p.last = p.done, time.Now()
}
