package tritctl

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/wire"
)

// The fleet commands talk to trit-fleet's HTTP API (docs/OPERATIONS.md)
// through api.Client, with the API's own types (package api).

type fleetFlags struct {
	url, tokenFile string
}

func (f *fleetFlags) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&f.url, "fleet", envOr("TRIT_FLEET_URL", "http://127.0.0.1:8080"), "trit-fleet API URL, or several replicas' URLs separated by commas: a request that cannot reach one, or that one answers 503, goes to the next ($TRIT_FLEET_URL)")
	cmd.PersistentFlags().StringVar(&f.tokenFile, "token-file", os.Getenv("TRIT_FLEET_TOKEN_FILE"), "file holding the API token ($TRIT_FLEET_TOKEN_FILE; or set $TRIT_FLEET_TOKEN)")
}

// withFleetHints makes cmd and its subcommands add to the fleet's errors
// what to do next (fleetHint); newRoot applies it to the whole tree.
func withFleetHints(cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error { return fleetHint(run(c, args)) }
	}
	for _, sub := range cmd.Commands() {
		withFleetHints(sub)
	}
}

// fleetHint appends to an error from the fleet's API the command that
// shows what exists, or where the token comes from.
func fleetHint(err error) error {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return err
	}
	hint := ""
	switch msg := se.Message; {
	case se.Status == http.StatusUnauthorized:
		hint = "the token (--token-file, $TRIT_FLEET_TOKEN_FILE or $TRIT_FLEET_TOKEN) must be an operator's (trit-fleet operators add), not disabled or expired, or the fleet's api.token_file"
	case se.Status != http.StatusNotFound:
	case strings.HasPrefix(msg, "not found: bundle"), strings.HasPrefix(msg, "not found: no registered bundle"):
		hint = "'tritctl bundles list' lists the registered bundles and their hashes"
	case strings.HasPrefix(msg, "not found: rollout"):
		hint = "'tritctl rollout list' lists the rollouts"
	case strings.HasPrefix(msg, "not found: device"):
		hint = "'tritctl devices list' lists the devices"
	}
	if hint == "" {
		return err
	}
	return fmt.Errorf("%w; %s", err, hint)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// maxTokenFile bounds the file --token-file names: a token is one line of
// tens of characters, and a wrong path (a log, /dev/zero) is not read
// whole.
const maxTokenFile = 64 << 10

func (f *fleetFlags) client() (*api.Client, error) {
	token := os.Getenv("TRIT_FLEET_TOKEN")
	if f.tokenFile != "" {
		raw, err := readSmallFile(f.tokenFile, "token file", maxTokenFile)
		if err != nil {
			return nil, fmt.Errorf("the API token (--token-file or $TRIT_FLEET_TOKEN_FILE): %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	if token == "" {
		return nil, usagef("no API token: give the file holding it with --token-file or $TRIT_FLEET_TOKEN_FILE (the fleet's api.token_file), or the token itself in $TRIT_FLEET_TOKEN")
	}
	if err := checkFleetURL(f.url); err != nil {
		return nil, err
	}
	return api.NewClient(f.url, token), nil
}

// checkFleetURL refuses a --fleet whose URLs (comma-separated) are not
// http:// or https:// with a host: "127.0.0.1:8080" failed at the first
// request as 'parse "127.0.0.1:8080/v1/devices": first path segment in
// URL cannot contain colon', naming neither the flag nor the fix.
func checkFleetURL(s string) error {
	n := 0
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u == "" {
			continue
		}
		n++
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return usagef("--fleet / $TRIT_FLEET_URL %q: want the API's URL, such as http://127.0.0.1:8080 (trit-fleet's api.listen)", u)
		}
	}
	if n == 0 {
		return usagef("--fleet is empty: give the API's URL, such as http://127.0.0.1:8080 (trit-fleet's api.listen)")
	}
	return nil
}

// Exit codes of rollout status --watch once the rollout is done (besides 1
// for tritctl's own errors and 2 for usage errors).
const (
	exitPartial = 3 // completed, but some devices did not succeed
	exitFailed  = 4 // failed: no device succeeded
	exitAborted = 5 // aborted (abort criterion or an operator)
)

// watchOutage is how long rollout status --watch waits for trit-fleet to
// answer again (a restart) before it gives up with exit code 1.
var watchOutage = 5 * time.Minute

// outcome is the error --watch ends with for a done rollout, nil if every
// device succeeded.
func outcome(r *api.Rollout) error {
	switch {
	case r.State == api.RolloutAborted:
		return cli.Exit(exitAborted, fmt.Errorf("rollout %s was aborted: %s", r.ID, r.Reason))
	case r.State == api.RolloutFailed:
		return cli.Exit(exitFailed, fmt.Errorf("rollout %s failed: %s", r.ID, r.Reason))
	case r.State == api.RolloutCompleted && r.Successes < len(r.Order):
		return cli.Exit(exitPartial, fmt.Errorf("rollout %s completed, but %d of %s did not succeed", r.ID, len(r.Order)-r.Successes, count(len(r.Order), "device")))
	}
	return nil
}

