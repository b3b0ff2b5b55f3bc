package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/newfile"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
)

// operatorBackend is where `trit-fleet operators` makes its changes: the
// database file itself when trit-fleet does not run, else the running
// service's API (which holds the file's lock) with the api.token_file's
// admin credential.
type operatorBackend interface {
	Add(req api.OperatorRequest) (*api.NewOperator, error)
	Op(name, op string) (*api.NewOperator, error) // disable, enable, rotate
	Remove(name string) error
	List() ([]api.Operator, error)
	Close() error
}

// directOperators changes the database file and audits each change as the
// local user.
type directOperators struct {
	db    store.Database
	ops   *access.Operators
	audit *access.Audit
	who   string
}

func (d *directOperators) record(action, name, detail string, err error) {
	rec := store.AuditRecord{Who: d.who, Role: string(access.RoleAdmin), Agent: "cli", Action: action, Object: "operator/" + name,
		Outcome: store.AuditOK, Detail: detail}
	if err != nil {
		rec.Outcome, rec.Detail = store.AuditFailed, strings.TrimPrefix(err.Error(), "fleet: ")
	}
	d.audit.Record(rec)
}

func (d *directOperators) Add(req api.OperatorRequest) (*api.NewOperator, error) {
	n, err := d.ops.Add(req, d.who)
	d.record("operator.add", req.Name, "role "+req.Role, err)
	return n, err
}

func (d *directOperators) Op(name, op string) (*api.NewOperator, error) {
	var n *api.NewOperator
	var err error
	if op == "rotate" {
		n, err = d.ops.Rotate(name)
	} else {
		var o api.Operator
		o, err = d.ops.SetDisabled(name, op == "disable")
		n = &api.NewOperator{Operator: o}
	}
	d.record("operator."+op, name, "", err)
	return n, err
}

func (d *directOperators) Remove(name string) error {
	err := d.ops.Remove(name)
	d.record("operator.remove", name, "", err)
	return err
}

func (d *directOperators) List() ([]api.Operator, error) { return d.ops.List() }
func (d *directOperators) Close() error                  { return d.db.Close() }

// apiOperators goes through the running service.
type apiOperators struct{ c *api.Client }

func (a apiOperators) Add(req api.OperatorRequest) (*api.NewOperator, error) {
	return a.c.AddOperator(&req)
}
func (a apiOperators) Op(name, op string) (*api.NewOperator, error) { return a.c.OperatorOp(name, op) }
func (a apiOperators) Remove(name string) error                     { return a.c.RemoveOperator(name) }
func (a apiOperators) List() ([]api.Operator, error)                { return a.c.Operators() }
func (a apiOperators) Close() error                                 { return nil }

// localUser names whoever runs the command, for the audit trail.
func localUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "local:" + u.Username
	}
	return "local:uid-" + strconv.Itoa(os.Getuid())
}

// openOperators returns the backend for cfg and says which it is: a
// PostgreSQL database is used directly (every replica reads it).
func openOperators(cfg *Config) (operatorBackend, string, error) {
	// The audit trail's head is signed with the fleet's command key at
	// every append, here too.
	key, err := bundle.LoadPrivateKey(cfg.Keys.CommandKey)
	if err != nil {
		return nil, "", fmt.Errorf("keys.command_key (the audit trail is signed with it; run as the user trit-fleet runs as): %w", err)
	}
	lim := cfg.Audit.limits()
	lim.Key = key
	direct := func(db store.Database) *directOperators {
		return &directOperators{db: db, ops: &access.Operators{DB: db}, audit: access.NewAudit(db, lim, nil, nil), who: localUser()}
	}
	if postgres.IsURL(cfg.Database) {
		db, err := postgres.Open(cfg.Database, nil)
		if err != nil {
			return nil, "", fmt.Errorf("database: %w", err)
		}
		return direct(db), "database " + cfg.databaseName(), nil
	}
	if err := os.MkdirAll(dirOf(cfg.Database), 0o700); err != nil {
		return nil, "", fmt.Errorf("database: %w", err)
	}
	db, err := store.Open(cfg.Database, &store.Options{Timeout: 200 * time.Millisecond})
	switch {
	case err == nil:
		return direct(db), "database " + cfg.Database, nil
	case !errors.Is(err, store.ErrLocked):
		return nil, "", fmt.Errorf("database: %w", err)
	}
	token, err := readToken(cfg.API.TokenFile)
	if err != nil {
		return nil, "", fmt.Errorf("the database is in use (trit-fleet runs?) and the API token cannot be read: api.token_file: %w", err)
	}
	api.UserAgent = "trit-fleet-operators/" + Version + " (" + localUser() + ")" // the audit trail's "from"
	return apiOperators{api.NewClient("http://"+cfg.API.Listen, token)}, "the running trit-fleet at " + cfg.API.Listen, nil
}

