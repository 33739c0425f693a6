// Package bench measures Rota against a real PostgreSQL server: the workloads behind
// `rota bench`. One file per workload:
//
//   - drain.go: a backlog of noop tasks drained by the real worker runtime, with the
//     process's RSS and Go heap sampled while it drains;
//   - steady.go: a paced producer of single-task inserts while a worker runs, with the
//     pickup and end-to-end latency of every task;
//   - insert.go: insert throughput by batch size, and single inserts from 8 goroutines;
//   - sqs.go: the drain in SQS mode (an enqueuer and a worker with an SQS source) on an
//     SQS endpoint, then that endpoint's raw ceiling (internal/sqsceiling).
//
// Each workload is a function of a Target (a migrated database and a queue of its own)
// that returns a Result. Run adds what the command needs around them: a database of its
// own (created, migrated and dropped), or the caller's database in place.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
)

// The workloads, by the names `rota bench --workload` takes.
const (
	WorkloadDrain  = "drain"
	WorkloadSteady = "steady"
	WorkloadInsert = "insert"
	WorkloadSQS    = "sqs"
)

// Workloads lists the workloads that need only PostgreSQL, in the order `--workload all`
// runs them; all adds WorkloadSQS when an SQS endpoint is given.
var Workloads = []string{WorkloadDrain, WorkloadSteady, WorkloadInsert}

// Defaults of the command's flags.
const (
	DefaultTasks    = 100_000
	DefaultRate     = 500.0
	DefaultDuration = 20 * time.Second
)

// stallTimeout ends a workload whose tasks stop making progress for this long, so that a
// broken worker fails the benchmark instead of hanging it.
const stallTimeout = time.Minute

// Target is where a workload runs.
type Target struct {
	// Pool is a pool on a database with Rota's schema migrated.
	Pool *pgxpool.Pool
	// Queue is the queue the workload's tasks go to; only the workload's own worker
	// serves it, so tasks of other queues in the same database are never touched.
	Queue string
	// Owned says the database belongs to the benchmark: a workload may empty rota.tasks
	// to start from a clean table. Otherwise only the rows of Queue are deleted.
	Owned bool
	// Progress, when not nil, follows the running workload.
	Progress *Progress
}

// reset removes what earlier workloads left, so each one starts from the same state.
//
// It does not VACUUM: a vacuum of an empty rota.tasks records reltuples = 0, and the
// generic plans PostgreSQL then caches for the claim and outcome statements use
// sequential scans (measured: RecordOutcomes went from 1ms to 300ms within 10s of
// steady load). TRUNCATE leaves the statistics unknown, like a fresh database's, which
// gets index and TID scans.
func (t *Target) reset(ctx context.Context) error {
	if t.Owned {
		if _, err := t.Pool.Exec(ctx, `TRUNCATE rota.tasks, rota.task_attempts CASCADE`); err != nil {
			return fmt.Errorf("empty rota.tasks: %w", err)
		}
		return nil
	}
	return t.deleteQueue(ctx)
}

// deleteQueue deletes the tasks of the benchmark's queue with their attempts (dead letters
// go by their foreign key's cascade).
func (t *Target) deleteQueue(ctx context.Context) error {
	if _, err := t.Pool.Exec(ctx, `WITH gone AS (DELETE FROM rota.tasks WHERE queue = $1 RETURNING id)
		DELETE FROM rota.task_attempts WHERE task_id = ANY (ARRAY(SELECT id FROM gone))`, t.Queue); err != nil {
		return fmt.Errorf("delete the benchmark's tasks: %w", err)
	}
	return nil
}

func (t *Target) vacuum(ctx context.Context) error {
	if _, err := t.Pool.Exec(ctx, `VACUUM ANALYZE rota.tasks`); err != nil {
		return fmt.Errorf("vacuum rota.tasks: %w", err)
	}
	return nil
}

