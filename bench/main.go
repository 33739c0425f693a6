// Command bench compares Rota with River (github.com/riverqueue/river) on the same
// PostgreSQL server, in one process run. It lives in its own Go module so that River
// never becomes a dependency of Rota. Run it from this directory:
//
//	cd bench && go run . --pg <url>
//
// where <url> is a role that may CREATE DATABASE (e.g. the URL `scripts/pg.sh env`
// exports as ROTA_TEST_DATABASE_URL; --pg defaults to that variable). It creates two
// fresh databases on that server, rotabench_<id>_river (migrated with rivermigrate) and
// rotabench_<id>_rota (migrated with Rota's postgres.MigrateUp), so neither system's
// tables, statistics or autovacuum work touch the other's, and drops them at the end.
//
// Each pair runs both workloads on every system, alternating: per workload the order is
// River variant A, Rota, River variant B, and A and B swap on every other pair, so the
// Rota run always sits between the two River runs it is compared with.
//
//   - drain: TRUNCATE the job tables, insert --drain no-op jobs (untimed) with the batch
//     insert (River InsertManyFast, Rota EnqueueMany; 5,000 per batch), VACUUM ANALYZE,
//     CHECKPOINT, then time from starting the client/worker until every job is in the
//     success state in the database (River `completed`, Rota `SUCCEEDED`): tasks/s.
//   - steady: TRUNCATE + VACUUM ANALYZE, start the client/worker, wait 1s, then one
//     producer inserts one job at a time (River Client.Insert, Rota Client.Enqueue)
//     paced at --rate per second for --duration. Pickup latency is the time from the
//     insert call returning to the handler starting (clamped at 0: a handler can start
//     before its insert's round trip ends): p50/p95/p99.
//
// Settings: Rota runs with its defaults (Concurrency 100, FetchBatch 50, PollInterval
// 1s, CommitInterval 5ms). River runs with its defaults and, as a second variant, with
// the fetch settings River's own benchmark uses for throughput (see riverVariants in
// systems.go for exactly what and where from). Both River variants use MaxWorkers =
// --workers, and Rota Concurrency = --workers (default 100, Rota's default), so both
// run at most the same number of handlers at once. Both share no pool: each database
// gets its own pgxpool with MaxConns = --max-conns (default 16).
//
// Output: one line per run, then Rota/River ratios (min/median/max over the pairs) for
// drain tasks/s and steady p50/p99 pickup latency, and the medians of the raw numbers.
// --json prints the whole report as JSON on stdout (the progress lines and the tables go
// to stderr).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// options are the command's flags.
type options struct {
	PG       string        `json:"-"`
	Pairs    int           `json:"pairs"`
	Drain    int           `json:"drain"`
	Rate     int           `json:"rate"`
	Duration time.Duration `json:"duration"`
	Workers  int           `json:"workers"`
	MaxConns int           `json:"max_conns"`
	River    []string      `json:"river_variants"`
	// Workloads are the workloads each pair runs, in order: drain, steady or both.
	Workloads []string `json:"workloads"`
	// PlanCacheMode, when set, is the plan_cache_mode of every connection of both pools.
	PlanCacheMode string `json:"plan_cache_mode,omitempty"`
	Warmup        bool   `json:"warmup"`
}

