package bench

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// No test asserts on timings: they only check that every workload does all its work,
// without errors, and reports it consistently.

func newTarget(t *testing.T) *Target {
	t.Helper()
	cfg, err := poolConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &Target{Pool: pool, Queue: NewQueueName(), Owned: true, Progress: &Progress{}}
}

func checkWorker(t *testing.T, res *Result, tasks int64) {
	t.Helper()
	if res.Worker == nil {
		t.Fatal("no worker counts")
	}
	if res.Worker.Claimed != tasks || res.Worker.Succeeded != tasks || res.Worker.Errors != 0 {
		t.Errorf("worker counts %+v, want %d claimed and succeeded, no errors", *res.Worker, tasks)
	}
}

func TestDrain(t *testing.T) {
	target := newTarget(t)
	res, err := Drain(context.Background(), target, DrainConfig{Tasks: 500, Concurrency: 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.Workload != WorkloadDrain || res.Tasks != 500 || res.Seconds <= 0 || res.TasksPerSec <= 0 || res.Concurrency != 20 {
		t.Errorf("result %+v", res)
	}
	checkWorker(t, res, 500)
	m := res.Memory
	if m == nil || len(m.Milestones) != 3 {
		t.Fatalf("memory %+v, want 3 milestones", m)
	}
	for i, want := range []struct {
		percent int
		done    int64
	}{{10, 50}, {50, 250}, {100, 500}} {
		if got := m.Milestones[i]; got.Percent != want.percent || got.Done < want.done {
			t.Errorf("milestone %d: %+v, want %d%% at %d done or more", i, got, want.percent, want.done)
		}
	}
	if m.Start.RSS == 0 || m.PeakRSS < m.Start.RSS || m.PeakHeap == 0 || m.Final.HeapInuse == 0 {
		t.Errorf("memory readings look wrong: %+v", m)
	}
	if p := target.Progress.Snapshot(); p.Workload != WorkloadDrain || p.Done != 500 || p.Total != 500 {
		t.Errorf("progress %+v", p)
	}
}

func TestDrainSmallerThanMilestones(t *testing.T) {
	res, err := Drain(context.Background(), newTarget(t), DrainConfig{Tasks: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Memory.Milestones) != 3 || res.Concurrency != runtime.DefaultConcurrency {
		t.Errorf("one task: %+v, memory %+v", res, res.Memory)
	}
	checkWorker(t, res, 1)
}

func TestSteady(t *testing.T) {
	target := newTarget(t)
	res, err := Steady(context.Background(), target, SteadyConfig{Rate: 200, Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Workload != WorkloadSteady || res.Tasks != 100 || res.TasksPerSec <= 0 {
		t.Errorf("result %+v", res)
	}
	checkWorker(t, res, 101) // + the warm-up task
	s := res.Steady
	if s == nil || s.TargetRate != 200 || s.Producers != DefaultProducers {
		t.Fatalf("steady %+v", s)
	}
	for name, l := range map[string]Latency{"pickup": s.Pickup, "end-to-end": s.EndToEnd} {
		if l.Count != 100 || !(l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.Max) {
			t.Errorf("%s: %+v, want 100 samples and ordered percentiles", name, l)
		}
	}
	if s.EndToEnd.Max < s.Pickup.P50 || s.EndToEnd.P50 <= 0 {
		t.Errorf("end-to-end %+v against pickup %+v: a task ends after its handler starts", s.EndToEnd, s.Pickup)
	}
}

func TestInsert(t *testing.T) {
	target := newTarget(t)
	res, err := Insert(context.Background(), target, InsertConfig{Tasks: 250})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ batch, goroutines, tasks int }{{1, 1, 250}, {100, 1, 300}, {1000, 1, 1000}, {1, 8, 250}}
	if len(res.Insert) != len(want) {
		t.Fatalf("cases %+v", res.Insert)
	}
	for i, w := range want {
		c := res.Insert[i]
		if c.Batch != w.batch || c.Goroutines != w.goroutines || c.Tasks != w.tasks || c.TasksPerSec <= 0 ||
			c.Call.Count != w.tasks/w.batch {
			t.Errorf("case %d: %+v, want batch %d, %d goroutines, %d tasks", i, c, w.batch, w.goroutines, w.tasks)
		}
	}
}

func TestInsertStopsAtMaxCaseDuration(t *testing.T) {
	res, err := Insert(context.Background(), newTarget(t), InsertConfig{Tasks: 1_000_000, MaxCaseDuration: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Insert {
		if c.Tasks >= 1_000_000 || c.Tasks > c.Batch*c.Goroutines {
			t.Errorf("%s: %d tasks despite the time limit", c.Name, c.Tasks)
		}
	}
}

func databaseExists(t *testing.T, admin, name string) bool {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	return exists
}

func tinyOptions(dbURL string) Options {
	return Options{DatabaseURL: dbURL, Workloads: Workloads, Tasks: 50, Rate: 100, Duration: 200 * time.Millisecond,
		Concurrency: 10, Progress: &Progress{}}
}

func TestRunCreatesMigratesAndDropsItsDatabase(t *testing.T) {
	admin := pgtest.AdminURL(t)
	var log strings.Builder
	opts := tinyOptions(admin)
	opts.Log = &log
	rep, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Database, "rota_bench_") || !rep.Dropped || rep.InPlace {
		t.Errorf("report %+v", rep)
	}
	if databaseExists(t, admin, rep.Database) {
		t.Errorf("database %s was not dropped", rep.Database)
	}
	if len(rep.Results) != 3 || rep.Results[0].Workload != WorkloadDrain || rep.Results[1].Workload != WorkloadSteady ||
		rep.Results[2].Workload != WorkloadInsert {
		t.Fatalf("results %+v", rep.Results)
	}
	checkWorker(t, rep.Results[0], 50)
	checkWorker(t, rep.Results[1], 21)
	if rep.Environment.Postgres == "" || rep.Environment.CPUs == 0 {
		t.Errorf("environment %+v", rep.Environment)
	}
	if !strings.Contains(log.String(), "created and migrated database "+rep.Database) ||
		!strings.Contains(log.String(), "dropped database "+rep.Database) {
		t.Errorf("log:\n%s", log.String())
	}
}

func TestRunKeepsItsDatabase(t *testing.T) {
	admin := pgtest.AdminURL(t)
	opts := tinyOptions(admin)
	opts.Workloads, opts.Keep = []string{WorkloadDrain}, true
	rep, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if conn, err := pgx.Connect(context.Background(), admin); err == nil {
			_, _ = conn.Exec(context.Background(), `DROP DATABASE IF EXISTS `+rep.Database+` WITH (FORCE)`)
			conn.Close(context.Background())
		}
	})
	if rep.Dropped || !databaseExists(t, admin, rep.Database) {
		t.Fatalf("database %s was dropped despite Keep", rep.Database)
	}
}

func TestRunInPlaceLeavesOtherTasksAlone(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `INSERT INTO rota.tasks (id, queue, kind) VALUES (gen_random_uuid(), 'default', 'noop')`); err != nil {
		t.Fatal(err)
	}
	opts := tinyOptions(dbURL)
	opts.InPlace = true
	rep, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.InPlace || rep.Dropped || len(rep.Results) != 3 {
		t.Errorf("report %+v", rep)
	}
	var queues []string
	rows, _ := pool.Query(ctx, `SELECT queue || ':' || status FROM rota.tasks`)
	queues, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(queues) != 1 || queues[0] != "default:PENDING" {
		t.Errorf("tasks left in the database: %v, want only the pending task of queue default", queues)
	}
}

func TestRunInPlaceNeedsAMigratedSchema(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.MigrateDown(context.Background(), pool, 1); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	opts := tinyOptions(dbURL)
	opts.InPlace = true
	_, err = Run(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "rota migrate up") {
		t.Fatalf("got %v, want an error asking for rota migrate up", err)
	}
}

func TestCreateDatabaseWithoutPrivilege(t *testing.T) {
	admin := pgtest.AdminURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	role := "rota_bench_nocreatedb_" + randomHex(3)
	if _, err := conn.Exec(ctx, `CREATE ROLE `+role+` LOGIN NOCREATEDB`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), `DROP ROLE IF EXISTS `+role) })
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role) // the test server trusts local connections
	_, err = CreateDatabase(ctx, u.String())
	if !errors.Is(err, ErrCreateDatabase) || !strings.Contains(err.Error(), "CREATEDB") || !strings.Contains(err.Error(), "--in-place") {
		t.Fatalf("got %v, want ErrCreateDatabase naming CREATEDB and --in-place", err)
	}
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := summarize(ds)
	want := Latency{Count: 100, P50: 50, P95: 95, P99: 99, Max: 100}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	if (summarize(nil) != Latency{}) {
		t.Error("summarize(nil) is not zero")
	}
}
