package tritctl

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
)

func newBundleCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Sign, verify and inspect model bundles",
		Long: `A bundle is the signed model file the fleet ships to gateways (format:
docs/BUNDLE.md). 'tritctl train' writes unsigned bundles; sign them with a
key from 'tritctl keys gen', check them as an agent would with verify, and
look inside with inspect. ('tritctl bundles list' lists the bundles
registered with the fleet.)`,
		Example: `  tritctl bundle sign --key release.key vib.trit -o vib-3.trit --release 3
  tritctl bundle verify --key release.pub vib-3.trit
  tritctl bundle inspect vib-3.trit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usagef("bundle: give a subcommand (sign, verify, inspect)")
		},
	}
	cmd.AddCommand(newBundleSignCmd(e), newBundleVerifyCmd(e), newBundleInspectCmd(e))
	return cmd
}

// bundleResult is what `bundle sign --json` and `bundle verify --json`
// print.
type bundleResult struct {
	File      string `json:"file"`
	Size      int    `json:"size"`
	ModelID   string `json:"model_id"`
	Release   uint64 `json:"release"`
	CreatedAt int64  `json:"created_at"` // Unix seconds
	ExpiresAt int64  `json:"expires_at"` // Unix seconds, 0 = never
	KeyID     string `json:"key_id"`
	Verified  bool   `json:"verified"`
}

type signFlags struct {
	key      string
	out      string
	force    bool
	modelID  string
	release  uint64
	expires  string
	hardware string
	minAgent string
	maxSize  int
	json     bool
}

func newBundleSignCmd(e *env) *cobra.Command {
	f := &signFlags{}
	cmd := &cobra.Command{
		Use:   "sign --key PRIVATE_KEY [flags] UNSIGNED_BUNDLE -o OUT",
		Short: "Sign an unsigned bundle, optionally setting its model ID, release and expiry",
		Long: `sign writes a signed copy of an unsigned bundle (as 'tritctl train' writes
it): the key ID of the private key's public half and an Ed25519 signature
over every byte before the signature.

--model-id, --release, --expires, --hardware and --min-agent replace those
fields before signing (the model itself is untouched; its self-test is
recomputed and checked). The release counter must be at least 1, and agents
refuse a release that is not above the one they run, so give each signed
release of a model a higher --release.

The signed bundle is decoded again with the key before it is written, and
refused if it is larger than --max-size (agents' default cap: 30 KB).`,
		Example: `  tritctl bundle sign --key release.key vib.trit -o vib-3.trit --release 3 --expires 2160h
  tritctl bundle sign --key release.key room.trit -o room-1.trit --expires 2030-06-30T00:00:00Z`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runSign(e, cmd, f, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.key, "key", "", "private key file from 'tritctl keys gen' (required)")
	fl.StringVarP(&f.out, "out", "o", "", "signed bundle to write (required)")
	fl.BoolVar(&f.force, "force", false, "replace --out if it exists")
	fl.StringVar(&f.modelID, "model-id", "", "set the model ID")
	fl.Uint64Var(&f.release, "release", 0, "set the release counter (>= 1)")
	fl.StringVar(&f.expires, "expires", "", `set the expiry: a duration from now ("2160h"), an RFC 3339 time, or "never"`)
	fl.StringVar(&f.hardware, "hardware", "", "set the hardware/sensor-set label")
	fl.StringVar(&f.minAgent, "min-agent", "", "set the minimum agent version (major.minor.patch)")
	fl.IntVar(&f.maxSize, "max-size", bundle.DefaultMaxSize, "refuse a signed bundle larger than this many bytes")
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of text")
	return cmd
}

