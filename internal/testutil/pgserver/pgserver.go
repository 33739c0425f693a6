// Package pgserver runs a PostgreSQL server of a test's own, which the test may stop and
// start again (outage tests); the shared test cluster of pgtest must never be restarted.
//
// It uses the binaries of the installed postgresql package (/usr/lib/postgresql/*/bin,
// scripts/pg.sh installs them), running them as the postgres user when the test runs as
// root, as scripts/pg.sh does. Without the binaries a test is skipped, or fails under CI
// or ROTA_REQUIRE_INTEGRATION.
package pgserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running (or stopped) PostgreSQL server in a temporary directory.
type Server struct {
	t    testing.TB
	bin  string
	dir  string // owned by the server's user
	port int
}

// Start initialises a cluster in a fresh directory and starts it on a free loopback
// port; it is stopped and removed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binDir()
	if bin == "" {
		if os.Getenv("CI") != "" || os.Getenv("ROTA_REQUIRE_INTEGRATION") != "" {
			t.Fatal("pgserver: no PostgreSQL binaries in /usr/lib/postgresql/*/bin (scripts/pg.sh installs them)")
		}
		t.Skip("pgserver: no PostgreSQL binaries; run scripts/pg.sh start")
	}
	dir, err := os.MkdirTemp("", "rota-pgserver-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, dir: dir, port: freePort(t)}
	t.Cleanup(func() {
		_ = s.pgctl("stop", "-m", "immediate", "-w")
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		if err := chownToPostgres(dir); err != nil {
			t.Fatalf("pgserver: %v", err)
		}
	}
	if out, err := s.command(filepath.Join(bin, "initdb"), "-D", s.data(), "-U", "postgres",
		"--auth=trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("pgserver: initdb: %v\n%s", err, out)
	}
	s.StartAgain()
	return s
}

// URL is the server's postgres database, as the superuser.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Stop shuts the server down (fast: sessions are disconnected) and waits until it is.
func (s *Server) Stop() {
	s.t.Helper()
	if err := s.pgctl("stop", "-m", "fast", "-w"); err != nil {
		s.t.Fatalf("pgserver: stop: %v", err)
	}
}

// StartAgain starts the stopped server on the same port and waits until it accepts
// connections.
func (s *Server) StartAgain() {
	s.t.Helper()
	if err := s.Launch(); err != nil {
		s.t.Fatalf("pgserver: start: %v", err)
	}
	s.WaitAccepting(time.Minute)
}

// Launch starts the server without waiting for it: a test measuring how soon something
// notices it is back probes with WaitAccepting itself.
func (s *Server) Launch() error {
	opts := "-c listen_addresses=127.0.0.1 -p " + strconv.Itoa(s.port) + " -k " + s.dir +
		" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	return s.pgctl("start", "-W", "-l", filepath.Join(s.dir, "log"), "-o", opts)
}

// WaitAccepting connects every millisecond until the server accepts a connection and
// returns when it did.
func (s *Server) WaitAccepting(limit time.Duration) time.Time {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.URL())
		cancel()
		if err == nil {
			at := time.Now()
			_ = conn.Close(context.Background())
			return at
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("pgserver: not accepting connections after %s: %v", limit, err)
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) pgctl(args ...string) error {
	args = append([]string{"-D", s.data()}, args...)
	out, err := s.command(filepath.Join(s.bin, "pg_ctl"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %v: %w\n%s", args, err, out)
	}
	return nil
}

// command runs name as the postgres user when the test runs as root (PostgreSQL refuses
// to run as root).
func (s *Server) command(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

func binDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

func chownToPostgres(dir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("look up the postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
