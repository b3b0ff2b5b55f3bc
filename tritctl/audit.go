package tritctl

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/api"
)

// parseSince reads --since: a duration back from now ("2h", "30m") or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, usagef("--since %q: want a positive duration", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usagef("--since %q: want a duration back from now (2h) or an RFC 3339 time (2026-01-02T15:04:05Z)", s)
	}
	return t, nil
}

// newAuditCmd is `tritctl audit`: the fleet's audit trail (admin).
func newAuditCmd(e *env) *cobra.Command {
	var ff fleetFlags
	var asJSON bool
	var q api.AuditQuery
	var since string
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the fleet's audit trail: who changed what, when, from where, and how it went",
		Long: `Show the fleet's audit trail (an admin's token is needed): every change
made through the API, the web console or 'trit-fleet operators' — publish,
rollouts, device reset and forget, operators, backups, remote training,
configuration reloads — and every request refused for its role (403), with
who, the role, the source address and program, the action, the object, the
outcome and a detail. Oldest first; --limit keeps the newest.`,
		Example: `  tritctl audit --since 24h
  tritctl audit --operator alice
  tritctl audit --object rollout/r7 --json
  tritctl audit --action rollout.abort --limit 20`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return err
				}
				q.Since = t
			}
			if q.Limit < 0 {
				return usagef("--limit %d: want a positive number (0: the fleet's default, 1000)", q.Limit)
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			es, err := c.Audit(&q)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(e.stdout, es)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tWHO\tROLE\tACTION\tOBJECT\tOUTCOME\tFROM\tDETAIL")
			for _, a := range es {
				outcome := a.Outcome
				if a.Status != 0 {
					outcome += fmt.Sprintf(" (%d)", a.Status)
				}
				from := orDash(a.Remote)
				if a.Agent != "" {
					from += " " + a.Agent
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Time.UTC().Format(time.RFC3339), a.Who, orDash(a.Role), a.Action,
					orDash(a.Object), outcome, from, a.Detail)
			}
			return tw.Flush()
		},
	}
	ff.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&q.Operator, "operator", "", "only this operator's entries")
	cmd.Flags().StringVar(&q.Object, "object", "", "only entries about this object (rollout/r7) or kind (rollout)")
	cmd.Flags().StringVar(&q.Action, "action", "", "only this action (rollout.abort) or kind (rollout)")
	cmd.Flags().StringVar(&since, "since", "", "only entries since then: a duration back from now (24h) or an RFC 3339 time")
	cmd.Flags().IntVar(&q.Limit, "limit", 0, "the newest N entries (0: the fleet's default, 1000)")
	return cmd
}

// The fleet's audit trail names the program: tritctl and its version.
func init() { api.UserAgent = "tritctl/" + Version }