// statusCounts counts the tasks of the benchmark's queue: all of them, and SUCCEEDED.
func (t *Target) statusCounts(ctx context.Context) (total, succeeded int, err error) {
	err = t.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'SUCCEEDED')
		FROM rota.tasks WHERE queue = $1`, t.Queue).Scan(&total, &succeeded)
	if err != nil {
		return 0, 0, fmt.Errorf("count the benchmark's tasks: %w", err)
	}
	return total, succeeded, nil
}

// verifySucceeded checks in the database that the queue holds exactly want tasks, all
// SUCCEEDED.
func (t *Target) verifySucceeded(ctx context.Context, want int) error {
	total, succeeded, err := t.statusCounts(ctx)
	if err != nil {
		return err
	}
	if total != want || succeeded != want {
		return fmt.Errorf("database check: queue %s holds %d tasks, %d SUCCEEDED; want %d, all SUCCEEDED",
			t.Queue, total, succeeded, want)
	}
	return nil
}

// NewQueueName returns a queue name no one else uses: bench_<random hex>.
func NewQueueName() string {
	return "bench_" + randomHex(4)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Result is what one workload measured. Durations are in milliseconds (fields ending
// in _ms) or seconds; rates in tasks per second.
type Result struct {
	Workload string `json:"workload"`
	// Tasks, Seconds and TasksPerSec are the workload's headline: tasks drained (drain,
	// sqs) or enqueued (steady) in the timed part, and their rate. Insert reports per case.
	Tasks       int     `json:"tasks,omitempty"`
	Seconds     float64 `json:"seconds,omitempty"`
	TasksPerSec float64 `json:"tasks_per_sec,omitempty"`
	// Concurrency is the worker's handler goroutines (drain, steady, sqs).
	Concurrency int `json:"concurrency,omitempty"`
	// Worker counts what the in-process worker did (drain, steady, sqs).
	Worker *WorkerCounts `json:"worker,omitempty"`

	Memory *Memory       `json:"memory,omitempty"` // drain
	Steady *SteadyResult `json:"steady,omitempty"` // steady
	Insert []InsertCase  `json:"insert,omitempty"` // insert
	SQS    *SQSResult    `json:"sqs,omitempty"`    // sqs
}

// WorkerCounts is the part of the worker's counters a benchmark run should check: in a
// sound run every task is claimed once and succeeds, and every error count is zero.
type WorkerCounts struct {
	Claimed   int64 `json:"claimed"`
	Succeeded int64 `json:"succeeded"`
	// Errors sums retries, dead, failed, lease losses, panics, missing handlers and
	// claim, commit and heartbeat errors.
	Errors int64 `json:"errors"`
}

func workerCounts(s runtime.Stats) *WorkerCounts {
	return &WorkerCounts{
		Claimed:   s.Claimed,
		Succeeded: s.Succeeded,
		Errors: s.Retried + s.Dead + s.Failed + s.Canceled + s.LeaseLost + s.NoHandler + s.Panics +
			s.CommitErrors + s.ClaimErrors + s.HeartbeatErrors,
	}
}

// Environment describes where the figures were measured.
type Environment struct {
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Postgres   string `json:"postgres_version"`
	// Fsync and SynchronousCommit are the server's settings: with either off, commits
	// are much cheaper than on a durable production server.
	Fsync             string `json:"fsync"`
	SynchronousCommit string `json:"synchronous_commit"`
	// LoadAverage is this machine's /proc/loadavg when the run started ("" elsewhere):
	// other work on the machine skews the figures.
	LoadAverage string `json:"load_average,omitempty"`
}

func environment(ctx context.Context, pool *pgxpool.Pool) (Environment, error) {
	env := Environment{
		GoVersion:  goruntime.Version(),
		OS:         goruntime.GOOS,
		Arch:       goruntime.GOARCH,
		CPUs:       goruntime.NumCPU(),
		GOMAXPROCS: goruntime.GOMAXPROCS(0),
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			env.LoadAverage = strings.Join(f[:3], " ")
		}
	}
	err := pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync'),
		current_setting('synchronous_commit')`).Scan(&env.Postgres, &env.Fsync, &env.SynchronousCommit)
	if err != nil {
		return env, fmt.Errorf("read server settings: %w", err)
	}
	return env, nil
}