// newOperatorsCmd is `trit-fleet operators`.
func newOperatorsCmd(stdout io.Writer) *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "operators",
		Short: "Manage the people and machines that use the API and the console, each with a role",
		Long: `Operators are people and machines (scripts, Prometheus) with their own
token and role: viewer, operator, release-manager, admin, metrics
(docs/FLEET.md, "Operators, roles and the audit trail"). A token is shown
once, when it is made (add, rotate); the fleet keeps only its SHA-256.
Disabling, rotating or removing takes effect at the next request.

The commands change the database directly when trit-fleet is not running
(the first admin is made that way), or go through the running service's
API with the token in api.token_file. Either way the change is in the
audit trail. Run them as the user trit-fleet runs as.`,
		Example: `  trit-fleet operators add alice --role admin -c /etc/trit/fleet.toml
  trit-fleet operators add prometheus --role metrics --machine --expires 365d -o /etc/prometheus/trit-token
  trit-fleet operators list
  trit-fleet operators disable bob
  trit-fleet operators rotate alice -o alice.token`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("%w: operators: give a subcommand (add, list, disable, enable, rotate, remove)", ErrConfig)
		},
	}
	cmd.PersistentFlags().StringVarP(&configPath, "config", "c", DefaultConfigPath, "trit-fleet configuration file")
	with := func(fn func(b operatorBackend) error) error {
		cfg, err := LoadConfig(configPath)
		if err != nil {
			return err
		}
		b, _, err := openOperators(cfg)
		if err != nil {
			return err
		}
		defer b.Close()
		return fn(b)
	}
	// show prints a new token or writes it to tokenFile.
	show := func(n *api.NewOperator, tokenFile, what string) error {
		if tokenFile != "" {
			if err := newfile.Write(tokenFile, 0o600, []byte(n.Token+"\n")); err != nil {
				return fmt.Errorf("--out: %w (the operator is %s; rotate to make another token)", err, what)
			}
			fmt.Fprintf(stdout, "operator %s (%s) %s; token written to %s\n", n.Operator.Name, n.Operator.Role, what, tokenFile)
			return nil
		}
		fmt.Fprintf(stdout, "operator %s (%s) %s; the token (shown only now):\n%s\n", n.Operator.Name, n.Operator.Role, what, n.Token)
		return nil
	}

	var role, expires, tokenFile string
	var machine bool
	add := &cobra.Command{
		Use:   "add NAME --role ROLE",
		Short: "Add an operator and show its token once",
		Example: `  trit-fleet operators add alice --role admin
  trit-fleet operators add ci --role release-manager --machine --expires 90d -o ci.token`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			req := api.OperatorRequest{Name: args[0], Role: role, Machine: machine}
			if _, err := access.ParseRole(role); err != nil {
				return fmt.Errorf("%w: --role: %v", ErrConfig, strings.TrimPrefix(err.Error(), "bad request: "))
			}
			if expires != "" {
				t, err := api.ParseExpiry(expires, time.Now())
				if err != nil {
					return fmt.Errorf("%w: --expires: %v", ErrConfig, err)
				}
				req.Expires = t
			}
			return with(func(b operatorBackend) error {
				n, err := b.Add(req)
				if err != nil {
					return err
				}
				return show(n, tokenFile, "added")
			})
		},
	}
	add.Flags().StringVar(&role, "role", "", "viewer, operator, release-manager, admin or metrics (required)")
	add.Flags().BoolVar(&machine, "machine", false, "a script or scraper: the token cannot sign in to the console")
	add.Flags().StringVar(&expires, "expires", "", "the token stops working then: a duration (720h, 90d), a date (2027-01-31) or an RFC 3339 time")
	add.Flags().StringVarP(&tokenFile, "out", "o", "", "write the token to this new file (mode 0600) instead of printing it")
	add.MarkFlagRequired("role")

	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the operators (never their tokens)",
		Example: `  trit-fleet operators list -c /etc/trit/fleet.toml
  trit-fleet operators list --json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return with(func(b operatorBackend) error {
				ops, err := b.List()
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(ops)
				}
				tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tROLE\tKIND\tSTATE\tCREATED\tEXPIRES")
				for _, o := range ops {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", o.Name, o.Role, o.Kind(), o.State(), o.Created.UTC().Format(time.RFC3339), o.ExpiresText())
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	simple := func(op, short, done string) *cobra.Command {
		return &cobra.Command{
			Use:     op + " NAME",
			Short:   short,
			Example: "  trit-fleet operators " + op + " bob -c /etc/trit/fleet.toml",
			Args:    cobra.ExactArgs(1),
			RunE: func(_ *cobra.Command, args []string) error {
				return with(func(b operatorBackend) error {
					if _, err := b.Op(args[0], op); err != nil {
						return err
					}
					fmt.Fprintf(stdout, "operator %s %s\n", args[0], done)
					return nil
				})
			},
		}
	}
	var rotateFile string
	rotate := &cobra.Command{
		Use:     "rotate NAME",
		Short:   "Give an operator a new token (shown once); the old one stops working at once",
		Example: `  trit-fleet operators rotate alice -o alice.token`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return with(func(b operatorBackend) error {
				n, err := b.Op(args[0], "rotate")
				if err != nil {
					return err
				}
				return show(n, rotateFile, "has a new token")
			})
		},
	}
	rotate.Flags().StringVarP(&rotateFile, "out", "o", "", "write the token to this new file (mode 0600) instead of printing it")
	remove := &cobra.Command{
		Use:     "remove NAME",
		Short:   "Remove an operator (its token stops working at once; its audit records stay)",
		Example: `  trit-fleet operators remove bob -c /etc/trit/fleet.toml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return with(func(b operatorBackend) error {
				if err := b.Remove(args[0]); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "operator %s removed\n", args[0])
				return nil
			})
		},
	}
	cmd.AddCommand(add, list, simple("disable", "Disable an operator: its token is refused from the next request on", "disabled; its token is refused from now on"),
		simple("enable", "Enable a disabled operator again", "enabled"), rotate, remove)
	return cmd
}