func main() {
	var o options
	var river, workloads string
	var asJSON bool
	flag.StringVar(&o.PG, "pg", os.Getenv("ROTA_TEST_DATABASE_URL"), "PostgreSQL URL of a role that may CREATE DATABASE (default $ROTA_TEST_DATABASE_URL)")
	flag.IntVar(&o.Pairs, "pairs", 3, "how many alternating River/Rota pairs to run")
	flag.IntVar(&o.Drain, "drain", 50_000, "drain workload: jobs in the backlog")
	flag.IntVar(&o.Rate, "rate", 500, "steady workload: jobs inserted per second")
	flag.DurationVar(&o.Duration, "duration", 15*time.Second, "steady workload: how long the producer runs")
	flag.IntVar(&o.Workers, "workers", 100, "River MaxWorkers and Rota Concurrency (the same for both)")
	flag.IntVar(&o.MaxConns, "max-conns", 16, "pgxpool MaxConns of each system's pool")
	flag.StringVar(&workloads, "workloads", "drain,steady", "workloads each pair runs: drain, steady or both (comma-separated)")
	flag.StringVar(&river, "river", "default,tuned", "River variants to run: default, tuned or both (comma-separated)")
	flag.StringVar(&o.PlanCacheMode, "plan-cache-mode", "", "set PostgreSQL's plan_cache_mode (auto, force_custom_plan, force_generic_plan) on every connection of both systems' pools; empty keeps the server's setting")
	flag.BoolVar(&o.Warmup, "warmup", true, "run an unreported small drain on every system first")
	flag.BoolVar(&asJSON, "json", false, "print the report as JSON on stdout (progress and tables on stderr)")
	flag.Parse()
	o.River = strings.Split(river, ",")
	o.Workloads = strings.Split(workloads, ",")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	progress := io.Writer(os.Stdout)
	if asJSON {
		progress = os.Stderr
	}
	rep, err := run(ctx, o, progress)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	rep.print(progress)
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

// Report is everything a run measured.
type Report struct {
	Env    map[string]string `json:"env"`
	Opts   options           `json:"options"`
	Runs   []Result          `json:"runs"`
	Ratios []Ratio           `json:"ratios"`
}

// Result is one run of one workload on one system.
type Result struct {
	Pair     int    `json:"pair"`
	System   string `json:"system"`
	Workload string `json:"workload"`
	Jobs     int    `json:"jobs"`
	// drain
	Seconds     float64 `json:"seconds,omitempty"`
	TasksPerSec float64 `json:"tasks_per_sec,omitempty"`
	// CPU per task over the timed part of a drain, in microseconds: this process (the
	// system's client, workers and handlers) and the PostgreSQL server (0 when the
	// server is not on this machine).
	ClientCPUus float64 `json:"client_cpu_us_per_task,omitempty"`
	ServerCPUus float64 `json:"server_cpu_us_per_task,omitempty"`
	// steady
	RateAchieved float64 `json:"rate_achieved,omitempty"`
	P50ms        float64 `json:"p50_ms,omitempty"`
	P95ms        float64 `json:"p95_ms,omitempty"`
	P99ms        float64 `json:"p99_ms,omitempty"`
	MaxMs        float64 `json:"max_ms,omitempty"`
	// Load1 is the machine's 1-minute load average when the run ended (Linux only): the
	// harness and PostgreSQL share the machine, and so does anything else running on it.
	Load1 string `json:"load1,omitempty"`
}

// Ratio is Rota's value divided by one River variant's, over the pairs.
type Ratio struct {
	Metric string    `json:"metric"`
	River  string    `json:"river"`
	Values []float64 `json:"values"`
	Min    float64   `json:"min"`
	Median float64   `json:"median"`
	Max    float64   `json:"max"`
}

func (o *options) validate() error {
	var errs []error
	if o.PG == "" {
		errs = append(errs, errors.New("--pg is required (or set ROTA_TEST_DATABASE_URL)"))
	}
	if o.Pairs < 1 || o.Drain < 1 || o.Rate < 1 || o.Duration <= 0 || o.Workers < 1 || o.MaxConns < 4 {
		errs = append(errs, errors.New("--pairs, --drain, --rate, --duration, --workers must be positive and --max-conns at least 4"))
	}
	if !slices.Contains([]string{"", "auto", "force_custom_plan", "force_generic_plan"}, o.PlanCacheMode) {
		errs = append(errs, fmt.Errorf("--plan-cache-mode: unknown mode %q", o.PlanCacheMode))
	}
	if len(o.River) == 0 {
		errs = append(errs, errors.New("--river names no variant"))
	}
	seenWorkload := map[string]bool{}
	for _, w := range o.Workloads {
		if (w != "drain" && w != "steady") || seenWorkload[w] {
			errs = append(errs, fmt.Errorf("--workloads: unknown or repeated workload %q (want drain, steady)", w))
		}
		seenWorkload[w] = true
	}
	seen := map[string]bool{}
	for _, v := range o.River {
		if _, ok := riverVariants[v]; !ok || seen[v] {
			errs = append(errs, fmt.Errorf("--river: unknown or repeated variant %q (want default, tuned)", v))
		}
		seen[v] = true
	}
	return errors.Join(errs...)
}

// run sets up the databases, runs every pair and returns the report. Progress lines go
// to out.
func run(ctx context.Context, o options, out io.Writer) (*Report, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	admin, err := pgx.Connect(ctx, o.PG)
	if err != nil {
		return nil, fmt.Errorf("connect --pg: %w", err)
	}
	defer admin.Close(context.Background())

	var b [4]byte
	_, _ = rand.Read(b[:])
	prefix := "rotabench_" + hex.EncodeToString(b[:])
	riverPool, dropRiver, err := freshDatabase(ctx, admin, o, prefix+"_river")
	if err != nil {
		return nil, err
	}
	defer dropRiver()
	rotaPool, dropRota, err := freshDatabase(ctx, admin, o, prefix+"_rota")
	if err != nil {
		return nil, err
	}
	defer dropRota()
	if err := migrateRiver(ctx, riverPool); err != nil {
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	if err := migrateRota(ctx, rotaPool); err != nil {
		return nil, fmt.Errorf("rota migrate: %w", err)
	}

	var rivers []system
	for _, name := range o.River {
		s, err := newRiverSystem(riverVariants[name], riverPool, o.Workers)
		if err != nil {
			return nil, err
		}
		rivers = append(rivers, s)
	}
	rotaSys := newRotaSystem(rotaPool, o.Workers)

	rep := &Report{Env: environment(ctx, admin, o), Opts: o}
	cpu := newCPUMeter(ctx, admin)
	for _, k := range slices.Sorted(maps.Keys(rep.Env)) {
		fmt.Fprintf(out, "# %s: %s\n", k, rep.Env[k])
	}

	if o.Warmup {
		n := min(o.Drain, 2_000)
		for _, s := range append(slices.Clone(rivers), system(rotaSys)) {
			if _, err := drain(ctx, s, n, cpu); err != nil {
				return nil, fmt.Errorf("warm-up %s: %w", s.Name(), err)
			}
		}
		fmt.Fprintf(out, "# warm-up: drained %d jobs on each system (not reported)\n", n)
	}

	for pair := 1; pair <= o.Pairs; pair++ {
		order := []system{rivers[0], rotaSys}
		if len(rivers) > 1 {
			order = append(order, rivers[1])
		}
		if pair%2 == 0 {
			slices.Reverse(order)
		}
		for _, workload := range o.Workloads {
			for _, s := range order {
				var r Result
				var err error
				if workload == "drain" {
					r, err = drain(ctx, s, o.Drain, cpu)
				} else {
					r, err = steady(ctx, s, o.Rate, o.Duration)
				}
				if err != nil {
					return nil, fmt.Errorf("pair %d, %s, %s: %w", pair, workload, s.Name(), err)
				}
				r.Pair = pair
				r.Load1 = load1()
				rep.Runs = append(rep.Runs, r)
				fmt.Fprintln(out, r.line())
			}
		}
	}
	rep.Ratios = ratios(rep.Runs, rivers)
	return rep, nil
}

// freshDatabase creates database name and returns a pool on it and a function that
// closes the pool and drops the database.
func freshDatabase(ctx context.Context, admin *pgx.Conn, o options, name string) (*pgxpool.Pool, func(), error) {
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(dctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", name, err)
		}
	}
	cfg, err := pgxpool.ParseConfig(o.PG)
	if err != nil {
		drop()
		return nil, nil, err
	}
	cfg.ConnConfig.Database = name
	cfg.MaxConns = int32(o.MaxConns)
	if o.PlanCacheMode != "" {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = o.PlanCacheMode
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		drop()
		return nil, nil, err
	}
	return pool, func() { pool.Close(); drop() }, nil
}

func environment(ctx context.Context, admin *pgx.Conn, o options) map[string]string {
	env := map[string]string{
		"go":         runtime.Version(),
		"gomaxprocs": fmt.Sprint(runtime.GOMAXPROCS(0)),
		"settings": fmt.Sprintf("River MaxWorkers=%d, Rota Concurrency=%d, pgxpool MaxConns=%d per system; drain=%d, steady=%d/s for %s",
			o.Workers, o.Workers, o.MaxConns, o.Drain, o.Rate, o.Duration),
	}
	env["plan_cache_mode"] = o.PlanCacheMode
	if o.PlanCacheMode == "" {
		var mode string
		_ = admin.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode)
		env["plan_cache_mode"] = mode + " (server setting)"
	}
	var pgVersion string
	if err := admin.QueryRow(ctx, `SHOW server_version`).Scan(&pgVersion); err == nil {
		env["postgres"] = pgVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/riverqueue/river" {
				env["river"] = d.Version
			}
		}
	}
	for _, name := range o.River {
		v := riverVariants[name]
		env[v.name] = fmt.Sprintf("FetchCooldown=%s FetchPollInterval=%s", or(v.fetchCooldown, 100*time.Millisecond), or(v.fetchPollInterval, time.Second))
	}
	return env
}