func runSign(e *env, cmd *cobra.Command, f *signFlags, in string) error {
	switch {
	case f.key == "":
		return usagef("--key is required")
	case f.out == "":
		return usagef("--out is required")
	case cmd.Flags().Changed("release") && f.release == 0:
		return usagef("--release must be at least 1")
	case f.maxSize <= 0:
		return usagef("--max-size must be positive")
	}
	var expires *time.Time
	if f.expires != "" {
		t, err := parseExpiry(f.expires, time.Now())
		if err != nil {
			return usagef("--expires: %v", err)
		}
		expires = &t
	}
	priv, err := bundle.LoadPrivateKey(f.key)
	if err != nil {
		return err
	}
	raw, err := readFileCapped(in, "bundle file", maxFileSize)
	if err != nil {
		return err
	}
	br, err := bundle.Inspect(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if br.Signed {
		return fmt.Errorf("%s: already signed by key %s; sign the unsigned bundle 'tritctl train' wrote", in, br.KeyID)
	}
	b := br.Bundle
	changed := false
	fl := cmd.Flags()
	if fl.Changed("model-id") {
		b.Header.ModelID, changed = f.modelID, true
	}
	if fl.Changed("release") {
		b.Header.Release, changed = f.release, true
	}
	if expires != nil {
		b.Header.ExpiresAt, changed = *expires, true
	}
	if fl.Changed("hardware") {
		b.Compat.Hardware, changed = f.hardware, true
	}
	if fl.Changed("min-agent") {
		b.Compat.MinAgentVersion, changed = f.minAgent, true
	}
	if changed {
		if raw, err = bundle.Encode(b); err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
	}
	signed, err := bundle.Sign(raw, priv)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if len(signed) > f.maxSize {
		return fmt.Errorf("%s: the signed bundle is %d bytes, above --max-size %d", in, len(signed), f.maxSize)
	}
	// Check the result exactly as an agent trusting this key would.
	ks, err := bundle.NewKeySet(priv.Public().(ed25519.PublicKey))
	if err != nil {
		return err
	}
	res, _, err := verifyBundle(signed, ks, f.maxSize)
	if err != nil {
		return fmt.Errorf("%s: the signed bundle does not verify: %w", in, err)
	}
	if err := writeFileAtomic(f.out, signed, 0o644, f.force); err != nil {
		return err
	}
	res.File = f.out
	if f.json {
		return writeJSON(e.stdout, res)
	}
	fmt.Fprintf(e.stdout, "signed %s → %s (%d bytes)\n", in, f.out, res.Size)
	printBundleResult(e.stdout, res)
	return nil
}

// parseExpiry reads --expires: "never", a duration from now, or an RFC 3339
// time after now. The zero Time means never.
func parseExpiry(s string, now time.Time) (time.Time, error) {
	if s == "never" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("duration %s is not positive", s)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (2160h), an RFC 3339 time nor \"never\"", s)
	}
	// A bundle stores its expiry in Unix seconds, 0 for never: a time
	// before now is refused here, not turned into never (the zero Time,
	// 1970-01-01T00:00:00Z) or left to fail the signed bundle's check.
	if !t.After(now) {
		return time.Time{}, fmt.Errorf("%q is not in the future", s)
	}
	return t, nil
}

// verifyBundle decodes raw as an agent does (size cap, signature by a
// trusted key, strict fields, expiry), builds the model and runs the
// self-test.
func verifyBundle(raw []byte, ks *bundle.KeySet, maxSize int) (*bundleResult, *bundle.Bundle, error) {
	b, err := bundle.Decode(raw, &bundle.DecodeOptions{Trusted: ks, MaxSize: maxSize})
	if err != nil {
		return nil, nil, err
	}
	m, err := inference.New(b.Spec)
	if err != nil {
		return nil, nil, err
	}
	if err := bundle.SelfTest(m, b); err != nil {
		return nil, nil, err
	}
	return &bundleResult{
		Size: len(raw), ModelID: b.Header.ModelID, Release: b.Header.Release,
		CreatedAt: unixOrZero(b.Header.CreatedAt), ExpiresAt: unixOrZero(b.Header.ExpiresAt),
		KeyID: fmt.Sprintf("%x", b.KeyID), Verified: true,
	}, b, nil
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func printBundleResult(w io.Writer, r *bundleResult) {
	fmt.Fprintf(w, "  model ID %q, release %d\n", r.ModelID, r.Release)
	fmt.Fprintf(w, "  created %s, expires %s\n", fmtUnix(r.CreatedAt), fmtUnix(r.ExpiresAt))
	fmt.Fprintf(w, "  signed by key %s\n", r.KeyID)
}

func fmtUnix(s int64) string {
	if s == 0 {
		return "never"
	}
	return time.Unix(s, 0).UTC().Format(time.RFC3339)
}

func newBundleVerifyCmd(e *env) *cobra.Command {
	var trusted, trustedOld []string
	var maxSize int
	var agent string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify --key PUBLIC_KEY [--key PUBLIC_KEY ...] BUNDLE",
		Short: "Check a bundle exactly as an agent does: size, signature by a trusted key, fields, expiry, self-test",
		Long: `verify decodes BUNDLE the way trit-agent does before it will run it: the size
cap, magic and version, then the signature (the key ID must name one of the
trusted public keys given with --key, and the Ed25519 signature must
verify), then every field, the expiry, and finally the model's self-test.
Give --key once per key: during a key rotation agents trust the old and the
new key. (--key names the key a command uses, as in bundle sign --key; the
former --trusted still works.)

It exits 0 if the bundle would be accepted and 1, naming the problem, if not.`,
		Example: `  tritctl bundle verify --key release.pub vib-1.trit
  tritctl bundle verify --key release.pub --key release-2027.pub --agent-version 0.5.0 vib-1.trit   # during a key rotation`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			trusted = append(trusted, trustedOld...)
			if len(trusted) == 0 {
				return usagef("give at least one trusted public key with --key")
			}
			if maxSize <= 0 {
				return usagef("--max-size must be positive")
			}
			ks, err := bundle.LoadKeySet(trusted...)
			if err != nil {
				return err
			}
			raw, err := readFileCapped(args[0], "bundle file", maxFileSize)
			if err != nil {
				return err
			}
			res, b, err := verifyBundle(raw, ks, maxSize)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if agent != "" {
				if err := b.Compat.CheckAgent(agent); err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
			}
			res.File = args[0]
			if asJSON {
				return writeJSON(e.stdout, res)
			}
			fmt.Fprintf(e.stdout, "%s: OK (%d bytes)\n", args[0], res.Size)
			printBundleResult(e.stdout, res)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&trusted, "key", nil, "trusted public key file (repeat for several)")
	// The former name, deprecated and hidden, kept working for scripts
	// (MarkDeprecated would print a notice on stdout, into --json output).
	fl.StringArrayVar(&trustedOld, "trusted", nil, "deprecated: use --key")
	fl.MarkHidden("trusted")
	fl.IntVar(&maxSize, "max-size", bundle.DefaultMaxSize, "size cap in bytes, as the agent's")
	fl.StringVar(&agent, "agent-version", "", "also check that an agent of this version (major.minor.patch) may run it")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object instead of text")
	return cmd
}