// Options configures Run.
type Options struct {
	// DatabaseURL names the server. Without InPlace a database rota_bench_<random> is
	// created there (the role needs CREATEDB), migrated, and dropped at the end.
	DatabaseURL string
	// InPlace runs in DatabaseURL's own database, whose rota schema must be migrated
	// up; the benchmark's tasks use a queue of their own and are deleted at the end.
	InPlace bool
	// Keep keeps the created database (or, in place, the benchmark's tasks).
	Keep bool

	// Workloads to run, in order (names from Workloads, and WorkloadSQS).
	Workloads []string
	// Tasks: the drain backlog, and the tasks of each insert case. Default DefaultTasks.
	Tasks int
	// Rate (tasks/s) and Duration of the steady producer. Defaults DefaultRate and
	// DefaultDuration.
	Rate     float64
	Duration time.Duration
	// InsertMax ends an insert case after this long (see InsertConfig.MaxCaseDuration);
	// 0 means no limit.
	InsertMax time.Duration
	// Concurrency of the worker; 0 means the runtime's default.
	Concurrency int
	// SQSEndpoint is the SQS-compatible endpoint of WorkloadSQS, which needs one: the
	// benchmark never runs against AWS unless pointed at it. Credentials and region come
	// from the standard AWS chain, as for `rota worker --mode sqs`.
	SQSEndpoint string

	// Progress, when not nil, follows the running workload.
	Progress *Progress
	// Log receives one line per setup step (database created, dropped...); nil discards.
	Log io.Writer
}

// Report is what Run measured.
type Report struct {
	// Database is the database the workloads ran in; Dropped says it is gone.
	Database    string      `json:"database"`
	InPlace     bool        `json:"in_place"`
	Dropped     bool        `json:"dropped"`
	Queue       string      `json:"queue"`
	Environment Environment `json:"environment"`
	Results     []*Result   `json:"results"`
}

// ErrNoSQSEndpoint is returned when WorkloadSQS is asked for without an SQS endpoint.
var ErrNoSQSEndpoint = errors.New("the sqs workload needs an SQS endpoint")

// ErrCreateDatabase wraps the failure to create the benchmark's own database.
var ErrCreateDatabase = errors.New("cannot create the benchmark database")