func or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// drain measures one drain run of n jobs on s.
func drain(ctx context.Context, s system, n int, cpu cpuMeter) (Result, error) {
	r := Result{System: s.Name(), Workload: "drain", Jobs: n}
	if err := s.Reset(ctx); err != nil {
		return r, err
	}
	if err := s.InsertBacklog(ctx, n); err != nil {
		return r, err
	}
	if err := s.Analyze(ctx); err != nil {
		return r, err
	}
	checkpoint(ctx, s)

	var started atomic.Int64
	all := make(chan struct{})
	fn := func(int) {
		if started.Add(1) == int64(n) {
			close(all)
		}
	}
	deadline := time.Now().Add(max(2*time.Minute, time.Duration(n)*5*time.Millisecond))
	t0, cpu0 := time.Now(), cpu.sample()
	stop, err := s.Start(ctx, fn)
	if err != nil {
		return r, err
	}
	err = func() error {
		select {
		case <-all:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(deadline)):
			return fmt.Errorf("only %d of %d handlers ran before the deadline", started.Load(), n)
		}
		// Drained means committed: wait until the database has every job succeeded.
		return waitCompleted(ctx, s, n, deadline)
	}()
	elapsed, cpu1 := time.Since(t0), cpu.sample()
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("stop: %w", serr)
	}
	if err != nil {
		return r, err
	}
	r.Seconds = elapsed.Seconds()
	r.TasksPerSec = float64(n) / elapsed.Seconds()
	perTask := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(n) }
	r.ClientCPUus = perTask(cpu1.client - cpu0.client)
	r.ServerCPUus = perTask(cpu1.server - cpu0.server)
	return r, nil
}

