package ctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/wire"
)

// The fleet commands talk to trit-fleet's HTTP API (docs/OPERATIONS.md).
// The types below are this client's view of the API's JSON: only the fields
// tritctl shows, so the service can add fields without breaking it.

type fleetClient struct {
	url, token string
	http       *http.Client
}

type fleetFlags struct {
	url, tokenFile string
}

func (f *fleetFlags) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&f.url, "fleet", envOr("TRIT_FLEET_URL", "http://127.0.0.1:8080"), "trit-fleet API URL ($TRIT_FLEET_URL)")
	cmd.PersistentFlags().StringVar(&f.tokenFile, "token-file", os.Getenv("TRIT_FLEET_TOKEN_FILE"), "file holding the API token ($TRIT_FLEET_TOKEN_FILE; or set $TRIT_FLEET_TOKEN)")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (f *fleetFlags) client() (*fleetClient, error) {
	token := os.Getenv("TRIT_FLEET_TOKEN")
	if f.tokenFile != "" {
		raw, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	if token == "" {
		return nil, usagef("no API token: give --token-file or set TRIT_FLEET_TOKEN")
	}
	return &fleetClient{url: strings.TrimRight(f.url, "/"), token: token, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// do sends a request and decodes a 200 response into out (if not nil).
func (c *fleetClient) do(method, path, contentType string, body []byte, out any) error {
	raw, err := c.send(method, path, contentType, body)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("trit-fleet: unexpected response: %w", err)
	}
	return nil
}

// raw GETs path and returns the body of a 200 response.
func (c *fleetClient) raw(path string) ([]byte, error) { return c.send("GET", path, "", nil) }

// send makes a request and returns the body of a 200 response, or the
// service's error message.
func (c *fleetClient) send(method, path, contentType string, body []byte) ([]byte, error) {
	req, err := http.NewRequest(method, c.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("trit-fleet at %s: %w", c.url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("trit-fleet: %s (HTTP %d)", e.Error, resp.StatusCode)
		}
		return nil, fmt.Errorf("trit-fleet: HTTP %d", resp.StatusCode)
	}
	return raw, nil
}

type bundleView struct {
	Hash    string `json:"hash"`
	ModelID string `json:"model_id"`
	Release uint64 `json:"release"`
	Size    int    `json:"size"`
	KeyID   string `json:"key_id"`
}

type deviceProgressView struct {
	State    string             `json:"state"`
	Seq      uint64             `json:"seq"`
	Attempts int                `json:"attempts"`
	Reason   string             `json:"reason"`
	Stage    string             `json:"stage"`
	Shadow   *wire.ShadowReport `json:"shadow"`
}

type rolloutView struct {
	ID        string                         `json:"id"`
	Bundle    string                         `json:"bundle"`
	ModelID   string                         `json:"model_id"`
	Release   uint64                         `json:"release"`
	Rollback  bool                           `json:"rollback"`
	State     string                         `json:"state"`
	Reason    string                         `json:"reason"`
	Order     []string                       `json:"order"`
	Devices   map[string]*deviceProgressView `json:"devices"`
	Started   time.Time                      `json:"started"`
	Successes int                            `json:"successes"`
	Shadow    *struct {
		MinWindows    uint64  `json:"min_windows"`
		MinAgreement  float64 `json:"min_agreement"`
		MaxDivergence float64 `json:"max_divergence"`
		MaxLowMargin  float64 `json:"max_low_margin"`
		MaxTrain      float64 `json:"max_train_divergence"`
	} `json:"shadow"`
}

func (r *rolloutView) counts() map[string]int {
	out := map[string]int{}
	for _, d := range r.Devices {
		out[d.State]++
	}
	return out
}

func (r *rolloutView) done() bool {
	return r.State == "aborted" || r.State == "completed" || r.State == "failed"
}

// Exit codes of rollout status --watch once the rollout is done (besides 1
// for tritctl's own errors and 2 for usage errors).
const (
	exitPartial = 3 // completed, but some devices did not succeed
	exitFailed  = 4 // failed: no device succeeded
	exitAborted = 5 // aborted (abort criterion or an operator)
)

// outcome is the error --watch ends with for a done rollout, nil if every
// device succeeded.
func (r *rolloutView) outcome() error {
	switch {
	case r.State == "aborted":
		return exitError{exitAborted, fmt.Errorf("rollout %s was aborted: %s", r.ID, r.Reason)}
	case r.State == "failed":
		return exitError{exitFailed, fmt.Errorf("rollout %s failed: %s", r.ID, r.Reason)}
	case r.State == "completed" && r.Successes < len(r.Order):
		return exitError{exitPartial, fmt.Errorf("rollout %s completed, but %d of %d devices did not succeed", r.ID, len(r.Order)-r.Successes, len(r.Order))}
	}
	return nil
}

type modelRefView struct {
	ID      string `json:"id"`
	Release uint64 `json:"release"`
}

type deviceView struct {
	ID           string            `json:"id"`
	Online       bool              `json:"online"`
	LastSeen     time.Time         `json:"last_seen"`
	AgentVersion string            `json:"agent_version"`
	Hardware     string            `json:"hardware"`
	Labels       map[string]string `json:"labels"`
	Model        *modelRefView     `json:"model"`
	Health       string            `json:"health"`
	Predictions  uint64            `json:"predictions"`
	Drift        *wire.DriftReport `json:"drift"`
	Drifting     bool              `json:"drifting"`
	Last         *struct {
		Class string `json:"class"`
		Time  int64  `json:"time"`
	} `json:"last_prediction"`
}

func newPublishCmd(e *env) *cobra.Command {
	var ff fleetFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "publish BUNDLE",
		Short: "Upload a signed bundle to trit-fleet's registry",
		Long: `Upload a signed bundle. trit-fleet verifies it as a gateway would (trusted
release key, strict decoding, not expired) and accepts only a release above
the model's latest; a rollout then publishes it to the devices.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			var b bundleView
			if err := c.do("POST", "/v1/bundles", "application/octet-stream", data, &b); err != nil {
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

func newRolloutCmd(e *env) *cobra.Command {
	var ff fleetFlags
	cmd := &cobra.Command{Use: "rollout", Short: "Create, watch, pause, resume, abort and roll back rollouts"}
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
	}
	create := &cobra.Command{
		Use:   "create",
		Short: "Start a rollout of a registered bundle",
		Example: `  tritctl rollout create --id vib-7 --bundle 3fa1… --selector site=north \
      --phases 5,50%,100% --abort-on any --abort-threshold 10 --abort-min 5`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			body := map[string]any{"id": req.id, "bundle": req.bundle}
			if len(req.devices) > 0 {
				body["devices"] = req.devices
			}
			if req.allowUnknown {
				body["allow_unknown"] = true
			}
			if len(req.selector) > 0 {
				sel := map[string]string{}
				for _, kv := range req.selector {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return usagef("--selector %q: want label=value", kv)
					}
					sel[k] = v
				}
				body["selector"] = sel
			}
			if (len(req.devices) == 0) == (len(req.selector) == 0) {
				return usagef("give the target as --device (repeatable) or --selector label=value, not both")
			}
			pace, err := parsePace(req.phases, req.rate)
			if err != nil {
				return err
			}
			body["pace"] = pace
			if req.abortOn != "" {
				body["abort"] = map[string]any{"on": req.abortOn, "threshold_percent": req.threshold, "min_executed": req.minExec}
			}
			if req.timeout > 0 {
				body["timeout"] = req.timeout
			}
			if req.shadow {
				body["shadow"] = map[string]any{"phases": req.shadowPhases, "min_windows": req.minWindows,
					"min_agreement": req.minAgree, "max_divergence": req.maxDiv, "max_low_margin": req.maxLow,
					"max_train_divergence": req.maxTrain}
			}
			if req.retries != "" {
				r := map[string]int{}
				for _, kv := range strings.Split(req.retries, ",") {
					k, v, ok := strings.Cut(kv, "=")
					n, err := strconv.Atoi(v)
					if !ok || err != nil {
						return usagef("--retries %q: want kind=count,… (kinds failed, rejected, timed-out, any)", kv)
					}
					r[k] = n
				}
				body["retries"] = r
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			raw, _ := json.Marshal(body)
			var r rolloutView
			if err := c.do("POST", "/v1/rollouts", "application/json", raw, &r); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "rollout %s created: %s release %d to %d devices\n", r.ID, r.ModelID, r.Release, len(r.Order))
			return nil
		},
	}
	f := create.Flags()
	f.StringVar(&req.id, "id", "", "rollout ID (required)")
	f.StringVar(&req.bundle, "bundle", "", "bundle hash, as printed by tritctl publish (required)")
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
	f.Uint64Var(&req.minWindows, "min-windows", 100, "with --shadow: windows a device scores before its gates are judged")
	f.Float64Var(&req.minAgree, "min-agreement", 0, "with --shadow: least share (0-1) of windows on which the candidate agrees with the active model (0: not checked)")
	f.Float64Var(&req.maxDiv, "max-divergence", 0, "with --shadow: largest Jensen-Shannon divergence in bits (0-1) between the two models' class distributions (0: not checked)")
	f.Float64Var(&req.maxLow, "max-low-margin", 0, "with --shadow: largest share (0-1) of the candidate's low-margin predictions (0: not checked)")
	f.Float64Var(&req.maxTrain, "max-train-divergence", 0, "with --shadow: largest Jensen-Shannon divergence in bits between the candidate's class distribution on the device and its training data's (0: not checked)")
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
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			body := map[string]any{"bundle": plan.bundle}
			if (len(plan.devices) == 0) == (len(plan.selector) == 0) {
				return usagef("give the target as --device (repeatable) or --selector label=value, not both")
			}
			if len(plan.devices) > 0 {
				body["devices"] = plan.devices
			}
			if len(plan.selector) > 0 {
				sel := map[string]string{}
				for _, kv := range plan.selector {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return usagef("--selector %q: want label=value", kv)
					}
					sel[k] = v
				}
				body["selector"] = sel
			}
			if plan.wait > 0 {
				body["wait"] = plan.wait
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			raw, _ := json.Marshal(body)
			var res struct {
				Devices []struct {
					Device string     `json:"device"`
					Plan   *wire.Plan `json:"plan"`
					Error  string     `json:"error"`
				} `json:"devices"`
				Windows  uint64 `json:"windows"`
				Changed  uint64 `json:"changed"`
				Answered int    `json:"answered"`
			}
			if err := c.do("POST", "/v1/plan", "application/json", raw, &res); err != nil {
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
			fmt.Fprintf(e.stdout, "overall: %d of %d predictions would change (%s) on %d of %d devices that answered\n",
				res.Changed, res.Windows, pct(res.Changed, res.Windows), res.Answered, len(res.Devices))
			return nil
		},
	}
	planCmd.Flags().StringVar(&plan.bundle, "bundle", "", "bundle hash, as printed by tritctl publish (required)")
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
and exit with a code that says how it ended:

  0  completed: every device succeeded
  3  completed, but some devices failed, were rejected or timed out
  4  failed: no device succeeded
  5  aborted, by its abort criterion or an operator
  1  tritctl could not tell (API unreachable, unknown rollout, ...)`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			for {
				var r rolloutView
				if err := c.do("GET", "/v1/rollouts/"+args[0], "", nil, &r); err != nil {
					return err
				}
				switch {
				case asJSON:
					if err := writeJSONTo(e.stdout, r); err != nil {
						return err
					}
				case watch && !r.done():
					fmt.Fprintf(e.stdout, "%s %s: %s\n", time.Now().Format(time.TimeOnly), r.State, countsLine(r.counts(), len(r.Order)))
				default:
					printRollout(e.stdout, &r)
				}
				if !watch || r.done() {
					// The final state was printed in full above.
					if watch {
						return r.outcome()
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
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			var rs []rolloutView
			if err := c.do("GET", "/v1/rollouts", "", nil, &rs); err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(e.stdout, rs)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tMODEL\tRELEASE\tSTATE\tDEVICES\tSUCCEEDED\tSTARTED")
			for _, r := range rs {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t%s\n", r.ID, r.ModelID, r.Release, r.State, len(r.Order), r.Successes, r.Started.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	cmd.AddCommand(create, planCmd, status, list)
	for _, op := range []string{"pause", "resume", "abort"} {
		var reason string
		c := &cobra.Command{
			Use:   op + " ID",
			Short: strings.ToUpper(op[:1]) + op[1:] + " a rollout",
			Args:  cobra.ExactArgs(1),
			RunE: func(_ *cobra.Command, args []string) error {
				c, err := ff.client()
				if err != nil {
					return err
				}
				raw, _ := json.Marshal(map[string]string{"reason": reason})
				var r rolloutView
				if err := c.do("POST", "/v1/rollouts/"+args[0]+"/"+op, "application/json", raw, &r); err != nil {
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
	var newID string
	rollback := &cobra.Command{
		Use:   "rollback ID",
		Short: "Roll a rollout's devices back to the model's previous release",
		Long: `Create a new rollout, --id, that sends the release before the one rollout ID
delivered, flagged as a rollback (devices accept a lower release only then),
to the same devices with the same pace and abort policy. A rollout still
running is aborted first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			raw, _ := json.Marshal(map[string]string{"id": newID})
			var r rolloutView
			if err := c.do("POST", "/v1/rollouts/"+args[0]+"/rollback", "application/json", raw, &r); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "rollback %s created: %s release %d to %d devices\n", r.ID, r.ModelID, r.Release, len(r.Order))
			return nil
		},
	}
	rollback.Flags().StringVar(&newID, "id", "", "ID of the rollback rollout (required)")
	rollback.MarkFlagRequired("id")
	cmd.AddCommand(rollback)
	return cmd
}

// parsePace turns --phases and --rate into the API's pace object.
func parsePace(phases, rate string) (map[string]any, error) {
	pace := map[string]any{}
	if phases != "" && rate != "" {
		return nil, usagef("give --phases or --rate, not both")
	}
	if phases != "" {
		var list []map[string]any
		for _, p := range strings.Split(phases, ",") {
			p = strings.TrimSpace(p)
			if pct, ok := strings.CutSuffix(p, "%"); ok {
				v, err := strconv.ParseFloat(pct, 64)
				if err != nil || v <= 0 || v > 100 {
					return nil, usagef("--phases: %q is not a percentage in (0, 100]", p)
				}
				list = append(list, map[string]any{"percent": v})
				continue
			}
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 {
				return nil, usagef("--phases: %q is neither a device count nor a percentage", p)
			}
			list = append(list, map[string]any{"count": n})
		}
		pace["phases"] = list
	}
	if rate != "" {
		parts := strings.Split(rate, ",")
		if len(parts) != 3 {
			return nil, usagef("--rate %q: want base-per-minute,factor,increase-after", rate)
		}
		base, err1 := strconv.ParseFloat(parts[0], 64)
		factor, err2 := strconv.ParseFloat(parts[1], 64)
		after, err3 := strconv.Atoi(parts[2])
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, usagef("--rate %q: want numbers base-per-minute,factor,increase-after", rate)
		}
		pace["rate"] = map[string]any{"base_per_minute": base, "factor": factor, "increase_after": after}
	}
	return pace, nil
}

func countsLine(counts map[string]int, total int) string {
	states := make([]string, 0, len(counts))
	for s := range counts {
		states = append(states, s)
	}
	sort.Strings(states)
	parts := make([]string, 0, len(states))
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
	}
	return fmt.Sprintf("%s (of %d)", strings.Join(parts, ", "), total)
}

func printRollout(w io.Writer, r *rolloutView) {
	kind := "rollout"
	if r.Rollback {
		kind = "rollback"
	}
	fmt.Fprintf(w, "%s %s: %s release %d, bundle %.12s…\n", kind, r.ID, r.ModelID, r.Release, r.Bundle)
	fmt.Fprintf(w, "state: %s", r.State)
	if r.Reason != "" {
		fmt.Fprintf(w, " (%s)", r.Reason)
	}
	fmt.Fprintf(w, "\ndevices: %s\n", countsLine(r.counts(), len(r.Order)))
	var failing []string
	for id, d := range r.Devices {
		switch d.State {
		case "failed", "rejected", "timed-out":
			failing = append(failing, id)
		}
	}
	sort.Strings(failing)
	printShadow(w, r)
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
func printShadow(w io.Writer, r *rolloutView) {
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
		fmt.Fprintf(w, "shadow gates: min %d windows, agreement >= %s, divergence <= %s, low margin <= %s, divergence from training <= %s\n", p.MinWindows,
			gate(p.MinAgreement, true), gate(p.MaxDivergence, false), gate(p.MaxLowMargin, true), gate(p.MaxTrain, false))
	}
	if len(ids) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHADOW\tSTATE\tWINDOWS\tAGREEMENT\tDIVERGENCE\tLOW MARGIN\tVERDICT")
	for _, id := range ids {
		d := r.Devices[id]
		rep := d.Shadow
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f%%\t%.3f\t%.1f%%\t%s\n", id, d.State, rep.Windows, 100*rep.Agreement(), rep.Divergence(), 100*rep.LowMarginRate(), orDash(d.Reason))
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
	cmd := &cobra.Command{Use: "devices", Short: "Show the fleet's device inventory"}
	ff.register(cmd)
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	list := &cobra.Command{
		Use:   "list",
		Short: "List devices with their model, health and last contact",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			var ds []deviceView
			if err := c.do("GET", "/v1/devices", "", nil, &ds); err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(e.stdout, ds)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DEVICE\tONLINE\tMODEL\tRELEASE\tHEALTH\tPREDICTIONS\tLAST\tDRIFT\tLAST SEEN\tLABELS")
			for _, d := range ds {
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
				fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", d.ID, d.Online, model, rel, orDash(d.Health), d.Predictions, last, drift, d.LastSeen.Local().Format(time.DateTime), labelString(d.Labels))
			}
			return tw.Flush()
		},
	}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show everything the fleet knows about one device (JSON)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.do("GET", "/v1/devices/"+args[0], "", nil, &raw); err != nil {
				return err
			}
			var buf bytes.Buffer
			json.Indent(&buf, raw, "", "  ")
			buf.WriteByte('\n')
			_, err = e.stdout.Write(buf.Bytes())
			return err
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
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			if err := c.do("DELETE", "/v1/devices/"+args[0], "", nil, nil); err != nil {
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
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			if err := c.do("POST", "/v1/devices/"+args[0]+"/reset", "application/json", nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "device %s reset: its next state will be taken\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(list, show, forget, reset)
	return cmd
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
