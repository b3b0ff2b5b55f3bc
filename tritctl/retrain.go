package tritctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/retrain"
)

// errNotBetter is retrain's failure when the challenger loses: no bundle.
var errNotBetter = errors.New("no challenger proposed")

// retrainSummary is retrain --json's output.
type retrainSummary struct {
	Model      string         `json:"model"`
	Release    uint64         `json:"release"` // the active model's
	Windows    int            `json:"labelled_windows"`
	Skipped    int            `json:"skipped_windows,omitempty"` // of other features than the active model's
	Newest     int            `json:"newest_windows"`
	Original   int            `json:"original_rows"`
	Trained    int            `json:"trained_rows"`
	MaxCopies  int            `json:"max_copies"`
	Active     retrain.Scores `json:"active"`
	Challenger retrain.Scores `json:"challenger"`
	Better     bool           `json:"better"`
	Why        string         `json:"why"`
	Refitted   bool           `json:"refitted,omitempty"`
	RefitError string         `json:"refit_error,omitempty"`
	Out        string         `json:"out,omitempty"` // the unsigned bundle written
	OutRelease uint64         `json:"out_release,omitempty"`
	Seconds    float64        `json:"seconds"`
}

func newRetrainCmd(e *env) *cobra.Command {
	var ff fleetFlags
	var df dataFlags
	var out string
	var release uint64
	var force, asJSON bool
	var since string
	var budget, workers, p int
	var newest, sigma, cReg float64
	var onFleet, activeHash string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "retrain MODEL-ID --active BUNDLE (--standard NAME | --data FILE) -o CHALLENGER.trit",
		Short: "Train a challenger on the model's original data and the fleet's labelled windows; propose it only if better",
		Long: `Retrain a model on its original training data (--data FILE, read as the
active bundle's training file was, or --standard NAME's training split)
plus the windows labelled in the fleet's store for MODEL-ID ('tritctl
samples label'), newer weighted more, and compare the challenger with the
active model (--active, the bundle in service) on the newest labelled
windows: accuracy, balanced accuracy, calibration error and unknown rate.
The challenger is written to -o as an unsigned bundle (release --release,
default the active release + 1) only if it is better there: neither its
accuracy nor its balanced accuracy lower, one of them higher. Otherwise
nothing is written and the command fails, saying why.

The feature pipeline and columns are the active model's: the original data
must have its features, and labelled windows of other features are
skipped (said so). docs/FLEET.md "Closing the loop" has the weights, the
hold-out of the newest windows and the refit.

With --on-fleet DATASET the fleet runs the same retraining as a training
job (its original data in the fleet's training data directory, the active
bundle from its registry) and the challenger, if better, is downloaded.

Sign the challenger offline (tritctl bundle sign), publish it, and shadow
it before promoting it (tritctl rollout create --shadow).`,
		Example: `  tritctl retrain occupancy --active occupancy-3.trit --standard occupancy -o occupancy-4.trit
  tritctl retrain vib --active vib-3.trit --data vib-train.csv -o vib-4.trit --json
  tritctl retrain vib --on-fleet vib/train.csv -o vib-4.trit`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			modelID := args[0]
			if out == "" {
				return usagef("give the challenger's file with -o")
			}
			if _, err := os.Lstat(out); err == nil && !force {
				return fmt.Errorf("%s: %w (use --force to replace it)", out, errExists)
			}
			if err := structureFlags(df.cmd, p, 0, 0); err != nil {
				return err
			}
			activePath, _ := cmdFlag(&df, "active")
			if onFleet != "" {
				if activePath != "" || df.standard != "" || dataPath(&df) != "" {
					return usagef("--on-fleet DATASET names the original data on the fleet and --active-bundle the active bundle there: not --active, --standard or --data")
				}
				return retrainOnFleet(e, &ff, api.TrainRequest{Dataset: onFleet, ModelID: modelID, Release: release, Retrain: true, Active: activeHash,
					Budget: budget, P: p, Sigma: sigma, C: cReg}, out, force, asJSON, interval)
			}
			if activePath == "" {
				return usagef("give the active model's bundle with --active (or retrain --on-fleet)")
			}
			if (df.standard == "") == (dataPath(&df) == "") {
				return usagef("give the original training data: --standard NAME or --data FILE")
			}
			if err := df.standardOnly(); err != nil {
				return err
			}
			raw, err := readFileCapped(activePath, "bundle file", maxFileSize)
			if err != nil {
				return err
			}
			active, br, err := decodeModel(activePath, raw)
			if err != nil {
				return err
			}
			if br.ModelID != modelID {
				return fmt.Errorf("%s is model %s, not %s", activePath, br.ModelID, modelID)
			}
			orig, err := retrainOriginal(&df, active, readSpecOf(br.Bundle))
			if err != nil {
				return err
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			q := api.WindowQuery{Model: modelID, Labelled: ptr(true)}
			if since != "" {
				if q.Since, err = time.Parse(time.RFC3339, since); err != nil {
					return usagef("--since %q: want an RFC 3339 time", since)
				}
			}
			list, err := c.Windows(q)
			if err != nil {
				return err
			}
			warnDamagedWindows(e.stderr, list.Damaged)
			ws, skipped := fieldWindows(list.Windows, active)
			if len(ws) < retrain.MinWindows {
				return fmt.Errorf("%d labelled windows of model %s with its features in the fleet's store (%d others skipped): label at least %d ('tritctl samples pull', then 'tritctl samples label')",
					len(ws), modelID, skipped, retrain.MinWindows)
			}
			cfg := &retrain.Config{Newest: newest, Train: &training.Config{Budget: budget, P: p, Sigma: sigma, C: cReg, Seed: 1, Workers: workers}}
			if !asJSON {
				fmt.Fprintf(e.stderr, "retraining %s on %d original rows and %d labelled windows…\n", modelID, orig.N, len(ws))
			}
			res, err := retrain.Run(context.Background(), active, orig, ws, cfg)
			if err != nil {
				return err
			}
			s := retrainSummary{Model: modelID, Release: br.Release, Windows: res.Windows, Skipped: skipped, Newest: res.Newest,
				Original: res.OriginalRows, Trained: res.TrainedRows, MaxCopies: res.MaxCopies, Active: res.Active, Challenger: res.Challenger,
				Better: res.Better, Why: res.Why, Refitted: res.Refitted, RefitError: res.RefitError, Seconds: res.Seconds}
			if res.Better {
				if release == 0 {
					release = br.Release + 1
				}
				b, err := res.Model.Bundle(orig, training.BundleMeta{ModelID: modelID, Release: release, Hardware: br.Bundle.Compat.Hardware})
				if err != nil {
					return err
				}
				if err := writeFileAtomic(out, b, 0o644, force); err != nil {
					return err
				}
				s.Out, s.OutRelease = out, release
			}
			if asJSON {
				if err := writeJSON(e.stdout, s); err != nil {
					return err
				}
			} else {
				printRetrain(e.stdout, &s)
			}
			if !res.Better {
				return fmt.Errorf("%w: %s", errNotBetter, res.Why)
			}
			return nil
		},
	}
	ff.register(cmd)
	df.add(cmd)
	fl := cmd.Flags()
	fl.String("active", "", "the active model's bundle (signed or not); required unless --on-fleet")
	fl.StringVar(&onFleet, "on-fleet", "", "retrain on trit-fleet instead: the original data's path in its training data directory, or standard:NAME")
	fl.StringVar(&activeHash, "active-bundle", "", "with --on-fleet: the active bundle's hash (default: the model's latest release)")
	fl.DurationVar(&interval, "interval", 2*time.Second, "with --on-fleet: polling interval")
	fl.String("data", "", "the original training data file (read as the active bundle's training file was)")
	fl.StringVarP(&out, "out", "o", "", "where to write the challenger, an unsigned bundle (required)")
	fl.Uint64Var(&release, "release", 0, "the challenger's release (default: the active release + 1)")
	fl.BoolVar(&force, "force", false, "replace --out if it exists")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object")
	fl.StringVar(&since, "since", "", "only windows read at or after this RFC 3339 time")
	fl.IntVar(&budget, "budget", training.DefaultBudget, "the challenger's bundle size to fill, bytes")
	fl.IntVar(&workers, "workers", 0, "goroutines (0: all cores)")
	fl.IntVar(&p, "p", 0, "fix the number of random features instead of filling --budget (as tritctl train)")
	fl.Float64Var(&sigma, "sigma", 0, "kernel width σ (0: search, as tritctl train)")
	fl.Float64Var(&cReg, "c", 0, "regularisation C (0: search)")
	fl.Float64Var(&newest, "newest", retrain.DefaultNewest, "share of the labelled windows held out as the newest to compare on")
	cmd.AddCommand(newRetrainPoliciesCmd(e, &ff))
	return cmd
}

