// Package pgtest runs a PostgreSQL server of its own for tests: Debian's
// postgresql binaries (initdb, postgres, createdb, pg_isready), a data
// directory and Unix socket in a temporary directory, TCP on a free
// 127.0.0.1 port, and settings for speed over durability (fsync off). It
// never uses a PostgreSQL already running on the machine. A test package
// starts one server, lazily on its first use, and gives each test a fresh
// database on it:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestX(t *testing.T) { dsn := pgtest.Database(t) ... }
//
// initdb and postgres refuse to run as root: as root the server runs as the
// unprivileged user "postgres" (TRIT_PG_USER overrides it), which owns the
// temporary directory. Missing binaries fail the test with how to install
// them; they never skip it. It imports the standard library only.
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/internal/proc"
)

// User is the database superuser the server is initialised with.
const User = "trit"

// Server is a running PostgreSQL.
type Server struct {
	bin     string // directory of the binaries
	dir     string // the server's temporary directory: data/, the socket, log
	port    int
	proc    *proc.Proc
	cred    *syscall.Credential // the unprivileged user, when run as root
	durable bool
	n       atomic.Int64 // databases made
}

// BinDir finds the PostgreSQL server binaries: $TRIT_PG_BIN, or the
// newest /usr/lib/postgresql/*/bin with initdb, or the directory of an
// initdb in PATH.
func BinDir() (string, error) {
	if d := os.Getenv("TRIT_PG_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("TRIT_PG_BIN=%s: %w", d, err)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	if len(dirs) > 0 {
		return filepath.Dir(dirs[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL's server binaries (initdb, postgres) not found in /usr/lib/postgresql/*/bin or PATH: install them with `sudo apt-get install postgresql` (or run `make test-deps` as root); tests that need PostgreSQL never skip")
}

func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// Start initialises and starts a server. Stop it with Stop.
func Start() (*Server, error) { return start(false) }

// StartDurable is Start with PostgreSQL's durable defaults (fsync,
// synchronous_commit, full_page_writes on), for measurements of what a
// production database does.
func StartDurable() (*Server, error) { return start(true) }

func start(durable bool) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "trit-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, durable: durable}
	if os.Geteuid() == 0 {
		name := os.Getenv("TRIT_PG_USER")
		if name == "" {
			name = "postgres"
		}
		u, err := user.Lookup(name)
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses root: no user %q to run it as (%v); set TRIT_PG_USER to an unprivileged user", name, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if out, err := s.command("initdb", "-D", s.data(), "-U", User, "--auth=trust", "-E", "UTF8", "--locale=C", "-N").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	var last error
	for attempt := 0; attempt < 3; attempt++ { // a free port may be taken before the server binds it
		if last = s.start(); last == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, last
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// command runs a PostgreSQL binary as the server's user.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "PGTZ=UTC")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func (s *Server) start() error {
	if s.port == 0 { // a restart keeps its port
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		s.port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	if s.cred != nil {
		os.Chown(logf.Name(), int(s.cred.Uid), int(s.cred.Gid))
	}
	args := []string{"-D", s.data(), "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "shared_buffers=32MB"}
	if !s.durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	if extra := os.Getenv("TRIT_PG_DEBUG_ARGS"); extra != "" {
		for _, a := range strings.Fields(extra) {
			args = append(args, "-c", a)
		}
	}
	cmd := s.command("postgres", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The server dies with the test process (Pdeathsig), even when the
	// test binary is killed.
	if s.proc, err = proc.Start(cmd); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := s.command("pg_isready", "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", User, "-d", "postgres").Run(); err == nil {
			return nil
		}
		select {
		case <-s.proc.Done():
			return fmt.Errorf("pgtest: postgres exited: %v\n%s", s.proc.Err(), s.Log())
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.Stop()
	return fmt.Errorf("pgtest: postgres not ready after 30 s\n%s", s.Log())
}

// Log returns the end of the server's log, for a failure message.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Pid is the server's (postmaster's) process ID, for measurements of
// what it spends: its backends are its children.
func (s *Server) Pid() int { return s.proc.Pid() }

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// DSN is the connection URL of database name on the server.
func (s *Server) DSN(name string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, s.port, name)
}

// CreateDatabase makes a new, empty database and returns its URL.
func (s *Server) CreateDatabase() (string, error) {
	name := fmt.Sprintf("t%d", s.n.Add(1))
	if out, err := s.command("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", User, name).CombinedOutput(); err != nil {
		return "", fmt.Errorf("pgtest: createdb %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return s.DSN(name), nil
}

// Halt shuts the server down (fast shutdown, as `pg_ctl stop -m fast`:
// SIGINT, SIGKILL after 10 s) and keeps its data; Resume starts it again
// on the same port. For tests of what a database outage does.
func (s *Server) Halt() {
	if s.proc != nil {
		s.proc.Stop(syscall.SIGINT, 10*time.Second)
		s.proc = nil
	}
}

// Resume starts a halted server again on its port and data.
func (s *Server) Resume() error { return s.start() }

// Stop shuts the server down (fast shutdown, SIGKILL after 10 s) and
// removes its directory.
func (s *Server) Stop() {
	if os.Getenv("TRIT_PG_DEBUG_ARGS") != "" {
		b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
		os.WriteFile("/tmp/pgtest-last.log", b, 0o644)
	}
	if s.proc != nil {
		s.proc.Stop(syscall.SIGINT, 10*time.Second)
		s.proc = nil
	}
	os.RemoveAll(s.dir)
}

var (
	shared    *Server
	sharedErr error
	once      sync.Once
	started   atomic.Bool
)

// Shared returns the package's server, starting it on first use; a server
// that cannot start fails t.
func Shared(t testing.TB) *Server {
	t.Helper()
	once.Do(func() {
		shared, sharedErr = Start()
		started.Store(shared != nil)
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// Database returns the URL of a new, empty database on the package's
// server.
func Database(t testing.TB) string {
	t.Helper()
	dsn, err := Shared(t).CreateDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// Main runs the package's tests and stops its server, if one started;
// call it from TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	if started.Load() {
		shared.Stop()
	}
	return code
}