func waitCompleted(ctx context.Context, s system, n int, deadline time.Time) error {
	for {
		done, err := s.Completed(ctx)
		if err != nil {
			return err
		}
		if done >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d jobs completed before the deadline", done, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// checkpoint flushes dirty buffers so a run does not pay for the previous run's writes.
// It needs superuser or pg_checkpoint; without them it is skipped.
func checkpoint(ctx context.Context, s system) {
	var pool *pgxpool.Pool
	switch s := s.(type) {
	case *riverSystem:
		pool = s.pool
	case *rotaSystem:
		pool = s.pool
	}
	if pool != nil {
		_, _ = pool.Exec(ctx, `CHECKPOINT`)
	}
}

// steady measures pickup latency under a paced producer on s.
func steady(ctx context.Context, s system, rate int, duration time.Duration) (Result, error) {
	n := max(1, int(float64(rate)*duration.Seconds()))
	r := Result{System: s.Name(), Workload: "steady", Jobs: n}
	if err := s.Reset(ctx); err != nil {
		return r, err
	}
	checkpoint(ctx, s)

	base := time.Now()
	insertedAt := make([]int64, n+1) // ns since base, by seq (1-based)
	startedAt := make([]int64, n+1)
	var started atomic.Int64
	all := make(chan struct{})
	fn := func(seq int) {
		at := int64(time.Since(base))
		if seq < 1 || seq > n {
			return
		}
		atomic.StoreInt64(&startedAt[seq], at)
		if started.Add(1) == int64(n) {
			close(all)
		}
	}
	stop, err := s.Start(ctx, fn)
	if err != nil {
		return r, err
	}
	err = func() error {
		// Let the worker start listening and fetching before the first insert.
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
		interval := time.Second / time.Duration(rate)
		p0 := time.Now()
		for seq := 1; seq <= n; seq++ {
			if d := time.Until(p0.Add(time.Duration(seq-1) * interval)); d > 0 {
				time.Sleep(d)
			}
			if err := s.InsertOne(ctx, seq); err != nil {
				return fmt.Errorf("insert %d: %w", seq, err)
			}
			atomic.StoreInt64(&insertedAt[seq], int64(time.Since(base)))
		}
		r.RateAchieved = float64(n) / time.Since(p0).Seconds()
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return fmt.Errorf("only %d of %d handlers ran within 30s of the last insert", started.Load(), n)
		}
	}()
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("stop: %w", serr)
	}
	if err != nil {
		return r, err
	}
	lat := make([]time.Duration, n)
	for seq := 1; seq <= n; seq++ {
		lat[seq-1] = max(0, time.Duration(atomic.LoadInt64(&startedAt[seq])-atomic.LoadInt64(&insertedAt[seq])))
	}
	slices.Sort(lat)
	r.P50ms, r.P95ms, r.P99ms = ms(pct(lat, 50)), ms(pct(lat, 95)), ms(pct(lat, 99))
	r.MaxMs = ms(lat[len(lat)-1])
	return r, nil
}

