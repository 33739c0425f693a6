// Command bench compares Rota with River (github.com/riverqueue/river) on the same
// PostgreSQL server, in one process run. It lives in its own Go module so that River
// never becomes a dependency of Rota. Run it from this directory:
//
//	cd bench && go run . --pg <url>
//
// where <url> is a role that may CREATE DATABASE (e.g. the URL `scripts/pg-stock.sh env`
// exports as ROTA_TEST_DATABASE_URL; --pg defaults to that variable). It creates two
// fresh databases on that server, rotabench_<id>_river (migrated with rivermigrate) and
// rotabench_<id>_rota (migrated with Rota's postgres.MigrateUp), so neither system's
// tables, statistics or autovacuum work touch the other's, and drops them at the end.
//
// Systems: River variants (--river: default, tuned, best; see riverVariants) and Rota
// variants (--rota: default = `rota worker`'s defaults, best = the --rota-best-* flags).
// Each pair runs every workload on every system, in an order that interleaves River and
// Rota runs and reverses on every other pair, so drift over the run falls on both sides.
//
// Workloads (README.md says exactly what each figure measures):
//   - drain: a backlog of --drain no-op jobs, timed from the worker's start until all
//     have succeeded in the database: tasks/s, CPU per task.
//   - steady: --rate jobs/s inserted one per call by --producers goroutines for
//     --duration while the worker runs: p50/p95/p99 from insert commit to handler start
//     and to the success's commit.
//   - pressure: a --pressure-drain drain on the --pressure-on systems, plain, with a
//     transaction held open throughout, and with autovacuum off for the job tables:
//     tasks/s against plain, and the claim's blocks per task at the start and the end.
//   - insert: batch insert throughput, Rota (HTTP batch API, EnqueueMany, EnqueueTx in a
//     caller's transaction) against River (InsertMany, InsertManyFast, InsertManyTx).
//
// Output: one line per run, then ratios (min/median/max over the pairs) and medians.
// --json prints the whole report as JSON on stdout (progress and tables go to stderr).
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
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota"
	rotaruntime "github.com/rotaqueue/rota/internal/runtime"
)

// Workload names.
const (
	workloadDrain    = "drain"
	workloadSteady   = "steady"
	workloadPressure = "pressure"
	workloadInsert   = "insert"
)

var allWorkloads = []string{workloadDrain, workloadSteady, workloadPressure, workloadInsert}

// rotaBest is the rota-best variant's worker settings (--rota-best-*); zero keeps the
// runtime's default for that field.
type rotaBest struct {
	Concurrency    int           `json:"concurrency"`
	FetchBatch     int           `json:"fetch_batch"`
	FetchLoops     int           `json:"fetch_loops"`
	PollInterval   time.Duration `json:"poll_interval"`
	CommitBatch    int           `json:"commit_batch"`
	CommitInterval time.Duration `json:"commit_interval"`
	Conns          int           `json:"conns"`
}

// options are the command's flags.
type options struct {
	PG        string        `json:"-"`
	Pairs     int           `json:"pairs"`
	Drain     int           `json:"drain"`
	Rate      int           `json:"rate"`
	Duration  time.Duration `json:"duration"`
	Producers int           `json:"producers"`
	// SteadyHistory jobs are worked, untimed, before each steady run (steadyHistory).
	SteadyHistory int `json:"steady_history"`
	// Workers is River MaxWorkers for river-default and river-tuned.
	Workers  int `json:"workers"`
	MaxConns int `json:"max_conns"`
	// RotaConns is the rota (defaults) variant's pool size.
	RotaConns int      `json:"rota_conns"`
	RotaBest  rotaBest `json:"rota_best"`
	River     []string `json:"river_variants"`
	Rota      []string `json:"rota_variants"`
	Workloads []string `json:"workloads"`
	// PressureDrain is the pressure workload's backlog; PressureOn the systems it runs on.
	PressureDrain int      `json:"pressure_drain"`
	PressureOn    []string `json:"pressure_on"`
	// InsertTotal jobs per insert case, in batches of InsertBatch.
	InsertTotal int `json:"insert_total"`
	InsertBatch int `json:"insert_batch"`
	// InsertSingleDuration: how long each one-job-per-call insert case runs (0 = none).
	InsertSingleDuration time.Duration `json:"insert_single_duration"`
	// InsertCases limits the insert workload to these cases (empty = all).
	InsertCases []string `json:"insert_cases,omitempty"`
	// CPUProfile is the file of this process's CPU profile ("" = none).
	CPUProfile string `json:"-"`
	// PlanCacheMode, when set, is the plan_cache_mode of every connection of every pool.
	PlanCacheMode string `json:"plan_cache_mode,omitempty"`
	Warmup        bool   `json:"warmup"`
	JSON          bool   `json:"-"`
}