func newRetrainPoliciesCmd(e *env, ff *fleetFlags) *cobra.Command {
	var asJSON bool
	var model string
	cmd := &cobra.Command{
		Use:     "status [--model ID]",
		Aliases: []string{"policies"},
		Short:   "Per model: labelled windows by day and the model's accuracy on them, the challengers, the policies' states",
		Long: `Show, per model, what closing the loop has done on trit-fleet:

  labelled windows   how many were labelled each day and the model's accuracy
                     on them (the label against the class the device
                     predicted: the only honest field accuracy there is)
  challengers        each retraining's challenger against the model it
                     challenged on the same newest labelled windows, and the
                     decision
  policies           each retraining policy ([[retrain]] in fleet.toml): its
                     rule, its stage, the figures of its last check and why
                     it did or did not act

The labelled windows need the admin role (they are devices' raw data); a
role that may not read them sees the rest. docs/FLEET.md "Closing the loop".`,
		Example: `  tritctl retrain status
  tritctl retrain status --model vib --json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			st, err := loopStatus(c, model)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(e.stdout, st); err != nil {
					return err
				}
			} else {
				printLoopStatus(e.stdout, st)
			}
			warnDamagedWindows(e.stderr, st.DamagedWindows)
			var jobs []string
			for _, j := range st.Challengers {
				if j.Damaged != "" {
					jobs = append(jobs, j.ID)
				}
			}
			warnDamaged(e.stderr, "training job", jobs, "restore a backup of the fleet's database (docs/FLEET.md \"Backup and restore\")")
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&model, "model", "", "one model only")
	return cmd
}

// loopStatusOut is retrain status's result.
type loopStatusOut struct {
	Labelled    []modelDays `json:"labelled"`
	WindowsNote string      `json:"windows_note,omitempty"` // why the labelled windows are missing
	// DamagedWindows are the stored windows that do not decode, skipped
	// (GET /v1/windows's damaged: of any model, labelled or not).
	DamagedWindows []api.Damaged `json:"damaged_windows,omitempty"`
	// Challengers are the retraining jobs, then the damaged job records
	// (whether they were retrainings is unknown), each with only its ID
	// and Damaged.
	Challengers []api.TrainJob    `json:"challengers"`
	Policies    []api.PolicyState `json:"policies"`
}

// modelDays is one model's labelled windows by day.
type modelDays struct {
	Model    string    `json:"model"`
	Labelled int       `json:"labelled"`
	Accuracy float64   `json:"accuracy"` // percent of them the model predicted right
	Days     []dayStat `json:"days"`
}

type dayStat struct {
	Day      string  `json:"day"` // UTC, of the readings
	Labelled int     `json:"labelled"`
	Accuracy float64 `json:"accuracy"`
}

func loopStatus(c *api.Client, model string) (*loopStatusOut, error) {
	out := &loopStatusOut{}
	list, err := c.Windows(api.WindowQuery{Model: model, Labelled: ptr(true)})
	var se *api.StatusError
	switch {
	case errors.As(err, &se) && se.Status == 403:
		out.WindowsNote = "the labelled windows need the admin role"
	case err != nil:
		return nil, err
	default:
		out.DamagedWindows = list.Damaged
		type acc struct{ n, right int }
		per := map[string]map[string]*acc{}
		for _, w := range list.Windows {
			day := w.Time.UTC().Format("2006-01-02")
			if per[w.Model] == nil {
				per[w.Model] = map[string]*acc{}
			}
			a := per[w.Model][day]
			if a == nil {
				a = &acc{}
				per[w.Model][day] = a
			}
			a.n++
			if w.Label == w.Predicted {
				a.right++
			}
		}
		for _, m := range slices.Sorted(maps.Keys(per)) {
			md := modelDays{Model: m}
			right := 0
			for _, day := range slices.Sorted(maps.Keys(per[m])) {
				a := per[m][day]
				md.Days = append(md.Days, dayStat{day, a.n, 100 * float64(a.right) / float64(a.n)})
				md.Labelled += a.n
				right += a.right
			}
			md.Accuracy = 100 * float64(right) / float64(md.Labelled)
			out.Labelled = append(out.Labelled, md)
		}
	}
	jobs, err := c.TrainJobs()
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if j.Damaged != "" || j.Request.Retrain && (model == "" || j.Request.ModelID == model) {
			out.Challengers = append(out.Challengers, j)
		}
	}
	ps, err := c.Policies()
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if model == "" || p.Model == model {
			out.Policies = append(out.Policies, p)
		}
	}
	return out, nil
}

func printLoopStatus(w io.Writer, st *loopStatusOut) {
	fmt.Fprintln(w, "labelled windows (the model's accuracy on them):")
	if st.WindowsNote != "" {
		fmt.Fprintln(w, "  "+st.WindowsNote)
	} else if len(st.Labelled) == 0 {
		fmt.Fprintln(w, "  none ('tritctl samples pull', then 'tritctl samples label'; or a gateway's label source)")
	}
	for _, m := range st.Labelled {
		fmt.Fprintf(w, "  %s: %d labelled, %.1f%% predicted right\n", m.Model, m.Labelled, m.Accuracy)
		for _, d := range m.Days {
			fmt.Fprintf(w, "    %s  %6d  %5.1f%%\n", d.Day, d.Labelled, d.Accuracy)
		}
	}
	fmt.Fprintln(w, "challengers (on the newest labelled windows: active → challenger):")
	if len(st.Challengers) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, j := range st.Challengers {
		r := j.Retrain
		if j.Damaged != "" {
			fmt.Fprintf(w, "  %s (damaged)\n", j.ID)
			continue
		}
		if r == nil {
			fmt.Fprintf(w, "  %s %s: %s %s\n", j.ID, j.Request.ModelID, j.State, j.Error)
			continue
		}
		fmt.Fprintf(w, "  %s %s r%d, %d windows (%d newest): accuracy %.2f%% → %.2f%%, balanced %.2f%% → %.2f%%, calibration error %.2f%% → %.2f%%, unknown %.2f%% → %.2f%%\n    %s\n",
			j.ID, j.Request.ModelID, r.ActiveRelease, r.Windows, r.Newest, r.ActiveScores.Accuracy, r.Challenger.Accuracy, r.ActiveScores.Balanced, r.Challenger.Balanced,
			r.ActiveScores.ECE, r.Challenger.ECE, r.ActiveScores.Unknown, r.Challenger.Unknown, r.Why)
	}
	fmt.Fprintln(w, "policies:")
	if len(st.Policies) == 0 {
		fmt.Fprintln(w, "  none ([[retrain]] in fleet.toml)")
	}
	for _, p := range st.Policies {
		acc := "–"
		if p.Accuracy != nil {
			acc = fmt.Sprintf("%.1f%%", *p.Accuracy)
		}
		fmt.Fprintf(w, "  %s: %s (since %s)\n    rule: %s\n    last check %s: %d devices, drift %.3f, unknown %.1f%%, %d new labels, accuracy on them %s\n    %s\n",
			p.Model, p.Stage, p.Changed.Format(time.RFC3339), p.Rule, p.Checked.Format(time.RFC3339), p.Devices, p.Drift, 100*p.Unknown, p.NewLabels, acc, p.Why)
	}
}

// cmdFlag returns a string flag of df's command.
func cmdFlag(df *dataFlags, name string) (string, bool) {
	f := df.cmd.Flags().Lookup(name)
	if f == nil {
		return "", false
	}
	return f.Value.String(), f.Changed
}

func dataPath(df *dataFlags) string { p, _ := cmdFlag(df, "data"); return p }

func ptr[T any](v T) *T { return &v }

// retrainOriginal loads the original training data with the active
// model's features and classes.
func retrainOriginal(df *dataFlags, m *inference.Model, spec string) (*data.Dataset, error) {
	if df.standard != "" {
		return evalStandard(df, m, "train")
	}
	return evalData(df, dataPath(df), m, spec)
}

// fieldWindows converts the fleet's labelled windows to retrain's, keeping
// those with m's features (in its order) and returning how many it skipped.
func fieldWindows(list []api.FieldWindow, m *inference.Model) ([]retrain.Window, int) {
	want := m.Spec().Features
	var ws []retrain.Window
	skipped := 0
	for _, w := range list {
		if len(w.X) != m.NumFeatures() || (want != nil && !slices.Equal(w.Features, want)) || !slices.Contains(m.Classes(), w.Label) {
			skipped++
			continue
		}
		ws = append(ws, retrain.Window{Time: w.Time.UnixMilli(), X: w.X, Label: w.Label})
	}
	return ws, skipped
}

// printRetrain writes the comparison as text.
func printRetrain(w io.Writer, s *retrainSummary) {
	fmt.Fprintf(w, "model %s release %d: %d labelled windows (%d skipped), the newest %d held out; the challenger trained on %d original rows + the older windows weighted up to %d× (%d rows), %.1f s\n",
		s.Model, s.Release, s.Windows, s.Skipped, s.Newest, s.Original, s.MaxCopies, s.Trained, s.Seconds)
	fmt.Fprintf(w, "on the %d newest labelled windows   accuracy   balanced   calibration error   unknown\n", s.Newest)
	for _, r := range []struct {
		name string
		s    retrain.Scores
	}{{"active", s.Active}, {"challenger", s.Challenger}} {
		fmt.Fprintf(w, "  %-33s %7.2f%%   %7.2f%%   %16.2f%%   %6.2f%%\n", r.name, r.s.Accuracy, r.s.Balanced, r.s.ECE, r.s.Unknown)
	}
	fmt.Fprintln(w, s.Why)
	if s.Out != "" {
		how := ""
		switch {
		case s.Refitted:
			how = ", refitted on every labelled window"
		case s.RefitError != "":
			how = " (the fit scored above: the refit on every labelled window failed: " + s.RefitError + ")"
		}
		fmt.Fprintf(w, "wrote %s: release %d, unsigned%s; sign it offline (tritctl bundle sign), publish it and shadow it\n", s.Out, s.OutRelease, how)
	}
}

// retrainOnFleet runs a retraining as a fleet job, waits for it and
// downloads its challenger if it is better.
func retrainOnFleet(e *env, ff *fleetFlags, req api.TrainRequest, out string, force, asJSON bool, interval time.Duration) error {
	c, err := ff.client()
	if err != nil {
		return err
	}
	job, err := c.Train(&req)
	if err != nil {
		return err
	}
	start := time.Now()
	for job.State == api.TrainQueued || job.State == api.TrainRunning {
		time.Sleep(interval)
		if !asJSON {
			fmt.Fprintf(e.stderr, "retraining on the fleet (job %s, %s): %s elapsed\n", job.ID, job.State, time.Since(start).Round(time.Second))
		}
		if job, err = c.TrainJob(job.ID); err != nil {
			return err
		}
	}
	if job.State != api.TrainSucceeded || job.Retrain == nil {
		return fmt.Errorf("retraining job %s %s: %s", job.ID, job.State, job.Error)
	}
	r := job.Retrain
	s := retrainSummary{Model: req.ModelID, Release: r.ActiveRelease, Windows: r.Windows, Skipped: r.Skipped, Newest: r.Newest,
		Original: r.OriginalRows, Trained: r.TrainedRows, MaxCopies: r.MaxCopies, Active: retrain.Scores(r.ActiveScores),
		Challenger: retrain.Scores(r.Challenger), Better: r.Better, Why: r.Why, Refitted: r.Refitted, RefitError: r.RefitError, Seconds: job.TrainSeconds}
	if r.Better {
		b, err := c.TrainedBundle(job.ID)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(out, b, 0o644, force); err != nil {
			return err
		}
		br, err := bundleRelease(b)
		if err != nil {
			return err
		}
		s.Out, s.OutRelease = out, br
	}
	if asJSON {
		if err := writeJSON(e.stdout, s); err != nil {
			return err
		}
	} else {
		printRetrain(e.stdout, &s)
	}
	if !r.Better {
		return fmt.Errorf("%w: %s", errNotBetter, r.Why)
	}
	return nil
}

// bundleRelease returns an unsigned bundle's release.
func bundleRelease(raw []byte) (uint64, error) {
	br, err := bundle.Inspect(raw)
	if err != nil {
		return 0, fmt.Errorf("the fleet's challenger: %w", err)
	}
	return br.Release, nil
}

// warnDamagedWindows says on stderr which stored windows do not decode
// (GET /v1/windows skips them and names them by their record's key).
func warnDamagedWindows(w io.Writer, bad []api.Damaged) {
	keys := make([]string, len(bad))
	for i, d := range bad {
		keys[i] = d.Key
	}
	warnDamaged(w, "window", keys, "restore a backup of the fleet's database (docs/FLEET.md \"Backup and restore\")")
}