// inspectOutput is `bundle inspect --json`: the bundle's Breakdown plus the
// self-test outcome.
type inspectOutput struct {
	File string `json:"file"`
	// Hash is the SHA-256 of the file: for a signed bundle, the hash the
	// fleet registers it by and rollouts name it by.
	Hash string `json:"hash"`
	*bundle.Breakdown
	SelfTestOK    bool   `json:"selftest_ok"`
	SelfTestError string `json:"selftest_error,omitempty"`
}

func newBundleInspectCmd(e *env) *cobra.Command {
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "inspect [--json] [--all] BUNDLE",
		Short: "Print every field of a bundle and where its bytes go",
		Long: `inspect prints every field of BUNDLE and the size of each section. It does
not verify the signature or the expiry (use 'tritctl bundle verify'); it
does run the model's self-test. Long lists (scaler values, kept columns,
feature names) are shortened unless --all is given; --json prints
everything, the file's SHA-256 (hash) included: for a signed bundle, the
hash the fleet registers it by.`,
		Example: `  tritctl bundle inspect vib-1.trit
  tritctl bundle inspect --all vib-1.trit
  tritctl bundle inspect --json vib-1.trit | jq -r .hash`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := readFileCapped(args[0], "bundle file", maxFileSize)
			if err != nil {
				return err
			}
			br, err := bundle.Inspect(raw)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			sum := sha256.Sum256(raw)
			out := inspectOutput{File: args[0], Hash: hex.EncodeToString(sum[:]), Breakdown: br}
			if m, err := inference.New(br.Bundle.Spec); err != nil {
				out.SelfTestError = err.Error()
			} else if err := bundle.SelfTest(m, br.Bundle); err != nil {
				out.SelfTestError = err.Error()
			} else {
				out.SelfTestOK = true
			}
			if asJSON {
				return writeJSON(e.stdout, out)
			}
			printInspect(e.stdout, &out, all)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of text")
	cmd.Flags().BoolVar(&all, "all", false, "print long lists in full")
	return cmd
}