// Run sets up a database, runs the workloads in order and cleans up. On a workload's
// failure it returns the report so far with the error; the clean-up happens either way
// (also when ctx is cancelled).
func Run(ctx context.Context, opts Options) (rep *Report, err error) {
	opts.Tasks = max(opts.Tasks, 0)
	if opts.Tasks == 0 {
		opts.Tasks = DefaultTasks
	}
	if opts.Rate <= 0 {
		opts.Rate = DefaultRate
	}
	if opts.Duration <= 0 {
		opts.Duration = DefaultDuration
	}
	var sqsClient *sqs.Client
	for _, w := range opts.Workloads {
		if !isWorkload(w) {
			return nil, fmt.Errorf("unknown workload %q", w)
		}
		if w == WorkloadSQS && sqsClient == nil {
			if opts.SQSEndpoint == "" {
				return nil, ErrNoSQSEndpoint
			}
			if sqsClient, err = sqsmode.NewClient(ctx, sqsmode.ClientConfig{Endpoint: opts.SQSEndpoint}); err != nil {
				return nil, err
			}
		}
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}

	rep = &Report{InPlace: opts.InPlace, Queue: NewQueueName()}
	var db *Database
	if opts.InPlace {
		db, err = OpenInPlace(ctx, opts.DatabaseURL)
	} else {
		db, err = CreateDatabase(ctx, opts.DatabaseURL)
		if err == nil {
			fmt.Fprintf(logw, "created and migrated database %s\n", db.Name)
		}
	}
	if err != nil {
		return nil, err
	}
	rep.Database = db.Name
	target := &Target{Pool: db.Pool, Queue: rep.Queue, Owned: !opts.InPlace, Progress: opts.Progress}
	defer func() {
		cerr := db.Close(context.WithoutCancel(ctx), target, opts.Keep)
		switch {
		case cerr != nil:
			err = errors.Join(err, cerr)
		case opts.Keep && !opts.InPlace:
			fmt.Fprintf(logw, "kept database %s\n", db.Name)
		case !opts.InPlace:
			rep.Dropped = true
			fmt.Fprintf(logw, "dropped database %s\n", db.Name)
		}
	}()

	if rep.Environment, err = environment(ctx, db.Pool); err != nil {
		return rep, err
	}
	for _, w := range opts.Workloads {
		var res *Result
		switch w {
		case WorkloadDrain:
			res, err = Drain(ctx, target, DrainConfig{Tasks: opts.Tasks, Concurrency: opts.Concurrency})
		case WorkloadSteady:
			res, err = Steady(ctx, target, SteadyConfig{Rate: opts.Rate, Duration: opts.Duration, Concurrency: opts.Concurrency})
		case WorkloadInsert:
			res, err = Insert(ctx, target, InsertConfig{Tasks: opts.Tasks, MaxCaseDuration: opts.InsertMax})
		case WorkloadSQS:
			res, err = SQSDrain(ctx, target, SQSConfig{Client: sqsClient, Endpoint: opts.SQSEndpoint,
				Tasks: opts.Tasks, Concurrency: opts.Concurrency})
		}
		if err != nil {
			return rep, fmt.Errorf("%s: %w", w, err)
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

func isWorkload(name string) bool {
	return name == WorkloadSQS || slices.Contains(Workloads, name)
}

// newWorker returns the real worker runtime, with its defaults, serving only the
// target's queue. st is normally postgres.New(pool); steady wraps it to see commits.
// configure, when given, changes the config before the worker is made (the SQS mode
// settings).
func newWorker(st store.Store, mux *runtime.Mux, queue string, concurrency int, configure ...func(*runtime.Config)) (*runtime.Worker, error) {
	cfg := runtime.Config{
		Store:       st,
		Mux:         mux,
		Queues:      map[string]int{queue: 0},
		Concurrency: concurrency,
		// The counters (Result.Worker) report errors; logs would garble the output.
		Logger: slog.New(slog.DiscardHandler),
	}
	for _, f := range configure {
		f(&cfg)
	}
	w, err := runtime.NewWorker(cfg)
	if err != nil {
		return nil, fmt.Errorf("new worker: %w", err)
	}
	return w, nil
}

// effectiveConcurrency is the concurrency a worker configured with c runs.
func effectiveConcurrency(c int) int {
	if c <= 0 {
		return runtime.DefaultConcurrency
	}
	return c
}

// workerRun is a worker's Run going on in the background.
type workerRun struct {
	done   chan struct{} // closed when Run has returned
	err    error         // Run's result, set before done is closed
	cancel context.CancelFunc
}

// startWorker runs w.Run in a goroutine until stop is called.
func startWorker(ctx context.Context, w *runtime.Worker) *workerRun {
	ctx, cancel := context.WithCancel(ctx)
	r := &workerRun{done: make(chan struct{}), cancel: cancel}
	go func() {
		r.err = w.Run(ctx)
		close(r.done)
	}()
	return r
}

// stop ends the run gracefully and returns Run's error.
func (r *workerRun) stop() error {
	r.cancel()
	<-r.done
	return r.err
}

// waitFor polls cond every interval until it holds. It fails when ctx ends, when the
// worker's Run returns, or when progress() does not change for stallTimeout.
func waitFor(ctx context.Context, run *workerRun, interval time.Duration, progress func() int64, cond func() bool) error {
	last := progress()
	lastChange := time.Now()
	t := time.NewTicker(interval)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-run.done:
			return fmt.Errorf("the worker stopped early: %v", run.err)
		case <-t.C:
		}
		if p := progress(); p != last {
			last, lastChange = p, time.Now()
		} else if time.Since(lastChange) > stallTimeout {
			return fmt.Errorf("no progress for %s (stuck at %d)", stallTimeout, p)
		}
	}
	return nil
}

func ms(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}