func newPublishCmd(e *env) *cobra.Command {
	var ff fleetFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "publish BUNDLE",
		Short: "Upload a signed bundle to trit-fleet's registry",
		Long: `Upload a signed bundle. trit-fleet verifies it as a gateway would (trusted
release key, strict decoding, not expired) and accepts only a release above
the model's latest; a rollout then publishes it to the devices. It prints
the bundle's hash, which 'rollout create --bundle' takes. An unsigned bundle
is refused before anything is sent: sign it first (tritctl bundle sign).`,
		Example: `  tritctl publish vib-1.trit
  tritctl publish --json vib-2.trit | jq -r .hash`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			data, err := readSmallFile(args[0], publishedBundle, maxPublishedBundle)
			if err != nil {
				return err
			}
			// The fleet refuses an unsigned bundle too; saying so here
			// tells how to sign it. Anything that is not a bundle goes to
			// the fleet, whose checks decide.
			if br, err := bundle.Inspect(data); err == nil && !br.Signed {
				return fmt.Errorf("%s is not signed: sign it with 'tritctl bundle sign --key release.key %s -o %s', then publish that",
					args[0], args[0], signedName(args[0]))
			}
			b, err := c.AddBundle(data)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(e.stdout, b)
			}
			fmt.Fprintf(e.stdout, "registered %s release %d (%d bytes, key %s)\nbundle %s\n", b.ModelID, b.Release, b.Size, b.KeyID, b.Hash)
			return nil
		},
	}
	ff.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the registry record as JSON")
	return cmd
}

// maxPublishedBundle bounds the bundle file publish and rollout create
// --bundle FILE read: trit-fleet's registry accepts no larger bundle
// (bundle.DefaultMaxSize, 30 KiB), so a larger file — a wrong path, a
// data file — is refused naming it before it is read whole or sent.
const maxPublishedBundle = bundle.DefaultMaxSize

// publishedBundle names such a file in the error.
const publishedBundle = "bundle trit-fleet accepts"

