package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// TestSurvivesTooManyConnections (issue 12 item 10): a PostgreSQL whose max_connections
// is used up makes `rota worker` and `rota serve` wait and retry (SQLSTATE 53300), at
// start and while running, instead of exiting; once connections free up they work.
// The cluster is the test's own (max_connections is server-wide: the shared test
// cluster must not be exhausted).
func TestSurvivesTooManyConnections(t *testing.T) {
	url := privateCluster(t, 12)
	ctx := context.Background()
	admin := pgxPool(t, url, 1) // the test's own connection, held throughout
	st := postgres.New(admin)
	t.Cleanup(st.Close)

	filler := &connFiller{t: t, url: url}
	filler.fill()
	t.Logf("holding %d connections: the server is full", len(filler.conns))

	// At start: both processes wait for a connection instead of exiting.
	env := []string{"ROTA_MODE=", "ROTA_API_TOKEN=", "ROTA_ADDR=", "ROTA_DB_MAX_CONNS="}
	workerURL := url + "&application_name=rota-worker"
	worker := startProc(t, "worker", env, "worker", "--database-url", workerURL, "--worker-id", "w1",
		"--log-level", "warn", "--poll-interval", "200ms", "--db-listen-url", url+"&application_name=rota-listen")
	serve := startProc(t, "serve", env, "serve", "--database-url", url, "--addr", "127.0.0.1:0", "--log-level", "warn")
	for _, p := range []*proc{worker, serve} {
		waitFor(t, 30*time.Second, p.name+" to retry a refused connection", func() (bool, string) {
			if p.exited() {
				t.Fatalf("%s exited while the database was full:\n%s", p.name, p.output())
			}
			return strings.Contains(p.output(), "database refuses connections for now; retrying"), p.output()
		})
	}
	filler.release()
	waitFor(t, 30*time.Second, "serve to listen", func() (bool, string) {
		if serve.exited() {
			t.Fatalf("serve exited:\n%s", serve.output())
		}
		return strings.Contains(serve.output(), " listening on "), serve.output()
	})
	first := createNoops(t, st, 20)
	waitSucceeded(t, admin, first)
	// --db-listen-url: the worker's LISTEN session is the one opened with that URL.
	waitFor(t, 30*time.Second, "the worker to listen through --db-listen-url", func() (bool, string) {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'rota-listen' AND query LIKE 'LISTEN%'`).Scan(&n); err != nil {
			return false, err.Error()
		}
		return n == 1, fmt.Sprintf("%d listening sessions", n)
	})

	// At run time: the worker's connections are cut while the server is full again, so
	// every claim it tries is refused for a while.
	filler.fill()
	var cut int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'rota-worker'`).Scan(&cut); err != nil {
		t.Fatal(err)
	}
	filler.fill() // take the slots the cut connections freed, before the worker does
	second := createNoops(t, st, 20)
	waitFor(t, 30*time.Second, "the worker to be refused connections while running", func() (bool, string) {
		if worker.exited() {
			t.Fatalf("worker exited while the database was full:\n%s", worker.output())
		}
		return strings.Contains(worker.output(), "53300"), worker.output()
	})
	t.Logf("cut %d worker connections; the worker was refused while running", cut)
	filler.release()
	waitSucceeded(t, admin, second)
	for _, p := range []*proc{worker, serve} {
		if p.exited() {
			t.Fatalf("%s exited:\n%s", p.name, p.output())
		}
		p.stop(t, 15*time.Second)
	}
}

// connFiller opens connections until the server refuses one with 53300, and holds them.
type connFiller struct {
	t     *testing.T
	url   string
	conns []*pgx.Conn
}

func (f *connFiller) fill() {
	f.t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := pgx.Connect(ctx, f.url)
		cancel()
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "53300" {
			return
		}
		if err != nil {
			f.t.Fatal(err)
		}
		f.conns = append(f.conns, c)
		f.t.Cleanup(func() { _ = c.Close(context.Background()) })
	}
}

func (f *connFiller) release() {
	for _, c := range f.conns {
		_ = c.Close(context.Background())
	}
	f.conns = nil
}

func pgxPool(t *testing.T, url string, max int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = max
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func createNoops(t *testing.T, st *postgres.Store, n int) []string {
	t.Helper()
	ps := make([]store.CreateParams, n)
	for i := range ps {
		ps[i] = store.CreateParams{Kind: "noop", Payload: []byte(`{}`)}
	}
	res, err := st.CreateTasks(context.Background(), ps)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i, r := range res {
		ids[i] = r.Task.ID.String()
	}
	return ids
}

func waitSucceeded(t *testing.T, pool *pgxpool.Pool, ids []string) {
	t.Helper()
	waitFor(t, time.Minute, fmt.Sprintf("%d tasks to succeed", len(ids)), func() (bool, string) {
		var n int
		if err := pool.QueryRow(context.Background(),
			`SELECT count(*) FROM rota.tasks WHERE id = ANY($1::uuid[]) AND status = 'SUCCEEDED'`, ids).Scan(&n); err != nil {
			return false, err.Error()
		}
		return n == len(ids), fmt.Sprintf("%d succeeded", n)
	})
}

// privateCluster starts a PostgreSQL cluster of the test's own with maxConns
// connections (none reserved for superusers), migrates it, and returns its URL. It uses
// the binaries scripts/pg.sh uses; as root it runs them as the postgres user.
func privateCluster(t *testing.T, maxConns int) string {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		t.Skip("no PostgreSQL binaries in /usr/lib/postgresql/*/bin")
	}
	bin := filepath.Dir(bins[len(bins)-1])
	dir, err := os.MkdirTemp("", "rota-maxconns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	asPG := func(name string, args ...string) *exec.Cmd {
		if os.Geteuid() == 0 {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(bin, name)}, args...)...)
		}
		return exec.Command(filepath.Join(bin, name), args...)
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "postgres:", dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v\n%s", err, out)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := asPG("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c max_connections=%d -c superuser_reserved_connections=0 -c fsync=off",
		port, dir, maxConns)
	if out, err := asPG("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start", "-o", opts).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl start: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = asPG("pg_ctl", "-D", data, "-m", "immediate", "stop").Run() })
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	pool := pgxPool(t, url, 1)
	if _, err := postgres.MigrateUp(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	return url
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
