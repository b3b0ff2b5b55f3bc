package tritctl

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/internal/newfile"
)

// newOperatorsCmd is `tritctl operators`: the fleet's operators over its
// API (an admin's token); `trit-fleet operators` does the same on the
// fleet's host, also before the first start.
func newOperatorsCmd(e *env) *cobra.Command {
	var ff fleetFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "operators",
		Short: "Manage the fleet's operators (people and machines with a token and a role)",
		Long: `Manage the fleet's operators over its API; an admin's token is needed,
except for whoami. Roles: viewer, operator, release-manager, admin, metrics
(docs/FLEET.md, "Operators, roles and the audit trail"). A new token is
shown once; the fleet keeps only its SHA-256.`,
		Example: `  tritctl operators whoami
  tritctl operators list
  tritctl operators add carol --role operator -o carol.token   # the token goes to a new file (mode 0600)
  tritctl operators disable carol`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usagef("operators: give a subcommand (whoami, list, add, disable, enable, rotate, remove)")
		},
	}
	ff.register(cmd)
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	show := func(n *api.NewOperator, tokenFile, what string) error {
		if asJSON {
			return writeJSONTo(e.stdout, n)
		}
		if tokenFile != "" {
			if err := newfile.Write(tokenFile, 0o600, []byte(n.Token+"\n")); err != nil {
				return fmt.Errorf("--token-file: %w (operator %s is %s; rotate it to make another token)", err, n.Operator.Name, what)
			}
			fmt.Fprintf(e.stdout, "operator %s (%s) %s; token written to %s\n", n.Operator.Name, n.Operator.Role, what, tokenFile)
			return nil
		}
		fmt.Fprintf(e.stdout, "operator %s (%s) %s; the token (shown only now):\n%s\n", n.Operator.Name, n.Operator.Role, what, n.Token)
		return nil
	}
	whoami := &cobra.Command{
		Use:     "whoami",
		Short:   "Show whose token this is and its role",
		Example: `  tritctl operators whoami --token-file alice.token`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			w, err := c.WhoAmI()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(e.stdout, w)
			}
			fmt.Fprintf(e.stdout, "%s (%s)\n", w.Name, w.Role)
			return nil
		},
	}
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the operators (never their tokens)",
		Example: `  tritctl operators list --json`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			ops, err := c.Operators()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(e.stdout, ops)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROLE\tKIND\tSTATE\tCREATED\tEXPIRES\tBY")
			for _, o := range ops {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Name, o.Role, o.Kind(), o.State(), o.Created.UTC().Format(time.RFC3339), o.ExpiresText(), orDash(o.CreatedBy))
			}
			return tw.Flush()
		},
	}
	var role, expires, tokenFile string
	var machine bool
	add := &cobra.Command{
		Use:   "add NAME --role ROLE",
		Short: "Add an operator and show its token once",
		Example: `  tritctl operators add bob --role operator
  tritctl operators add prometheus --role metrics --machine --expires 8760h -o prom.token`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			req := api.OperatorRequest{Name: args[0], Role: role, Machine: machine}
			if expires != "" {
				t, err := api.ParseExpiry(expires, time.Now())
				if err != nil {
					return usagef("--expires: %v", err)
				}
				req.Expires = t
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			n, err := c.AddOperator(&req)
			if err != nil {
				return err
			}
			return show(n, tokenFile, "added")
		},
	}
	add.Flags().StringVar(&role, "role", "", "viewer, operator, release-manager, admin or metrics (required)")
	add.Flags().BoolVar(&machine, "machine", false, "a script or scraper: the token cannot sign in to the console")
	add.Flags().StringVar(&expires, "expires", "", "the token stops working then: a duration (720h, 90d), a date (2027-01-31) or an RFC 3339 time")
	add.Flags().StringVarP(&tokenFile, "out", "o", "", "write the token to this new file (mode 0600) instead of printing it")
	add.MarkFlagRequired("role")
	op := func(name, short, done string) *cobra.Command {
		return &cobra.Command{
			Use:     name + " NAME",
			Short:   short,
			Example: "  tritctl operators " + name + " bob",
			Args:    cobra.ExactArgs(1),
			RunE: func(_ *cobra.Command, args []string) error {
				c, err := ff.client()
				if err != nil {
					return err
				}
				o, err := c.OperatorOp(args[0], name)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSONTo(e.stdout, o.Operator)
				}
				fmt.Fprintf(e.stdout, "operator %s %s\n", args[0], done)
				return nil
			},
		}
	}
	var rotateFile string
	rotate := &cobra.Command{
		Use:     "rotate NAME",
		Short:   "Give an operator a new token (shown once); the old one stops working at once",
		Example: `  tritctl operators rotate bob --out bob.token`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			n, err := c.OperatorOp(args[0], "rotate")
			if err != nil {
				return err
			}
			return show(n, rotateFile, "has a new token")
		},
	}
	rotate.Flags().StringVarP(&rotateFile, "out", "o", "", "write the token to this new file (mode 0600) instead of printing it")
	remove := &cobra.Command{
		Use:     "remove NAME",
		Short:   "Remove an operator (its token stops working at once; its audit records stay)",
		Example: `  tritctl operators remove bob`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client()
			if err != nil {
				return err
			}
			if err := c.RemoveOperator(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "operator %s removed\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(whoami, list, add, op("disable", "Disable an operator: its token is refused from the next request on", "disabled; its token is refused from now on"),
		op("enable", "Enable a disabled operator again", "enabled"), rotate, remove)
	return cmd
}
