package rollout

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
)

// What the audit trail says about a rollout: everything that decides what
// it does — bundle, targets, pace, abort criterion, timeout, retries,
// gates, the rollback flag, creator and approval — in one line, so the
// record alone answers "what did this person start?" (store.MaxAuditField
// clips it; the device list is the part cut short). The engine owns the
// words as it owns the fields: the service (an automatic rollback), the
// API and the console write them into their records.

// RequestText describes a rollout request as it was asked for (recorded
// when the request fails).
func RequestText(req *api.RolloutRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bundle %s", clip(req.Bundle, 64))
	b.WriteString("; targets " + targetsText(req.Devices, req.Selector, len(req.Devices)))
	policyText(&b, req.Pace, req.Abort, req.Timeout, req.Retries, req.Shadow)
	switch {
	case req.NoGate:
		b.WriteString("; confidence gate off")
	case req.Gate != nil:
		b.WriteString("; " + gateText(req.Gate, req.Shadow != nil))
	}
	fmt.Fprintf(&b, "; rollback %s", yesNo(req.Rollback))
	if req.Emergency {
		b.WriteString(" (emergency)")
	}
	if req.AllowUnknown {
		b.WriteString("; allow unknown devices")
	}
	return b.String()
}

// Text describes a stored rollout.
func Text(r *Rollout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bundle %.12s (%s release %d)", r.Bundle, r.ModelID, r.Release)
	b.WriteString("; targets " + targetsText(r.Order, r.Selector, len(r.Order)))
	policyText(&b, r.Pace, r.Abort, r.Timeout, r.Retries, r.Shadow)
	if r.Gate != nil {
		b.WriteString("; " + gateText(r.Gate, r.Shadow != nil))
	} else {
		b.WriteString("; confidence gate " + orDash(r.GateNote))
	}
	fmt.Fprintf(&b, "; rollback %s; created by %s; approval %s", yesNo(r.Rollback), orDash(r.CreatedBy), approvalText(r.Approval, r.State))
	return b.String()
}

// gateText describes a confidence gate; a shadow rollout's is judged on
// the shadow reports, not after g.MinWindows.
func gateText(g *api.ConfidenceGate, shadow bool) string {
	when := fmt.Sprintf("from %d windows, decided by %d", g.MinWindows, api.DecideWindowsFactor*g.MinWindows)
	if shadow {
		when = "on the shadow reports"
	}
	return fmt.Sprintf("confidence gate unknown ≤ +%g, confidence ≥ −%g, %s", g.MaxUnknownIncrease, g.MaxConfidenceDrop, when)
}

// approvalText says where a rollout's approval stands.
func approvalText(a *api.Approval, state api.RolloutState) string {
	switch {
	case a == nil:
		return "not required"
	case a.Emergency:
		return "none: emergency rollback by " + orDash(a.ApprovedBy)
	case a.Pending() && state.Done():
		return "never given (" + string(state) + ")"
	case a.Pending():
		return "waiting for a second person"
	}
	return "by " + a.ApprovedBy
}

func targetsText(devices []string, sel map[string]string, n int) string {
	var b strings.Builder
	if len(sel) > 0 {
		b.WriteString("selector " + SelectorText(sel) + ", ")
	}
	fmt.Fprintf(&b, "%d devices", n)
	if len(devices) > 0 {
		const show = 20
		fmt.Fprintf(&b, " (%s", strings.Join(devices[:min(show, len(devices))], ", "))
		if len(devices) > show {
			fmt.Fprintf(&b, ", and %d more", len(devices)-show)
		}
		b.WriteString(")")
	}
	return b.String()
}

// SelectorText writes a device selector as the CLI takes it ("k=v,k=v"),
// "(every device)" for none: for the audit trail and a retraining
// policy's words.
func SelectorText(sel map[string]string) string {
	if len(sel) == 0 {
		return "(every device)"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		parts = append(parts, k+"="+sel[k])
	}
	return strings.Join(parts, ",")
}

func policyText(b *strings.Builder, pace api.Pace, abort api.AbortPolicy, timeout time.Duration, retries map[string]int, sh *api.ShadowPolicy) {
	switch {
	case len(pace.Phases) > 0:
		ps := make([]string, len(pace.Phases))
		for i, ph := range pace.Phases {
			if ph.Count > 0 {
				ps[i] = fmt.Sprint(ph.Count)
			} else {
				ps[i] = fmt.Sprintf("%g%%", ph.Percent)
			}
		}
		b.WriteString("; phases " + strings.Join(ps, ","))
	case pace.Rate != nil:
		fmt.Fprintf(b, "; rate %g/min ×%g after %d", pace.Rate.BasePerMinute, pace.Rate.Factor, pace.Rate.IncreaseAfter)
	default:
		b.WriteString("; all at once")
	}
	if abort.On != "" {
		fmt.Fprintf(b, "; abort on %s > %g%% after %d", abort.On, abort.ThresholdPercent, abort.MinExecuted)
	} else {
		b.WriteString("; no abort criterion")
	}
	if timeout > 0 {
		fmt.Fprintf(b, "; timeout %v", timeout)
	}
	if len(retries) > 0 {
		var rs []string
		for _, k := range slices.Sorted(maps.Keys(retries)) {
			rs = append(rs, fmt.Sprintf("%s=%d", k, retries[k]))
		}
		b.WriteString("; retries " + strings.Join(rs, ","))
	}
	if sh == nil {
		b.WriteString("; no shadow")
		return
	}
	fmt.Fprintf(b, "; shadow %d phase(s), %d windows, gates: %s", max(sh.Phases, 1), sh.Windows(), shadowGatesText(sh))
}

// shadowGatesText lists the shadow gates that are checked.
func shadowGatesText(sh *api.ShadowPolicy) string {
	var g []string
	if sh.MinAgreement > 0 {
		g = append(g, fmt.Sprintf("agreement ≥ %g", sh.MinAgreement))
	}
	if sh.MaxDivergence > 0 {
		g = append(g, fmt.Sprintf("divergence ≤ %g", sh.MaxDivergence))
	}
	if sh.MaxLowMargin > 0 {
		g = append(g, fmt.Sprintf("low margin ≤ %g", sh.MaxLowMargin))
	}
	if sh.MaxTrainDivergence > 0 {
		g = append(g, fmt.Sprintf("divergence from training ≤ %g", sh.MaxTrainDivergence))
	}
	if sh.MaxUnknownIncrease > 0 {
		g = append(g, fmt.Sprintf("unknown increase ≤ %g", sh.MaxUnknownIncrease))
	}
	if len(g) == 0 {
		return "none"
	}
	return strings.Join(g, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clip shortens s to at most n bytes, saying how long it was: the words
// of fault.Clip (fleet/fault), which the engine does not import (it
// imports no store); TestRolloutTexts pins them.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:n], len(s))
}