func printInspect(w io.Writer, o *inspectOutput, all bool) {
	b := o.Breakdown
	limit := 8
	if all {
		limit = -1
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, a...)) }
	row("file", "%s", o.File)
	if b.Signed {
		row("hash", "%s (SHA-256; the fleet's name for it: rollout create --bundle)", o.Hash)
	} else {
		row("hash", "%s (SHA-256 of this unsigned file; signing makes a new one)", o.Hash)
	}
	row("size", "%d bytes, format version %d", b.Size, b.FormatVersion)
	row("model ID", "%q", b.ModelID)
	row("release", "%d", b.Release)
	row("created", "%s", fmtUnix(b.CreatedAt))
	row("expires", "%s", fmtUnix(b.ExpiresAt))
	if b.FeatureNames == nil {
		row("features", "%d; no feature names: channels are matched by position", b.Features)
	} else {
		row("features", "%d, matched by name: %s", b.Features, shorten(b.FeatureNames, limit))
	}
	row("min agent", "%s", b.MinAgentVersion)
	hw := b.Hardware
	if hw == "" {
		hw = "(any)"
	}
	row("hardware", "%s", hw)
	row("classes", "%d: %s", len(b.Classes), shorten(b.Classes, limit))
	clip := "not clipped"
	if b.ScalerClip {
		clip = "clipped to [-1, 1]"
	}
	row("scaler", "%s, %d ranges, %s", b.ScalerForm, len(b.ScalerLo), clip)
	row("  lo", "%s", shorten(floats(b.ScalerLo), limit))
	row("  hi", "%s", shorten(floats(b.ScalerHi), limit))
	if b.FormatVersion >= 2 {
		if b.ThresholdCount == 0 {
			row("thresholds", "none")
		} else {
			per := make([]string, len(b.Thresholds))
			for i, list := range b.Thresholds {
				per[i] = strconv.Itoa(len(list))
			}
			row("thresholds", "%d on %d features (%s, weight %d), per feature: %s", b.ThresholdCount, len(b.Thresholds), b.ThresholdsForm, b.ThresholdWeight, shorten(per, limit))
		}
		if b.FormatVersion >= 3 {
			if b.TreeCount == 0 {
				row("trees", "none")
			} else {
				per := make([]string, len(b.TreeFeatures))
				for i, n := range b.TreeFeatures {
					per[i] = strconv.Itoa(n)
				}
				if b.TreePlanes > 1 {
					// Plane p's columns weigh ρ·2^p.
					weights := make([]string, b.TreePlanes)
					for p := range weights {
						weights[p] = strconv.Itoa(b.ThresholdWeight << p)
					}
					row("trees", "%d of depth %d, %d planes: %d leaf columns (weights %s), tests per feature: %s", b.TreeCount, b.TreeDepth, b.TreePlanes, b.TreeColumns, strings.Join(weights, ", "), shorten(per, limit))
				} else {
					row("trees", "%d of depth %d, %d leaf columns (weight %d), tests per feature: %s", b.TreeCount, b.TreeDepth, b.TreeColumns, b.ThresholdWeight, shorten(per, limit))
				}
			}
		}
		if p := b.Projection; p == nil {
			row("projection", "none")
		} else {
			packs := make([]bundle.Packing, len(p.Rows))
			for i, r := range p.Rows {
				packs[i] = r.Packing
			}
			row("projection", "%d inputs → %d, ternary: %s", p.Inputs, p.Outputs, packingSummary(packs))
		}
	}
	if b.P == 0 {
		row("transform", "none (p = 0: no random features, so no σ; the embedding is %s)", embeddingWithoutP(b.ThresholdCount, b.TreeCount))
	} else {
		row("transform", "generator %d, seed %d, σ %g, d %d, p %d", b.Generator, b.Seed, b.Sigma, b.TransformD, b.P)
	}
	cols := make([]string, len(b.KeptColumns))
	for i, c := range b.KeptColumns {
		cols[i] = strconv.Itoa(int(c))
	}
	row("kept columns", "%d of %d (%s): %s", len(b.KeptColumns), b.Columns, b.KeptForm, shorten(cols, limit))
	st := "pass"
	if !o.SelfTestOK {
		st = "FAIL: " + o.SelfTestError
	}
	row("self-test", "class %d, %s", b.SelfTestClass, st)
	if b.FormatVersion >= 2 {
		if b.Fingerprint > 0 {
			row("fingerprint", "training firing rates of %d kept columns (drift detection)", b.Fingerprint)
		} else {
			row("fingerprint", "none")
		}
		if c := b.Calibration; c != nil {
			conf := make([]string, len(c.Confidence))
			for i, v := range c.Confidence {
				conf[i] = fmt.Sprintf("%.1f%%", 100*float64(v)/255)
			}
			edges := make([]string, len(c.Edges))
			for i, e := range c.Edges {
				edges[i] = strconv.FormatFloat(float64(e), 'g', 4, 32)
			}
			novelty := "fingerprint bits"
			if c.Outside > 0 {
				novelty = fmt.Sprintf("fingerprint bits, and %d to %d per feature past its training range", c.Outside, 2*int(c.Outside))
			}
			row("calibration", "%d margin bins (edges %s), confidence %s; unknown below %.1f%% confidence or above novelty %d (0: never; novelty of the %s)",
				len(c.Confidence), orDash(strings.Join(edges, " ")), strings.Join(conf, " "), 100*float64(c.MinConfidence)/255, c.MaxNovelty, novelty)
			if len(c.Offsets) > 0 {
				offs := make([]string, len(c.Offsets))
				for i, o := range c.Offsets {
					offs[i] = strconv.Itoa(int(o))
				}
				row("offsets", "%s (added to each weight vector's integer score: the decision moved toward the classes the held-out rows favoured)", strings.Join(offs, " "))
			}
		}
		keys := slices.Sorted(maps.Keys(b.Info))
		if len(keys) == 0 {
			row("info", "none")
		}
		for _, k := range keys {
			v := b.Info[k]
			if cut := 120; !all && len(v) > cut {
				for !utf8.RuneStart(v[cut]) {
					cut--
				}
				v = v[:cut] + " … (--all prints it whole)"
			}
			row("  "+k, "%s", v)
		}
	}
	if b.Signed {
		row("key ID", "%s", b.KeyID)
		row("signature", "%s (present, not verified: use 'tritctl bundle verify')", b.Signature)
	} else {
		row("signature", "none (unsigned; sign with 'tritctl bundle sign')")
	}
	tw.Flush()

	fmt.Fprintln(w, "\nweight vectors:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "vector\tclass\t+1\t-1\t0\tα\tform\tbytes\tbits/weight\tself-test score\t")
	for i, v := range b.Vectors {
		class := b.Classes[i]
		if len(b.Vectors) == 1 {
			class = b.Classes[1] + " vs " + b.Classes[0]
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%g\t%s\t%d\t%.2f\t%d\t\n", i, class, v.Plus, v.Minus, v.Zero, v.Alpha, v.Form, v.Bytes, v.BitsPerWeight, v.SelfTestScore)
	}
	tw.Flush()

	if p := b.Projection; p != nil && all {
		fmt.Fprintln(w, "\nprojection rows:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "output\t+1\t-1\t0\tscale\tbias\tform\tbytes\tbits/weight\t")
		for i, r := range p.Rows {
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%g\t%g\t%s\t%d\t%.2f\t\n", i, r.Plus, r.Minus, r.Zero, r.Scale, r.Bias, r.Form, r.Bytes, r.BitsPerWeight)
		}
		tw.Flush()
	}

	fmt.Fprintln(w, "\nbytes by section:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "section\toffset\tbytes\tshare\t")
	for _, s := range b.Sections {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%%\t\n", s.Name, s.Offset, s.Size, 100*float64(s.Size)/float64(b.Size))
	}
	fmt.Fprintf(tw, "total\t\t%d\t\t\n", b.Size)
	tw.Flush()
}

// packingSummary describes how ternary vectors are stored: how many in each
// form, their payload bytes and bits per coefficient.
func packingSummary(ps []bundle.Packing) string {
	forms := map[string]int{}
	bytes, coefs := 0, 0
	for _, p := range ps {
		forms[p.Form]++
		bytes += p.Bytes
		coefs += p.Plus + p.Minus + p.Zero
	}
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(forms)) {
		parts = append(parts, fmt.Sprintf("%d %s", forms[f], f))
	}
	bits := 0.0
	if coefs > 0 {
		bits = 8 * float64(bytes) / float64(coefs)
	}
	return fmt.Sprintf("%s rows, %d bytes, %.2f bits per coefficient (--all lists them)", strings.Join(parts, ", "), bytes, bits)
}

// shorten joins items, keeping the first and last few unless limit < 0.
func shorten(items []string, limit int) string {
	if limit < 0 || len(items) <= limit {
		return strings.Join(items, " ")
	}
	h := limit / 2
	return fmt.Sprintf("%s … %s (%d in all; --all prints every one)",
		strings.Join(items[:h], " "), strings.Join(items[len(items)-h:], " "), len(items))
}

func floats(vs []float32) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strconv.FormatFloat(float64(v), 'g', -1, 32)
	}
	return out
}

// embeddingWithoutP names what a bundle without random features embeds
// its input with: threshold bits, tree leaves or both.
func embeddingWithoutP(thresholds, trees int) string {
	switch {
	case thresholds > 0 && trees > 0:
		return "threshold bits and boosted trees' leaves"
	case trees > 0:
		return "boosted trees' leaves"
	}
	return "threshold bits"
}