// bundleRef returns what --bundle names: a registered bundle's hash or
// prefix as given, or, when it is the path of a file, that file's hash
// (SHA-256 of its bytes, the registry's key) — so a script needs no
// copy-paste between publish and rollout create.
func bundleRef(s string) (string, error) {
	fi, err := os.Stat(s)
	if err != nil || fi.IsDir() {
		return s, nil // not a file: a hash or prefix, which the fleet checks
	}
	data, err := readSmallFile(s, publishedBundle, maxPublishedBundle)
	if err != nil {
		return "", fmt.Errorf("--bundle: %w", err)
	}
	if br, err := bundle.Inspect(data); err != nil || !br.Signed {
		return "", fmt.Errorf("--bundle %s: not a signed bundle; give the file you published, or its hash", s)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// signedName suggests a name for the signed copy of an unsigned bundle:
// vib.trit → vib-signed.trit.
func signedName(path string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-signed" + ext
}

func newBundlesCmd(e *env) *cobra.Command {
	var ff fleetFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bundles",
		Short: "List the bundles registered with trit-fleet",
		Long: `The fleet's registry of signed bundles, as 'tritctl publish' added them.
(The bundle command works on bundle files; bundles on the fleet's registry.)`,
		Example: `  tritctl bundles list`,
		Args:    cobra.NoArgs,
		RunE:    func(*cobra.Command, []string) error { return usagef("bundles: give a subcommand (list)") },
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List registered bundles: model, release, size, devices running it, hash",
		Long: `List every bundle in the fleet's registry, newest release of each model
first: its model ID and release, its size in bytes, how many devices report
running it as their active model, when it was published, and its full
SHA-256 hash, which 'rollout create --bundle' takes (or a unique prefix of
it, at least 4 digits).`,
		Example: `  tritctl bundles list
  tritctl bundles list --json | jq -r '.[] | select(.model_id == "vib") | .hash'`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			bs, err := c.Bundles()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(e.stdout, bs)
			}
			if len(bs) == 0 {
				fmt.Fprintln(e.stderr, "no bundles registered yet; add one with 'tritctl publish SIGNED_BUNDLE'")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "MODEL\tRELEASE\tSIZE\tDEVICES\tADDED\tHASH")
			var damaged []string
			for _, b := range bs {
				if b.Damaged != "" {
					damaged = append(damaged, b.Hash)
					fmt.Fprintf(tw, "(damaged)\t-\t-\t-\t-\t%s\n", b.Hash)
					continue
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", b.ModelID, b.Release, b.Size, b.Devices, b.AddedAt.Local().Format(time.DateTime), b.Hash)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			warnDamaged(e.stderr, "bundle", damaged, "restore a backup of the fleet's database (docs/FLEET.md \"Backup and restore\"), or publish the bundle again")
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the registry's records as JSON")
	cmd.AddCommand(list)
	ff.register(cmd)
	return cmd
}

func newRolloutCmd(e *env) *cobra.Command {
	var ff fleetFlags
	cmd := &cobra.Command{Use: "rollout", Short: "Create, watch, pause, resume, abort and roll back rollouts",
		Example: `  tritctl rollout create --id vib-1 --bundle vib-1.trit --selector site=lab --phases 1,100%
  tritctl rollout status --watch vib-1
  tritctl rollout list`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usagef("rollout: give a subcommand (create, plan, status, list, pause, resume, abort, rollback)")
		}}
	ff.register(cmd)

	var req struct {
		id, bundle, phases, rate, abortOn, retries string
		devices, selector                          []string
		threshold                                  float64
		minExec                                    int
		timeout                                    time.Duration
		allowUnknown                               bool
		shadow                                     bool
		shadowPhases                               int
		minWindows                                 uint64
		minAgree, maxDiv, maxLow, maxTrain         float64
		maxUnknown, maxConfDrop                    float64
		gateWindows                                uint64
		noGate                                     bool
	}
	var createJSON bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Start a rollout of a registered bundle",
		Example: `  tritctl rollout create --id vib-2 --bundle vib-2.trit --selector site=lab \
      --phases 5,50%,100% --abort-on any --abort-threshold 10 --abort-min 5
  tritctl rollout create --id vib-2-gw9 --bundle vib-2.trit --device gw-9 --allow-unknown --json   # a gateway not yet seen`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			hash, err := bundleRef(req.bundle)
			if err != nil {
				return err
			}
			body := api.RolloutRequest{ID: req.id, Bundle: hash, Devices: req.devices, AllowUnknown: req.allowUnknown}
			if len(req.selector) > 0 {
				if body.Selector, err = parseSelector(req.selector); err != nil {
					return err
				}
			}
			if (len(req.devices) == 0) == (len(req.selector) == 0) {
				return usagef("give the target as --device (repeatable) or --selector label=value, not both")
			}
			pace, err := parsePace(req.phases, req.rate)
			if err != nil {
				return err
			}
			body.Pace = pace
			if req.abortOn != "" {
				body.Abort = api.AbortPolicy{On: req.abortOn, ThresholdPercent: req.threshold, MinExecuted: req.minExec}
			}
			body.Timeout = req.timeout
			if err := rolloutFlagsApply(cmd.Flags(), req.shadow, req.abortOn != "", req.noGate); err != nil {
				return err
			}
			if req.shadow {
				body.Shadow = &api.ShadowPolicy{Phases: req.shadowPhases, MinWindows: req.minWindows, MinAgreement: req.minAgree,
					MaxDivergence: req.maxDiv, MaxLowMargin: req.maxLow, MaxTrainDivergence: req.maxTrain}
				if cmd.Flags().Changed("max-unknown-increase") {
					body.Shadow.MaxUnknownIncrease = req.maxUnknown // strict: an uncalibrated candidate fails it
				}
			}
			body.NoGate = req.noGate
			if fl := cmd.Flags(); !req.noGate && (fl.Changed("max-unknown-increase") || fl.Changed("max-confidence-drop") || fl.Changed("gate-windows")) {
				body.Gate = &api.ConfidenceGate{MaxUnknownIncrease: req.maxUnknown, MaxConfidenceDrop: req.maxConfDrop, MinWindows: req.gateWindows}
			}
			if body.Retries, err = api.ParseRetries(req.retries); err != nil {
				return usagef("--retries: %v", err)
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			r, err := c.CreateRollout(&body)
			if err != nil {
				return err
			}
			if createJSON {
				return writeJSONTo(e.stdout, r)
			}
			fmt.Fprintf(e.stdout, "rollout %s created: %s release %d to %s\n", r.ID, r.ModelID, r.Release, count(len(r.Order), "device"))
			if r.Approval.Pending() {
				fmt.Fprintf(e.stdout, "it waits for a second person's approval: tritctl rollout approve %s\n", r.ID)
			}
			return nil
		},
	}
	f := create.Flags()
	f.StringVar(&req.id, "id", "", "rollout ID (required)")
	f.StringVar(&req.bundle, "bundle", "", "bundle hash as tritctl publish prints it, a unique prefix of at least 4 digits, or the signed bundle file that was published (required)")
	f.StringSliceVar(&req.devices, "device", nil, "target device ID (repeatable)")
	f.StringSliceVar(&req.selector, "selector", nil, "target devices by label=value (repeatable; all must match)")
	f.StringVar(&req.phases, "phases", "", "phases as counts or percentages, e.g. 5,50%,100%")
	f.StringVar(&req.rate, "rate", "", "exponential pace base/min,factor,after-successes, e.g. 10,2,20")
	f.StringVar(&req.abortOn, "abort-on", "", "failure kind that counts toward aborting: failed, rejected, timed-out or any")
	f.Float64Var(&req.threshold, "abort-threshold", 0, "abort when more than this percentage of finished devices failed")
	f.IntVar(&req.minExec, "abort-min", 1, "minimum finished devices before the abort criterion applies")
	f.DurationVar(&req.timeout, "timeout", 0, "per-device time to finish (default 10m)")
	f.StringVar(&req.retries, "retries", "", "retries per failure kind, e.g. timed-out=2,failed=1")
	f.BoolVar(&req.allowUnknown, "allow-unknown", false, "accept --device IDs not in the inventory (devices that have not reported yet)")
	f.BoolVar(&req.shadow, "shadow", false, "shadow the bundle on the first phase's devices first; promote it only if every one passes the gates")
	f.IntVar(&req.shadowPhases, "shadow-phases", 1, "with --shadow: how many leading phases shadow first")
	f.Uint64Var(&req.minWindows, "min-windows", 100, "with --shadow: windows a device scores before its gates are first judged; a share within chance of its limit is judged again on more, decided as counted at 4 times this")
	f.Float64Var(&req.minAgree, "min-agreement", 0, "with --shadow: least share (0-1) of windows on which the candidate agrees with the active model (0: not checked)")
	f.Float64Var(&req.maxDiv, "max-divergence", 0, "with --shadow: largest Jensen-Shannon divergence in bits (0-1) between the two models' class distributions (0: not checked)")
	f.Float64Var(&req.maxUnknown, "max-unknown-increase", api.DefaultConfidenceGate.MaxUnknownIncrease, "the confidence gate: largest amount (0-1) by which a calibrated model's share of unknown windows may exceed the active model's (with --shadow, on the same windows, and set explicitly it fails an uncalibrated candidate)")
	f.Float64Var(&req.maxConfDrop, "max-confidence-drop", api.DefaultConfidenceGate.MaxConfidenceDrop, "the confidence gate: largest amount (0-1) by which the mean confidence of the windows the model answered may fall below the active model's")
	f.Uint64Var(&req.gateWindows, "gate-windows", api.DefaultConfidenceGate.MinWindows, "the confidence gate: windows a canary device reports with the new model before it is first judged; a figure within chance of its limit is judged again on more, decided as counted at 4 times this (without --shadow)")
	f.BoolVar(&req.noGate, "no-gate", false, "no confidence gate (the fleet records that it was turned off)")
	f.Float64Var(&req.maxLow, "max-low-margin", 0, "with --shadow: largest share (0-1) of the candidate's low-margin predictions (0: not checked)")
	f.Float64Var(&req.maxTrain, "max-train-divergence", 0, "with --shadow: largest Jensen-Shannon divergence in bits between the candidate's class distribution on the device and its training data's (0: not checked)")
	f.BoolVar(&createJSON, "json", false, "print the created rollout as JSON (as rollout status --json)")
	create.MarkFlagRequired("id")
	create.MarkFlagRequired("bundle")

	var plan struct {
		bundle            string
		devices, selector []string
		wait              time.Duration
		asJSON            bool
	}
	planCmd := &cobra.Command{
		Use:   "plan --bundle HASH (--selector label=value | --device ID ...)",
		Short: "Dry run: how many of the devices' recent predictions a candidate would change",
		Long: `Ask each target device to score a registered bundle on its history of
recent windows (agents with models.history_max_bytes set) without
activating or keeping it, and print per device and overall how many
predictions would change: a plan before the apply (rollout create).
Devices must be online; those that do not answer are listed with why.`,
		Example: `  tritctl rollout plan --bundle vib-2.trit --selector site=lab
  tritctl rollout plan --bundle vib-2.trit --device gw-1 --json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			hash, err := bundleRef(plan.bundle)
			if err != nil {
				return err
			}
			body := &api.PlanRequest{Bundle: hash, Devices: plan.devices, Wait: plan.wait}
			if (len(plan.devices) == 0) == (len(plan.selector) == 0) {
				return usagef("give the target as --device (repeatable) or --selector label=value, not both")
			}
			if len(plan.selector) > 0 {
				var err error
				if body.Selector, err = parseSelector(plan.selector); err != nil {
					return err
				}
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			res, err := c.Plan(body)
			if err != nil {
				return err
			}
			if plan.asJSON {
				return writeJSONTo(e.stdout, res)
			}
			pct := func(a, b uint64) string {
				if b == 0 {
					return "-"
				}
				return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DEVICE\tWINDOWS\tWOULD CHANGE\tSHARE\tNOTE")
			for _, d := range res.Devices {
				if d.Plan == nil {
					fmt.Fprintf(tw, "%s\t-\t-\t-\t%s\n", d.Device, d.Error)
					continue
				}
				var moves []string
				for k, n := range d.Plan.Transitions {
					moves = append(moves, fmt.Sprintf("%s %d", k, n))
				}
				sort.Strings(moves)
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", d.Device, d.Plan.Windows, d.Plan.Changed, pct(d.Plan.Changed, d.Plan.Windows), strings.Join(moves, ", "))
			}
			tw.Flush()
			fmt.Fprintf(e.stdout, "overall: %d of %s would change (%s) on %d of %s that answered\n",
				res.Changed, count(int(res.Windows), "prediction"), pct(res.Changed, res.Windows), res.Answered, count(len(res.Devices), "device"))
			return nil
		},
	}
	planCmd.Flags().StringVar(&plan.bundle, "bundle", "", "bundle hash as printed by tritctl publish, or the signed bundle file that was published (required)")
	planCmd.Flags().StringSliceVar(&plan.devices, "device", nil, "target device ID (repeatable)")
	planCmd.Flags().StringSliceVar(&plan.selector, "selector", nil, "target devices by label=value (repeatable; all must match)")
	planCmd.Flags().DurationVar(&plan.wait, "wait", 0, "how long the fleet waits for the devices (default 20s)")
	planCmd.Flags().BoolVar(&plan.asJSON, "json", false, "print the plan as JSON")
	planCmd.MarkFlagRequired("bundle")

	var watch, asJSON bool
	var interval time.Duration
	status := &cobra.Command{
		Use:   "status ID",
		Short: "Show a rollout: per-state counts and the failing devices with reasons",
		Long: `Show a rollout: its state, counts per device state, and the devices that
did not succeed with their reasons. With --watch, follow it until it is done
(printing a line whenever its state or counts change) and exit with a code
that says how it ended:

  0  completed: every device succeeded
  3  completed, but some devices failed, were rejected or timed out
  4  failed: no device succeeded
  5  aborted, by its abort criterion or an operator
  1  tritctl could not tell (API unreachable, unknown rollout, ...)

While watching, trit-fleet not answering (a restart) is retried for up to
5 minutes, said on stderr; longer, the watch exits 1.`,
		Example: `  tritctl rollout status vib-1
  tritctl rollout status --watch vib-1 && echo "every device runs it"
  tritctl rollout status --json vib-1 | jq -r .state`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			last := ""
			seen := false      // the rollout was read once
			var down time.Time // since when the API has not answered
			for {
				r, err := c.Rollout(args[0])
				if err != nil {
					// --watch rides out a restart of trit-fleet (the
					// rollout goes on without it): a failure to reach it,
					// or its 503, once the rollout was read, for up to
					// watchOutage; an answer such as 404 ends it at once.
					var se *api.StatusError
					if !watch || !seen || errors.As(err, &se) && se.Status != http.StatusServiceUnavailable {
						return err
					}
					if down.IsZero() {
						down = time.Now()
						fmt.Fprintf(e.stderr, "%s trit-fleet does not answer (%v); retrying for up to %v\n", down.Format(time.TimeOnly), err, watchOutage)
					}
					if time.Since(down) > watchOutage {
						return err
					}
					time.Sleep(interval)
					continue
				}
				seen = true
				if !down.IsZero() {
					fmt.Fprintf(e.stderr, "%s trit-fleet answers again\n", time.Now().Format(time.TimeOnly))
					down = time.Time{}
				}
				switch {
				case asJSON:
					if err := writeJSONTo(e.stdout, r); err != nil {
						return err
					}
				case watch && !r.State.Done():
					// A line only when something changed: polling an
					// unchanged rollout prints nothing.
					line := fmt.Sprintf("%s: %s", r.State, countsLine(r.Counts(), len(r.Order)))
					if r.Reason != "" {
						line += " — " + r.Reason
					}
					if line != last {
						fmt.Fprintf(e.stdout, "%s %s\n", time.Now().Format(time.TimeOnly), line)
						last = line
					}
				default:
					printRollout(e.stdout, r)
				}
				if !watch || r.State.Done() {
					// The final state was printed in full above.
					if watch {
						return outcome(r)
					}
					return nil
				}
				time.Sleep(interval)
			}
		},
	}
	status.Flags().BoolVarP(&watch, "watch", "w", false, "follow the rollout until it completes or aborts")
	status.Flags().DurationVar(&interval, "interval", 2*time.Second, "polling interval with --watch")
	status.Flags().BoolVar(&asJSON, "json", false, "print the rollout as JSON")

	list := &cobra.Command{
		Use:   "list",
		Short: "List rollouts, newest first",
		Example: `  tritctl rollout list
  tritctl rollout list --json | jq -r '.[] | select(.state == "running") | .id'`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			rs, err := c.Rollouts()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(e.stdout, rs)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tMODEL\tRELEASE\tSTATE\tDEVICES\tSUCCEEDED\tSTARTED")
			var damaged []string
			for _, r := range rs {
				if r.Damaged != "" {
					damaged = append(damaged, r.ID)
					fmt.Fprintf(tw, "%s\t-\t-\t(damaged)\t-\t-\t-\n", r.ID)
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t%s\n", r.ID, r.ModelID, r.Release, r.State, len(r.Order), r.Successes, r.Started.Local().Format(time.DateTime))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			warnDamaged(e.stderr, "rollout", damaged, "restore a backup of the fleet's database (docs/FLEET.md \"Backup and restore\")")
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	cmd.AddCommand(create, planCmd, status, list)
	for _, op := range []string{"pause", "resume", "abort"} {
		var reason string
		c := &cobra.Command{
			Use:   op + " ID",
			Short: strings.ToUpper(op[:1]) + op[1:] + " a rollout",
			Example: map[string]string{
				"pause":  `  tritctl rollout pause vib-2-gw9 --reason "canary looks slow"`,
				"resume": `  tritctl rollout resume vib-2-gw9`,
				"abort":  `  tritctl rollout abort vib-2-gw9 --reason "wrong bundle"`,
			}[op],
			Args: cobra.ExactArgs(1),
			RunE: func(_ *cobra.Command, args []string) error {
				c, err := ff.client()
				if err != nil {
					return err
				}
				r, err := c.Control(args[0], op, reason)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "rollout %s is %s\n", r.ID, r.State)
				return nil
			},
		}
		if op != "resume" {
			c.Flags().StringVar(&reason, "reason", "", "why, for the record")
		}
		cmd.AddCommand(c)
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "approve ID",
		Short:   "Approve a rollout: the fleet's two-person rule (a person, not its creator)",
		Example: `  tritctl rollout approve vib-7 --token-file olga.token`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			r, err := c.Approve(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "rollout %s approved by %s; its devices are notified from the next tick\n", r.ID, r.Approval.ApprovedBy)
			return nil
		},
	})
	var newID string
	var emergency bool
	rollback := &cobra.Command{
		Use:   "rollback ID",
		Short: "Roll a rollout's devices back to the model's previous release",
		Long: `Create a new rollout, --id, that sends the release before the one rollout ID
delivered, flagged as a rollback (devices accept a lower release only then),
to the same devices with the same pace and abort policy. A rollout still
running is aborted first. With the fleet's two-person rule on, the rollback
waits for a second person's approval like any rollout; --emergency (the
responder role only) sends it at once, recorded and raised as an alarm.`,
		Example: `  tritctl rollout rollback vib-2 --id vib-2-back
  tritctl rollout status --watch vib-2-back`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			r, err := c.RollbackWith(args[0], api.RollbackRequest{ID: newID, Emergency: emergency})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "rollback %s created: %s release %d to %s\n", r.ID, r.ModelID, r.Release, count(len(r.Order), "device"))
			if r.Approval.Pending() {
				fmt.Fprintf(e.stdout, "it waits for a second person's approval: tritctl rollout approve %s\n", r.ID)
			}
			return nil
		},
	}
	rollback.Flags().StringVar(&newID, "id", "", "ID of the rollback rollout (required)")
	rollback.Flags().BoolVar(&emergency, "emergency", false, "under the two-person rule, send it without waiting for approval (role responder; audited, alarmed)")
	rollback.MarkFlagRequired("id")
	cmd.AddCommand(rollback)
	return cmd
}

// parsePace turns --phases and --rate into the API's pace.
func parsePace(phases, rate string) (api.Pace, error) {
	var pace api.Pace
	if phases != "" && rate != "" {
		return pace, usagef("give --phases or --rate, not both")
	}
	var err error
	if pace.Phases, err = api.ParsePhases(phases); err != nil {
		return pace, usagef("--phases: %v", err)
	}
	if rate != "" {
		if pace.Rate, err = api.ParseRate(rate); err != nil {
			return pace, usagef("--rate %v", err)
		}
	}
	return pace, nil
}

// parseSelector reads --selector's label=value pairs (the flag repeated,
// or pairs separated by commas) with the API's grammar.
func parseSelector(pairs []string) (map[string]string, error) {
	sel, err := api.ParseSelector(strings.Join(pairs, ","))
	if err != nil {
		return nil, usagef("--selector: %v", err)
	}
	return sel, nil
}

func countsLine(counts map[api.DeviceState]int, total int) string {
	states := make([]api.DeviceState, 0, len(counts))
	for s := range counts {
		states = append(states, s)
	}
	slices.Sort(states)
	parts := make([]string, 0, len(states))
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
	}
	return fmt.Sprintf("%s (of %d)", strings.Join(parts, ", "), total)
}

func printRollout(w io.Writer, r *api.Rollout) {
	kind := "rollout"
	if r.Rollback {
		kind = "rollback"
	}
	fmt.Fprintf(w, "%s %s: %s release %d, bundle %.12s…\n", kind, r.ID, r.ModelID, r.Release, r.Bundle)
	fmt.Fprintf(w, "state: %s", r.State)
	if r.Reason != "" {
		fmt.Fprintf(w, " (%s)", r.Reason)
	}
	fmt.Fprintf(w, "\ndevices: %s\n", countsLine(r.Counts(), len(r.Order)))
	if r.CreatedBy != "" {
		fmt.Fprintf(w, "created by: %s\n", r.CreatedBy)
	}
	switch a := r.Approval; {
	case a.Pending() && r.State.Done():
		fmt.Fprintf(w, "approval: never given (the rollout is %s)\n", r.State)
	case a.Pending() && a.After > 0:
		fmt.Fprintf(w, "approval: waiting for an operator other than %s (tritctl rollout approve %s); its %d shadowing devices score the candidate meanwhile, none activates it\n", orDash(r.CreatedBy), r.ID, a.After)
	case a.Pending():
		fmt.Fprintf(w, "approval: waiting for an operator other than %s (tritctl rollout approve %s); no device is notified before\n", orDash(r.CreatedBy), r.ID)
	case a != nil && a.Emergency:
		fmt.Fprintf(w, "approval: none: emergency rollback by %s at %s\n", a.ApprovedBy, a.ApprovedAt.UTC().Format(time.RFC3339))
	case a != nil:
		fmt.Fprintf(w, "approval: approved by %s at %s\n", a.ApprovedBy, a.ApprovedAt.UTC().Format(time.RFC3339))
	}
	var failing []string
	for id, d := range r.Devices {
		if d.State.Failed() {
			failing = append(failing, id)
		}
	}
	sort.Strings(failing)
	printShadow(w, r)
	printGate(w, r)
	if len(failing) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FAILING\tSTATE\tATTEMPTS\tREASON")
		for _, id := range failing {
			d := r.Devices[id]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", id, d.State, d.Attempts, d.Reason)
		}
		tw.Flush()
	}
}

// printShadow prints the shadow reports of a shadow rollout's devices.
func printShadow(w io.Writer, r *api.Rollout) {
	var ids []string
	for _, id := range r.Order {
		if r.Devices[id].Shadow != nil {
			ids = append(ids, id)
		}
	}
	if r.Shadow == nil && len(ids) == 0 {
		return
	}
	if p := r.Shadow; p != nil {
		fmt.Fprintf(w, "shadow gates: min %d windows, agreement >= %s, divergence <= %s, low margin <= %s, divergence from training <= %s, unknown increase <= %s\n", p.Windows(),
			gate(p.MinAgreement, true), gate(p.MaxDivergence, false), gate(p.MaxLowMargin, true), gate(p.MaxTrainDivergence, false), gate(p.MaxUnknownIncrease, true))
	}
	if len(ids) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHADOW\tSTATE\tWINDOWS\tAGREEMENT\tDIVERGENCE\tLOW MARGIN\tVERDICT")
	for _, id := range ids {
		d := r.Devices[id]
		rep := d.Shadow
		div := "-" // no confusion matrix: the device could not count it
		if rep.ClassesCounted() {
			div = fmt.Sprintf("%.3f", rep.Divergence())
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f%%\t%s\t%.1f%%\t%s\n", id, d.State, rep.Windows, 100*rep.Agreement(), div, 100*rep.LowMarginRate(), orDash(d.Reason))
	}
	tw.Flush()
}

// printGate prints the rollout's confidence gate and, without a shadow,
// what each judged device reported with the new model.
func printGate(w io.Writer, r *api.Rollout) {
	g := r.Gate
	if g == nil {
		if r.GateNote != "" {
			fmt.Fprintf(w, "confidence gate: %s\n", r.GateNote)
		}
		return
	}
	// A shadow rollout judges the gate on each shadow report, when the
	// shadow gates are judged (its min windows), not after g.MinWindows.
	when := fmt.Sprintf("from %d windows, decided by %d", g.MinWindows, api.DecideWindowsFactor*g.MinWindows)
	if r.Shadow != nil {
		when = "on each shadow report"
	}
	fmt.Fprintf(w, "confidence gate: unknown at most %s above the active model's, confidence of answered windows at most %s below it, %s\n",
		gate(g.MaxUnknownIncrease, true), gate(g.MaxConfidenceDrop, true), when)
	if r.AutoRollback != "" {
		fmt.Fprintf(w, "automatic rollback: %s\n", r.AutoRollback)
	}
	if r.Shadow != nil {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	n := 0
	for _, id := range r.Order {
		d := r.Devices[id]
		if d.Verify == nil || d.State == api.DevicePending || d.State == api.DeviceNotified {
			continue
		}
		if n == 0 {
			fmt.Fprintln(tw, "GATED\tSTATE\tWINDOWS\tUNKNOWN\tVERDICT")
		}
		n++
		_, cand := d.Verify.Figures()
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f%%\t%s\n", id, d.State, d.Verify.Windows, 100*cand.UnknownRate(), orDash(d.Reason))
	}
	tw.Flush()
}

// gate renders a gate limit: "-" when not checked, a percentage or bits.
func gate(v float64, pct bool) string {
	switch {
	case v == 0:
		return "-"
	case pct:
		return fmt.Sprintf("%g%%", 100*v)
	}
	return fmt.Sprintf("%g bits", v)
}

func newDevicesCmd(e *env) *cobra.Command {
	var ff fleetFlags
	var asJSON bool
	cmd := &cobra.Command{Use: "devices", Short: "Show the fleet's device inventory",
		Example: `  tritctl devices list
  tritctl devices show gw-1`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usagef("devices: give a subcommand (list, show, forget, reset)")
		}}
	ff.register(cmd)
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	list := &cobra.Command{
		Use:   "list",
		Short: "List devices with their model, health and last contact",
		Long: `List every device in the fleet's inventory: online or not, the model and
release it runs, its health, its prediction count and last predicted class,
its drift score (with "(alert)" past the fleet's alerts.drift), when it was
last seen and its labels.`,
		Example: `  tritctl devices list
  watch -n 2 tritctl devices list                 # live predictions
  tritctl devices list --json | jq -r '.[] | select(.online | not) | .id'`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			ds, err := c.Devices()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(e.stdout, ds)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DEVICE\tONLINE\tMODEL\tRELEASE\tHEALTH\tPREDICTIONS\tLAST\tDRIFT\tUNKNOWN\tLAST SEEN\tLABELS")
			var damaged []string
			for _, d := range ds {
				if d.Damaged != "" {
					damaged = append(damaged, d.ID)
					fmt.Fprintf(tw, "%s\t-\t-\t-\t(damaged)\t-\t-\t-\t-\t-\t-\n", d.ID)
					continue
				}
				model, rel := "-", "-"
				if d.Model != nil {
					model, rel = d.Model.ID, strconv.FormatUint(d.Model.Release, 10)
				}
				last := "-"
				if d.Last != nil {
					last = d.Last.Class
				}
				drift := "-"
				if d.Drift != nil {
					drift = fmt.Sprintf("%.3f", d.Drift.Score)
					if d.Drifting {
						drift += " (alert)"
					}
				}
				unknown := "-"
				if u, ok := d.UnknownRate(); ok {
					unknown = fmt.Sprintf("%.1f%%", 100*u)
					if d.Uncertain {
						unknown += " (alert)"
					}
				}
				fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Online, model, rel, orDash(d.Health), d.Predictions, last, drift, unknown, seen(d.LastSeen), labelString(d.Labels))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			warnDamaged(e.stderr, "device", damaged, "tritctl devices forget ID deletes one; the device reappears as new when it next reports")
			return nil
		},
	}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show everything the fleet knows about one device (JSON)",
		Long: `Show everything the fleet knows about one device, as the fleet's JSON on
standard output. When the device is degraded, a line on standard error says
why, sensor by sensor ("gw-1: degraded: accel reads 1.8 kHz of the
configured 20 kHz"), so the JSON stays fit for scripts; so does one when
its committed model does not load ("gw-1: model vib release 2 (bundle
0123456789ab) does not load: …; it runs vib release 1 instead"), and one when
its per-device limits dropped or delayed any of its messages ("gw-1: 44552
messages dropped by its per-device limits (rate 44552, bytes 0, queue 0)").`,
		Example: `  tritctl devices show gw-1
  tritctl devices show gw-1 | jq .drift`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			raw, err := c.DeviceJSON(args[0])
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			json.Indent(&buf, raw, "", "  ")
			buf.WriteByte('\n')
			if _, err = e.stdout.Write(buf.Bytes()); err != nil {
				return err
			}
			var d api.Device
			if json.Unmarshal(raw, &d) == nil {
				if u := d.Unloadable; u != nil {
					runs := "it runs no model"
					if d.Model != nil {
						runs = fmt.Sprintf("it runs %s release %d instead", d.Model.ID, d.Model.Release)
					}
					fmt.Fprintf(e.stderr, "%s: %s; %s\n", d.ID, u.Describe(), runs)
				}
				if why := wire.HealthDetail(d.Health, d.Sensors); why != d.Health || d.Health == "degraded" && d.Unloadable == nil {
					fmt.Fprintf(e.stderr, "%s: %s\n", d.ID, why)
				}
				if l := d.Limited; l != nil {
					fmt.Fprintf(e.stderr, "%s: %d messages dropped by its per-device limits (rate %d, bytes %d, queue %d), %d delayed; the latest at %s\n",
						d.ID, l.Dropped(), l.Rate, l.Bytes, l.Queue, l.Throttled, l.Last.UTC().Format("2006-01-02 15:04:05 MST"))
				}
			}
			return nil
		},
	}
	forget := &cobra.Command{
		Use:   "forget ID",
		Short: "Delete a device's inventory record (a decommissioned gateway, a forged record)",
		Long: `Delete a device's record from the fleet's inventory. Use it for a gateway
taken out of service, or a record holding data its device never sent (a
forged state on a broker without per-device ACLs). If the device publishes
anything again it reappears as new; its command counter is restored from
the highest sequence its state reports.`,
		Example: `  tritctl devices forget gw-1     # a gateway taken out of service`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			if err := c.ForgetDevice(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "device %s forgotten\n", args[0])
			return nil
		},
	}
	reset := &cobra.Command{
		Use:   "reset ID",
		Short: "Make a device's record take the next state the device publishes",
		Long: `Reset the session tracking of a device's record: the next state the device
publishes is taken whatever its session number. Use it when a record is
pinned by a state no real connection supersedes (a forged session number).
Labels, models, the last job and the command counter are kept; the device
shows offline until it publishes its state (at its next connection).`,
		Example: `  tritctl devices reset gw-1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			if _, err := c.ResetDevice(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "device %s reset: its next state will be taken\n", args[0])
			return nil
		},
	}
	var healthJSON, healthMinutes bool
	var healthSelector []string
	health := &cobra.Command{
		Use:   "health (ID | --selector label=value)",
		Short: "Show a device's or a group's model health over time: predictions, unknown windows, confidence, drift, agreement, latency",
		Long: `Show the fleet's health history of one device, or with --selector the
histories of the devices a label selector matches summed period by period
(at most 1,000 devices; drift and latency the highest, agreement the mean
over the devices with a shadow report), docs/FLEET.md "Model health over
time": by hour over the last 31 days, or with --minutes by minute over the
last 24 hours, oldest first — predictions, the share of calibrated windows
reported unknown and their mean confidence, the highest drift score, the
latest shadow agreement and the highest median latency. Periods without a
report are not listed. For a group, how many devices matched goes to
standard error.`,
		Example: `  tritctl devices health gw-1
  tritctl devices health gw-1 --minutes | tail -60     # the last hour
  tritctl devices health --selector site=lab --minutes | tail -60
  tritctl devices health gw-1 --json | jq '.hours[-1]'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if (len(args) == 0) == (len(healthSelector) == 0) {
				return usagef("give a device ID or --selector label=value, not both")
			}
			var sel map[string]string
			if len(healthSelector) > 0 {
				var err error
				if sel, err = parseSelector(healthSelector); err != nil {
					return err
				}
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			var h any
			var minutes, hours []api.HealthPoint
			if sel != nil {
				g, err := c.GroupHealth(sel)
				if err != nil {
					return err
				}
				h, minutes, hours = g, g.Minutes, g.Hours
				if !healthJSON {
					fmt.Fprintf(e.stderr, "%d devices match the selector\n", len(g.Devices))
				}
			} else {
				d, err := c.DeviceHealth(args[0])
				if err != nil {
					return err
				}
				h, minutes, hours = d, d.Minutes, d.Hours
			}
			if healthJSON {
				return writeJSONTo(e.stdout, h)
			}
			points, layout := hours, "2006-01-02 15:00"
			if healthMinutes {
				points, layout = minutes, "2006-01-02 15:04"
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME (UTC)\tPREDICTIONS\tUNKNOWN\tCONFIDENCE\tDRIFT\tAGREEMENT\tLATENCY P50")
			for i := range points {
				p := &points[i]
				unknown, conf, drift, agree, lat := "-", "-", "-", "-", "-"
				if u, ok := p.UnknownRate(); ok {
					unknown = fmt.Sprintf("%.1f%% (%d)", 100*u, p.Unknown)
				}
				if m, ok := p.MeanConfidence(); ok {
					conf = fmt.Sprintf("%.1f%%", 100*m)
				}
				if p.Drift > 0 {
					drift = fmt.Sprintf("%.3f", p.Drift)
				}
				if p.Agreement != nil {
					agree = fmt.Sprintf("%.1f%%", 100**p.Agreement)
				}
				if p.LatencyP50 > 0 {
					lat = fmt.Sprintf("%.0f µs", p.LatencyP50)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", time.Unix(p.Time, 0).UTC().Format(layout), p.Predictions, unknown, conf, drift, agree, lat)
			}
			return tw.Flush()
		},
	}
	health.Flags().BoolVar(&healthJSON, "json", false, "print the fleet's JSON (both the minutes and the hours)")
	health.Flags().BoolVar(&healthMinutes, "minutes", false, "by minute over the last 24 hours instead of by hour")
	health.Flags().StringSliceVar(&healthSelector, "selector", nil, "a group instead of a device: the devices with label=value (repeatable; all must match)")
	cmd.AddCommand(list, show, health, forget, reset)
	return cmd
}

// count is n with its noun, in the plural unless n is 1: "1 device",
// "3 devices".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func labelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}

func writeJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// warnDamaged says on stderr which records of a list do not decode (the
// fleet skips them: docs/FLEET.md "Damaged records") and what to do,
// naming at most maxDamagedNamed of them (a store may hold 100,000
// windows).
func warnDamaged(w io.Writer, what string, keys []string, remedy string) {
	if len(keys) == 0 {
		return
	}
	more := ""
	if len(keys) > maxDamagedNamed {
		more = fmt.Sprintf(" and %d more", len(keys)-maxDamagedNamed)
	}
	fmt.Fprintf(w, "%d %s record(s) in the fleet's database do not decode and are skipped: %s%s; %s\n",
		len(keys), what, strings.Join(keys[:min(len(keys), maxDamagedNamed)], ", "), more, remedy)
}

// maxDamagedNamed bounds the damaged records warnDamaged names.
const maxDamagedNamed = 20

// seen renders a device's last-seen time: "never" for a record a rollout
// made for a device that has not reported (allow_unknown).
func seen(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Local().Format(time.DateTime)
}

// rolloutFlagsApply refuses the flags of rollout create that the rollout
// asked for would not use: a gate given but not applied is a rollout
// trusted for a check it never had.
func rolloutFlagsApply(fl *pflag.FlagSet, shadow, abort, noGate bool) error {
	if !shadow {
		for _, name := range []string{"shadow-phases", "min-windows", "min-agreement", "max-divergence", "max-low-margin", "max-train-divergence"} {
			if fl.Changed(name) {
				return usagef("--%s applies to a shadow rollout: give --shadow with it", name)
			}
		}
	}
	if !abort {
		for _, name := range []string{"abort-threshold", "abort-min"} {
			if fl.Changed(name) {
				return usagef("--%s needs --abort-on, the failure kind that counts toward aborting", name)
			}
		}
	}
	if noGate {
		gate := []string{"max-confidence-drop", "gate-windows"}
		if !shadow {
			// With --shadow it is also the shadow's gate, which stays.
			gate = append(gate, "max-unknown-increase")
		}
		for _, name := range gate {
			if fl.Changed(name) {
				return usagef("--%s sets the confidence gate, which --no-gate turns off", name)
			}
		}
	}
	return nil
}