// pct is the nearest-rank percentile of sorted values.
func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (r Result) line() string {
	load := ""
	if r.Load1 != "" {
		load = "  load " + r.Load1
	}
	if r.Workload == "drain" {
		cpu := fmt.Sprintf("  cpu/task client %4.0fus", r.ClientCPUus)
		if r.ServerCPUus > 0 {
			cpu += fmt.Sprintf(" server %4.0fus", r.ServerCPUus)
		}
		return fmt.Sprintf("pair %d  drain   %-13s %7d jobs  %7.2fs  %9.0f tasks/s%s%s", r.Pair, r.System, r.Jobs, r.Seconds, r.TasksPerSec, cpu, load)
	}
	return fmt.Sprintf("pair %d  steady  %-13s %7d jobs  %5.0f/s  pickup p50 %7.2fms  p95 %7.2fms  p99 %7.2fms  max %7.2fms%s",
		r.Pair, r.System, r.Jobs, r.RateAchieved, r.P50ms, r.P95ms, r.P99ms, r.MaxMs, load)
}

// load1 is the 1-minute load average from /proc/loadavg, "" where there is none.
func load1() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

type metric struct {
	name     string
	workload string
	value    func(Result) float64
}

var metrics = []metric{
	{"drain tasks/s", "drain", func(r Result) float64 { return r.TasksPerSec }},
	{"steady p50 pickup", "steady", func(r Result) float64 { return r.P50ms }},
	{"steady p99 pickup", "steady", func(r Result) float64 { return r.P99ms }},
}

// ratios divides Rota's value by each River variant's, pair by pair.
func ratios(runs []Result, rivers []system) []Ratio {
	find := func(pair int, sys, workload string) (Result, bool) {
		for _, r := range runs {
			if r.Pair == pair && r.System == sys && r.Workload == workload {
				return r, true
			}
		}
		return Result{}, false
	}
	var out []Ratio
	for _, m := range metrics {
		for _, rv := range rivers {
			ra := Ratio{Metric: m.name, River: rv.Name()}
			for pair := 1; ; pair++ {
				rr, ok1 := find(pair, rv.Name(), m.workload)
				ro, ok2 := find(pair, "rota", m.workload)
				if !ok1 || !ok2 {
					break
				}
				// A latency of 0 (all clamped) would divide by zero; floor at 1µs.
				ra.Values = append(ra.Values, max(m.value(ro), 0.001)/max(m.value(rr), 0.001))
			}
			if len(ra.Values) == 0 {
				continue
			}
			ra.Min, ra.Median, ra.Max = slices.Min(ra.Values), median(ra.Values), slices.Max(ra.Values)
			out = append(out, ra)
		}
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0 // a workload this run did not measure
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (rep *Report) print(w io.Writer) {
	fmt.Fprintf(w, "\nRota/River ratios over %d pairs (drain tasks/s: >1 means Rota is faster; pickup latency: <1 means Rota picks up sooner)\n", rep.Opts.Pairs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tRota / \tmin\tmedian\tmax\t")
	for _, r := range rep.Ratios {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t\n", r.Metric, r.River, r.Min, r.Median, r.Max)
	}
	_ = tw.Flush()

	fmt.Fprintf(w, "\nMedians over %d pairs\n", rep.Opts.Pairs)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tdrain tasks/s\tclient cpu us/task\tserver cpu us/task\tsteady p50 ms\tp95 ms\tp99 ms\t")
	var systems []string
	for _, r := range rep.Runs {
		if !slices.Contains(systems, r.System) {
			systems = append(systems, r.System)
		}
	}
	slices.Sort(systems)
	for _, sys := range systems {
		var tps, ccpu, scpu, p50, p95, p99 []float64
		for _, r := range rep.Runs {
			switch {
			case r.System != sys:
			case r.Workload == "drain":
				tps, ccpu, scpu = append(tps, r.TasksPerSec), append(ccpu, r.ClientCPUus), append(scpu, r.ServerCPUus)
			default:
				p50, p95, p99 = append(p50, r.P50ms), append(p95, r.P95ms), append(p99, r.P99ms)
			}
		}
		cell := func(v []float64, format string) string {
			if len(v) == 0 || median(v) == 0 {
				return "-" // not measured in this run
			}
			return fmt.Sprintf(format, median(v))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", sys, cell(tps, "%.0f"), cell(ccpu, "%.0f"), cell(scpu, "%.0f"),
			cell(p50, "%.2f"), cell(p95, "%.2f"), cell(p99, "%.2f"))
	}
	_ = tw.Flush()
}