// parseOptions reads the command line (getenv supplies --pg's default).
func parseOptions(args []string, getenv func(string) string) (options, error) {
	var o options
	var river, rotaVariants, workloads, pressureOn, insertCases string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.PG, "pg", getenv("ROTA_TEST_DATABASE_URL"), "PostgreSQL URL of a role that may CREATE DATABASE (default $ROTA_TEST_DATABASE_URL)")
	fs.IntVar(&o.Pairs, "pairs", 3, "how many alternating River/Rota pairs to run")
	fs.IntVar(&o.Drain, "drain", 200_000, "drain workload: jobs in the backlog (200000, 1000000, ...)")
	fs.IntVar(&o.Rate, "rate", 5_000, "steady workload: jobs inserted per second, in total over the producers")
	fs.DurationVar(&o.Duration, "duration", 15*time.Second, "steady workload: how long the producers run")
	fs.IntVar(&o.Producers, "producers", 32, "steady workload: producer goroutines, each inserting one job per call, with a pool of this many connections")
	fs.IntVar(&o.SteadyHistory, "steady-history", 20_000, "steady workload: jobs inserted and worked (untimed) before each run, then VACUUM ANALYZE, so the statistics describe a table in service, not an empty one (0 = none)")
	fs.IntVar(&o.Workers, "workers", rotaruntime.DefaultConcurrency, "River MaxWorkers of river-default and river-tuned (river-best runs River's own 2000)")
	fs.IntVar(&o.MaxConns, "max-conns", 16, "pgxpool MaxConns of each River variant's pool (and rota-best's unless --rota-best-conns)")
	fs.IntVar(&o.RotaConns, "rota-conns", rotaWorkerPoolConns, "pool MaxConns of the rota variant (default: what `rota worker` opens for one poll-mode queue)")
	fs.IntVar(&o.RotaBest.Concurrency, "rota-best-concurrency", 2_000, "rota-best: WorkerConfig.Concurrency (0 = runtime default)")
	fs.IntVar(&o.RotaBest.FetchBatch, "rota-best-fetch-batch", 0, "rota-best: WorkerConfig.FetchBatch (0 = runtime default)")
	fs.IntVar(&o.RotaBest.FetchLoops, "rota-best-fetch-loops", 0, "rota-best: WorkerConfig.FetchLoops (0 = runtime default)")
	fs.DurationVar(&o.RotaBest.PollInterval, "rota-best-poll-interval", 0, "rota-best: WorkerConfig.PollInterval (0 = runtime default)")
	fs.IntVar(&o.RotaBest.CommitBatch, "rota-best-commit-batch", 0, "rota-best: WorkerConfig.CommitBatch (0 = runtime default)")
	fs.DurationVar(&o.RotaBest.CommitInterval, "rota-best-commit-interval", 0, "rota-best: WorkerConfig.CommitInterval (0 = runtime default)")
	fs.IntVar(&o.RotaBest.Conns, "rota-best-conns", 0, "rota-best: pool MaxConns (0 = --max-conns)")
	fs.StringVar(&river, "river", "best,tuned", "River variants: default, tuned, best (comma-separated)")
	fs.StringVar(&rotaVariants, "rota", "default,best", "Rota variants: default (`rota worker` defaults), best (--rota-best-*) (comma-separated)")
	fs.StringVar(&workloads, "workloads", "drain,steady", "workloads each pair runs: drain, steady, pressure, insert (comma-separated)")
	fs.IntVar(&o.PressureDrain, "pressure-drain", 1_000_000, "pressure workload: jobs in each drain")
	fs.StringVar(&pressureOn, "pressure-on", "rota", "pressure workload: the systems it runs on (rota, rota-best, river-best, ...; comma-separated)")
	fs.IntVar(&o.InsertTotal, "insert-total", 100_000, "insert workload: jobs per case")
	fs.IntVar(&o.InsertBatch, "insert-batch", 1_000, "insert workload: jobs per batch (at most 1000: the HTTP API's batch limit)")
	fs.DurationVar(&o.InsertSingleDuration, "insert-single-duration", 5*time.Second, "insert workload: how long each one-job-per-call case runs, from --producers goroutines (0 = no such case)")
	fs.StringVar(&o.PlanCacheMode, "plan-cache-mode", "", "set PostgreSQL's plan_cache_mode (auto, force_custom_plan, force_generic_plan) on every connection of every pool; empty keeps the server's setting")
	fs.StringVar(&insertCases, "insert-cases", "", "insert workload: only these cases (comma-separated names as the report prints them, such as \"InsertMany,EnqueueMany\"); empty = all")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of this process (the clients, and the HTTP API of the insert workload) to this file")
	fs.BoolVar(&o.Warmup, "warmup", true, "run an unreported small drain on every system first")
	fs.BoolVar(&o.JSON, "json", false, "print the report as JSON on stdout (progress and tables on stderr)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o.River, o.Rota, o.Workloads, o.PressureOn = splitList(river), splitList(rotaVariants), splitList(workloads), splitList(pressureOn)
	o.InsertCases = splitList(insertCases)
	return o, o.validate()
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	progress := io.Writer(os.Stdout)
	if o.JSON {
		progress = os.Stderr
	}
	if o.CPUProfile != "" {
		stopProfile, err := startCPUProfile(o.CPUProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		defer stopProfile()
	}
	rep, err := run(ctx, o, progress)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	rep.print(progress)
	if o.JSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

// rotaVariantNames maps --rota's names to system names.
var rotaVariantNames = map[string]string{"default": "rota", "best": "rota-best"}

func (o *options) validate() error {
	var errs []error
	if o.PG == "" {
		errs = append(errs, errors.New("--pg is required (or set ROTA_TEST_DATABASE_URL)"))
	}
	if o.Pairs < 1 || o.Drain < 1 || o.Rate < 1 || o.Duration <= 0 || o.Producers < 1 || o.Workers < 1 || o.MaxConns < 4 || o.RotaConns < 2 {
		errs = append(errs, errors.New("--pairs, --drain, --rate, --duration, --producers, --workers must be positive, --max-conns at least 4 and --rota-conns at least 2"))
	}
	if o.InsertSingleDuration < 0 {
		errs = append(errs, errors.New("--insert-single-duration must not be negative"))
	}
	if o.SteadyHistory < 0 {
		errs = append(errs, errors.New("--steady-history must not be negative"))
	}
	if o.PressureDrain < 1 || o.InsertTotal < 1 || o.InsertBatch < 1 || o.InsertBatch > 1000 {
		errs = append(errs, errors.New("--pressure-drain and --insert-total must be positive, --insert-batch between 1 and 1000"))
	}
	b := o.RotaBest
	if b.Concurrency < 0 || b.FetchBatch < 0 || b.FetchLoops < 0 || b.PollInterval < 0 || b.CommitBatch < 0 || b.Conns < 0 || (b.Conns > 0 && b.Conns < 2) {
		errs = append(errs, errors.New("--rota-best-*: must not be negative (conns: 0 or at least 2)"))
	}
	if !slices.Contains([]string{"", "auto", "force_custom_plan", "force_generic_plan"}, o.PlanCacheMode) {
		errs = append(errs, fmt.Errorf("--plan-cache-mode: unknown mode %q", o.PlanCacheMode))
	}
	errs = append(errs, checkNames("--workloads", o.Workloads, allWorkloads))
	errs = append(errs, checkNames("--river", o.River, slices.Sorted(maps.Keys(riverVariants))))
	errs = append(errs, checkNames("--rota", o.Rota, slices.Sorted(maps.Keys(rotaVariantNames))))
	if len(o.River) == 0 || len(o.Rota) == 0 {
		errs = append(errs, errors.New("--river and --rota must each name a variant"))
	}
	if slices.Contains(o.Workloads, workloadPressure) {
		var systems []string
		for _, v := range o.River {
			systems = append(systems, riverVariants[v].name)
		}
		for _, v := range o.Rota {
			systems = append(systems, rotaVariantNames[v])
		}
		errs = append(errs, checkNames("--pressure-on (of the systems --river and --rota run)", o.PressureOn, systems))
		if len(o.PressureOn) == 0 {
			errs = append(errs, errors.New("--pressure-on names no system"))
		}
	}
	return errors.Join(errs...)
}

// checkNames reports names that are not in valid, or repeated.
func checkNames(flagName string, names, valid []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if !slices.Contains(valid, n) || seen[n] {
			return fmt.Errorf("%s: unknown or repeated name %q (want %s)", flagName, n, strings.Join(valid, ", "))
		}
		seen[n] = true
	}
	return nil
}

// rotaVariantFor is the Rota variant --rota names name.
func (o *options) rotaVariantFor(name string) rotaVariant {
	if name == "best" {
		b := o.RotaBest
		return rotaVariant{name: "rota-best", conns: cmpOr(b.Conns, o.MaxConns), cfg: rota.WorkerConfig{
			Concurrency: b.Concurrency, FetchBatch: b.FetchBatch, FetchLoops: b.FetchLoops, PollInterval: b.PollInterval,
			CommitBatch: b.CommitBatch, CommitInterval: b.CommitInterval,
		}}
	}
	// `rota worker` with no flags: every tuning field zero is the runtime's default
	// (internal/runtime/config.go, withDefaults), as cmd/rota/worker.go passes them.
	return rotaVariant{name: "rota", conns: o.RotaConns}
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Report is everything a run measured.
type Report struct {
	Env    map[string]string `json:"env"`
	Opts   options           `json:"options"`
	Runs   []Result          `json:"runs"`
	Ratios []Ratio           `json:"ratios"`
}

// Result is one run of one workload on one system (one case of the insert workload).
type Result struct {
	Pair     int    `json:"pair"`
	System   string `json:"system"`
	Workload string `json:"workload"`
	// Mode is the pressure workload's condition (plain, held-xact, autovacuum-off); Case
	// the insert workload's way of inserting.
	Mode string `json:"mode,omitempty"`
	Case string `json:"case,omitempty"`
	Jobs int    `json:"jobs"`
	// drain, pressure, insert
	Seconds     float64 `json:"seconds,omitempty"`
	TasksPerSec float64 `json:"tasks_per_sec,omitempty"`
	// CPU per task over the timed part of a drain, in microseconds: this process (the
	// system's client, workers and handlers) and the PostgreSQL server (0 when the
	// server is not on this machine).
	ClientCPUus float64 `json:"client_cpu_us_per_task,omitempty"`
	ServerCPUus float64 `json:"server_cpu_us_per_task,omitempty"`
	// Checkpoints the server began during the timed part of a drain (its WAL volume can
	// trigger them; each makes the next change of every page write a full page image to
	// the WAL): what most often sets one run of a long drain apart from the next.
	Checkpoints int64 `json:"checkpoints,omitempty"`
	// Autovacuums of the system's tables that ended during the timed part of a drain
	// (pg_stat_user_tables): under a held transaction they can remove nothing, and run
	// again and again on the same table.
	Autovacuums int64 `json:"autovacuums,omitempty"`
	// steady: pickup = handler start - insert commit; E2E = success commit - insert commit.
	TargetRate   int     `json:"target_rate,omitempty"`
	RateAchieved float64 `json:"rate_achieved,omitempty"`
	P50ms        float64 `json:"p50_ms,omitempty"`
	P95ms        float64 `json:"p95_ms,omitempty"`
	P99ms        float64 `json:"p99_ms,omitempty"`
	MaxMs        float64 `json:"max_ms,omitempty"`
	E2EP50ms     float64 `json:"e2e_p50_ms,omitempty"`
	E2EP95ms     float64 `json:"e2e_p95_ms,omitempty"`
	E2EP99ms     float64 `json:"e2e_p99_ms,omitempty"`
	E2EMaxMs     float64 `json:"e2e_max_ms,omitempty"`
	// Stages splits a Rota pickup (stages.go).
	Stages *pickupStages `json:"stages,omitempty"`
	// Statements are the steady run's statements with the most execution time.
	Statements []stmtStat `json:"statements,omitempty"`
	// pressure: blocks per task over the first and the last 10% of the drain.
	Blocks *blockStats `json:"blocks,omitempty"`
	// Load1 is the machine's 1-minute load average when the run ended (Linux only): the
	// harness and PostgreSQL share the machine, and so does anything else running on it.
	Load1 string `json:"load1,omitempty"`
}

// Ratio is one system's (or case's, or mode's) value divided by another's, over the pairs.
type Ratio struct {
	Metric string    `json:"metric"`
	Of     string    `json:"of"`
	Over   string    `json:"over"`
	Values []float64 `json:"values"`
	Min    float64   `json:"min"`
	Median float64   `json:"median"`
	Max    float64   `json:"max"`
}

// database is one of the run's two databases: a pool for the harness's own statements
// (resets, counts, statistics, backlog inserts) and the base config for the systems'
// pools, which are closed with it.
type database struct {
	name string
	cfg  *pgxpool.Config
	mon  *pgxpool.Pool

	mu    sync.Mutex
	pools []*pgxpool.Pool
}

// newPool opens another pool of at most conns connections on the database.
func (d *database) newPool(ctx context.Context, conns int) (*pgxpool.Pool, error) {
	cfg := d.cfg.Copy()
	cfg.MaxConns = int32(conns)
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.pools = append(d.pools, p)
	d.mu.Unlock()
	return p, nil
}

func (d *database) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.pools {
		p.Close()
	}
	d.mon.Close()
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
	riverDB, dropRiver, err := freshDatabase(ctx, admin, o, prefix+"_river")
	if err != nil {
		return nil, err
	}
	defer dropRiver()
	rotaDB, dropRota, err := freshDatabase(ctx, admin, o, prefix+"_rota")
	if err != nil {
		return nil, err
	}
	defer dropRota()
	if err := migrateRiver(ctx, riverDB.mon); err != nil {
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	if err := migrateRota(ctx, rotaDB.mon); err != nil {
		return nil, fmt.Errorf("rota migrate: %w", err)
	}

	var rivers, rotas []system
	for _, name := range o.River {
		s, err := newRiverSystem(ctx, riverVariants[name], riverDB, o.Workers, o.MaxConns)
		if err != nil {
			return nil, err
		}
		rivers = append(rivers, s)
	}
	for _, name := range o.Rota {
		s, err := newRotaSystem(ctx, o.rotaVariantFor(name), rotaDB)
		if err != nil {
			return nil, err
		}
		rotas = append(rotas, s)
	}
	systems := interleave(rivers, rotas)

	rep := &Report{Env: environment(ctx, admin, o, systems), Opts: o}
	cpu := newCPUMeter(ctx, admin)
	for _, k := range slices.Sorted(maps.Keys(rep.Env)) {
		fmt.Fprintf(out, "# %s: %s\n", k, rep.Env[k])
	}
	r := &runner{o: o, out: out, cpu: cpu}

	if o.Warmup && (slices.Contains(o.Workloads, workloadDrain) || slices.Contains(o.Workloads, workloadSteady) || slices.Contains(o.Workloads, workloadPressure)) {
		n := min(o.Drain, 2_000)
		for _, s := range systems {
			if _, err := r.drain(ctx, s, n, drainOpts{}); err != nil {
				return nil, fmt.Errorf("warm-up %s: %w", s.Name(), err)
			}
		}
		fmt.Fprintf(out, "# warm-up: drained %d jobs on each system (not reported)\n", n)
	}
	if slices.Contains(o.Workloads, workloadPressure) {
		r.pgss = map[*database]bool{}
		for _, db := range []*database{riverDB, rotaDB} {
			ok, why := enablePGSS(ctx, db)
			r.pgss[db] = ok
			if !ok {
				fmt.Fprintf(out, "# pg_stat_statements: not available in %s (%s); pressure reports index blocks from pg_statio_user_indexes only\n", db.name, why)
			}
		}
	}

	for pair := 1; pair <= o.Pairs; pair++ {
		order := slices.Clone(systems)
		if pair%2 == 0 {
			slices.Reverse(order)
		}
		for _, workload := range o.Workloads {
			var results []Result
			var err error
			switch workload {
			case workloadDrain, workloadSteady:
				for _, s := range order {
					var res Result
					if workload == workloadDrain {
						res, err = r.drain(ctx, s, o.Drain, drainOpts{})
					} else {
						res, err = r.steady(ctx, s)
					}
					if err != nil {
						return nil, fmt.Errorf("pair %d, %s, %s: %w", pair, workload, s.Name(), err)
					}
					results = append(results, res)
					r.emit(pair, &rep.Runs, res)
				}
			case workloadPressure:
				err = r.pressure(ctx, pair, systems, func(res Result) { r.emit(pair, &rep.Runs, res) })
			case workloadInsert:
				err = r.insert(ctx, pair, riverDB, rotaDB, func(res Result) { r.emit(pair, &rep.Runs, res) })
			}
			if err != nil {
				return nil, fmt.Errorf("pair %d, %s: %w", pair, workload, err)
			}
		}
	}
	rep.Ratios = ratios(rep.Runs, rivers, rotas)
	return rep, nil
}

// runner holds what every workload needs.
type runner struct {
	o    options
	out  io.Writer
	cpu  cpuMeter
	pgss map[*database]bool // pg_stat_statements usable in that database
}

func (r *runner) emit(pair int, runs *[]Result, res Result) {
	res.Pair = pair
	res.Load1 = load1()
	*runs = append(*runs, res)
	fmt.Fprintln(r.out, res.line())
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.out, "  "+format+"\n", args...)
}

// interleave orders the systems River, Rota, River, Rota, ...: each Rota run sits
// between two River runs, and the order reverses on every other pair.
func interleave(rivers, rotas []system) []system {
	var out []system
	for i := range max(len(rivers), len(rotas)) {
		if i < len(rivers) {
			out = append(out, rivers[i])
		}
		if i < len(rotas) {
			out = append(out, rotas[i])
		}
	}
	return out
}

// freshDatabase creates database name and returns it, with a function that closes its
// pools and drops it.
func freshDatabase(ctx context.Context, admin *pgx.Conn, o options, name string) (*database, func(), error) {
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
	if o.PlanCacheMode != "" {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = o.PlanCacheMode
	}
	mon := cfg.Copy()
	mon.MaxConns = backlogInserters + 4 // backlog batches, counts and statistics at once
	pool, err := pgxpool.NewWithConfig(ctx, mon)
	if err != nil {
		drop()
		return nil, nil, err
	}
	db := &database{name: name, cfg: cfg, mon: pool}
	return db, func() { db.close(); drop() }, nil
}

func environment(ctx context.Context, admin *pgx.Conn, o options, systems []system) map[string]string {
	env := map[string]string{
		"go":         runtime.Version(),
		"gomaxprocs": fmt.Sprint(runtime.GOMAXPROCS(0)),
		"workloads": fmt.Sprintf("%s; drain=%d, steady=%d/s for %s by %d producers, pressure drain=%d on %s, insert %d in batches of %d",
			strings.Join(o.Workloads, ","), o.Drain, o.Rate, o.Duration, o.Producers, o.PressureDrain, strings.Join(o.PressureOn, ","), o.InsertTotal, o.InsertBatch),
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
	for _, s := range systems {
		env[s.Name()] = s.Settings()
	}
	return env
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

// startCPUProfile profiles this process into path until the returned func runs.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
