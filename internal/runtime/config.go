package runtime

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/validate"
)

// Config configures a Worker. The zero value of every field but Store and Mux means its
// default; NewWorker fills the defaults (in withDefaults) and validates the result.
type Config struct {
	// Store is where tasks are claimed and outcomes recorded. Required.
	Store store.Store
	// Mux routes tasks to handlers by kind. Required.
	Mux *Mux

	// WorkerID names this worker in task rows, attempt history and logs.
	// Default: "<hostname>-<pid>-<6 random hex digits>".
	WorkerID string

	// Queues maps each queue this worker serves to the most handlers that may run for it
	// at once; 0 means up to Concurrency. Default: {"default": Concurrency}.
	Queues map[string]int
	// Concurrency is the total number of handler goroutines. Default: 1000. A slot is
	// taken from the claim until the handler returns, so for trivial handlers the
	// worker's rate is its slots over a claim's round trip: 100 slots held a drain to
	// about 0.7 of River at its best, 1000 let claims grow to hundreds of tasks
	// (docs/performance.md, "The default concurrency"). I/O-bound handlers want many
	// slots too; goroutines are cheap. A handler that needs a scarce resource (CPU,
	// memory, a downstream's connections) is capped per queue (Queues, queue=N) or per
	// queue across workers (a queue's concurrency setting).
	Concurrency int
	// FetchBatch is the most tasks one claim asks for; a claim asks for all the free
	// capacity of its queue and of the worker, up to this. Default: 1000, so that claims
	// follow the capacity: a worker with more slots claims in larger statements.
	FetchBatch int
	// FetchLoops is how many loops claim (or fetch from a Source) for each queue at once.
	// Default in poll mode: 2 while a claim can take fewer than smallClaim tasks (the
	// second claim is in flight while the first one's tasks run, which hides the round
	// trip: measured, a 200,000-task drain at Concurrency 100 went from 23,700 to 29,300
	// tasks/s), else 1 (large claims only contend: 34,600-36,400 against 31,700-32,200
	// tasks/s at Concurrency 2000). DefaultSourceFetchLoops with a Source, whose receives
	// (SQS long polls) return as soon as one message is there, so one loop alone would
	// leave slots idle.
	FetchLoops int
	// PollInterval is how often the idle queues are polled when no wake-up from
	// Store.Listen arrives (delayed and retried tasks are found this way): one
	// Store.NextDue call for all of them, then a claim for each queue with a due task.
	// Default: 1s.
	PollInterval time.Duration

	// LeaseDuration is how long a claim or heartbeat holds a task before another worker's
	// reaper may take it back. Default: 30s.
	LeaseDuration time.Duration
	// HeartbeatInterval is how often each running task's lease is extended (and a cancel
	// request is noticed). At most LeaseDuration/2: a task's first beat may come 1.5
	// intervals after its claim. Default: LeaseDuration/3.
	HeartbeatInterval time.Duration

	// DefaultTimeout limits one attempt of a kind registered without WithTimeout; a
	// task's TimeoutSeconds overrides both. Negative means no timeout. Default: 15m,
	// long enough for real batch work, short enough that a hung handler is noticed.
	DefaultTimeout time.Duration
	// BackoffBase and BackoffMax shape the full-jitter exponential backoff of retryable
	// failures of kinds registered without WithBackoff, and of reaped tasks.
	// Defaults: 1s and 1h.
	BackoffBase time.Duration
	BackoffMax  time.Duration

	// ReapInterval is how often this worker returns tasks with expired leases (their
	// worker died) to the queue; every worker may do it at once safely. Negative
	// disables the reaper (when another process runs it). Default: 5s.
	ReapInterval time.Duration

	// ShutdownGrace is how long running handlers may keep going after Run's ctx ends
	// before their contexts are cancelled (their attempt is then recorded but not counted
	// against max_attempts: store.Release, due again at once). It also bounds
	// the wait for handlers that ignore the cancel and the final flush of outcomes.
	// Negative cancels at once. Default: 10s.
	ShutdownGrace time.Duration

	// AbandonGrace is how long a handler may keep running after its context ended (the
	// attempt timed out, a cancel was requested, the lease was lost, or shutdown) before
	// the worker abandons it: it stops extending the task's lease, frees the slot, and
	// counts and logs the goroutine, which it cannot kill. The lease then expires and a
	// reaper retries (or cancels) the task; whatever the handler returns later is dropped.
	// Default: 5s.
	AbandonGrace time.Duration

	// CommitBatch is the most outcomes written in one Store.RecordOutcomes call.
	// Default: 1000 (outcomes waiting are written together, however many slots finished).
	CommitBatch int
	// CommitInterval is how long the committer waits for more outcomes to join a batch
	// after the first arrives. Negative means never wait: write whatever is queued.
	// Default: 1ms. Under load, outcomes also gather while the previous batch is written,
	// so batches grow with the rate; measured at 3,000 tasks/s, 1ms instead of 5ms took
	// the p50 from handler start to SUCCEEDED committed from 14.7 to 11.9 ms.
	CommitInterval time.Duration

	// ClaimFrom is the status claims take tasks from: StatusPending (poll mode) or
	// StatusEnqueued (SQS mode). Retries and reaped tasks return to PENDING in either
	// mode (docs/architecture.md, "How a queue's mode is decided"). Default: StatusPending.
	ClaimFrom store.Status

	// Source, when set, delivers claimed tasks in place of the poll-mode claim (SQS mode;
	// see Source). ClaimFrom should then be StatusEnqueued. Default: nil (poll mode).
	Source Source

	// PresenceInterval is how often the worker renews its row in the workers registry
	// (store.WorkerRegistry), which `GET /api/workers` and the create warnings read.
	// Negative: the worker does not register. Default: store.DefaultWorkerHeartbeat (10s).
	PresenceInterval time.Duration
	// Mode is the worker's mode as the registry shows it. Default: "sqs" with a Source,
	// "poll" otherwise.
	Mode string
	// Version is the version the registry shows. Default: BuildVersion().
	Version string

	// Observer receives the worker's events, for metrics. Default: NopObserver.
	Observer Observer

	// TracerProvider makes the worker's spans: one per attempt (continuing the trace
	// the task was created in), claim and commit. Default: otel.GetTracerProvider(),
	// a no-op one unless the process set one up (internal/tracing).
	TracerProvider trace.TracerProvider

	// Logger receives the worker's logs, with keys worker_id, task_id, queue, kind and
	// attempt. Default: slog.Default().
	Logger *slog.Logger

	// Now is this worker's clock; tests set it to a skewed one. It times the worker's own
	// loops (heartbeats), never when a task runs: a retry or snooze is a duration the
	// store adds to the database's now() (DESIGN.md section 9). Default: time.Now.
	Now func() time.Time
}

// Defaults, for documentation and for callers that build their own Config.
const (
	DefaultConcurrency      = 1000
	DefaultFetchBatch       = 1000
	DefaultSourceFetchLoops = 4
	DefaultPollInterval     = time.Second
	DefaultLeaseDuration    = 30 * time.Second
	DefaultAttemptTimeout   = 15 * time.Minute
	DefaultBackoffBase      = time.Second
	DefaultBackoffMax       = time.Hour
	DefaultReapInterval     = 5 * time.Second
	DefaultShutdownGrace    = 10 * time.Second
	DefaultAbandonGrace     = 5 * time.Second
	DefaultCommitBatch      = 1000
	DefaultCommitInterval   = time.Millisecond
)

// smallClaim is the claim size below which a poll-mode queue gets a second claiming
// loop by default (Config.FetchLoops).
const smallClaim = 500

// withDefaults returns cfg with every zero field set to its default. It is the one place
// defaults live.
func (cfg Config) withDefaults() Config {
	if cfg.WorkerID == "" {
		cfg.WorkerID = DefaultWorkerID()
	}
	cfg.Concurrency = cmp.Or(cfg.Concurrency, DefaultConcurrency)
	if len(cfg.Queues) == 0 {
		cfg.Queues = map[string]int{store.DefaultQueue: cfg.Concurrency}
	}
	cfg.FetchBatch = cmp.Or(cfg.FetchBatch, DefaultFetchBatch)
	if cfg.FetchLoops == 0 {
		switch {
		case cfg.Source != nil:
			cfg.FetchLoops = DefaultSourceFetchLoops
		case min(cfg.FetchBatch, cfg.Concurrency) < smallClaim:
			cfg.FetchLoops = 2
		default:
			cfg.FetchLoops = 1
		}
	}
	cfg.PollInterval = cmp.Or(cfg.PollInterval, DefaultPollInterval)
	cfg.LeaseDuration = cmp.Or(cfg.LeaseDuration, DefaultLeaseDuration)
	cfg.HeartbeatInterval = cmp.Or(cfg.HeartbeatInterval, cfg.LeaseDuration/3)
	cfg.DefaultTimeout = cmp.Or(cfg.DefaultTimeout, DefaultAttemptTimeout)
	cfg.BackoffBase = cmp.Or(cfg.BackoffBase, DefaultBackoffBase)
	cfg.BackoffMax = cmp.Or(cfg.BackoffMax, DefaultBackoffMax)
	cfg.ReapInterval = cmp.Or(cfg.ReapInterval, DefaultReapInterval)
	cfg.ShutdownGrace = cmp.Or(cfg.ShutdownGrace, DefaultShutdownGrace)
	cfg.AbandonGrace = cmp.Or(cfg.AbandonGrace, DefaultAbandonGrace)
	cfg.CommitBatch = cmp.Or(cfg.CommitBatch, DefaultCommitBatch)
	cfg.CommitInterval = cmp.Or(cfg.CommitInterval, DefaultCommitInterval)
	cfg.ClaimFrom = cmp.Or(cfg.ClaimFrom, store.StatusPending)
	cfg.PresenceInterval = cmp.Or(cfg.PresenceInterval, store.DefaultWorkerHeartbeat)
	if cfg.Mode == "" {
		cfg.Mode = store.WorkerModePoll
		if cfg.Source != nil {
			cfg.Mode = store.WorkerModeSQS
		}
	}
	if cfg.Version == "" {
		cfg.Version = BuildVersion()
	}
	if cfg.Observer == nil {
		cfg.Observer = NopObserver{}
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// validate checks a Config that already has its defaults.
func (cfg *Config) validate() error {
	// Every problem at once, not one per attempt.
	var problems validate.Problems
	check := problems.Check
	check(cfg.Store != nil, "Store is required")
	check(cfg.Mux != nil, "Mux is required")
	check(cfg.Concurrency > 0, "Concurrency must be positive, got %d", cfg.Concurrency)
	for q, limit := range cfg.Queues {
		problems.Add(store.ValidateName("queue", q))
		check(limit >= 0, "Queues[%q] must not be negative, got %d", q, limit)
	}
	check(cfg.FetchBatch > 0, "FetchBatch must be positive, got %d", cfg.FetchBatch)
	check(cfg.FetchLoops > 0, "FetchLoops must be positive, got %d", cfg.FetchLoops)
	check(cfg.PollInterval > 0, "PollInterval must be positive, got %s", cfg.PollInterval)
	check(cfg.LeaseDuration > 0, "LeaseDuration must be positive, got %s", cfg.LeaseDuration)
	// A task's first beat may come 1.5 intervals after its claim (heartbeat.go skips one
	// claimed just before a tick), and it must come before the lease ends.
	check(cfg.HeartbeatInterval > 0 && cfg.HeartbeatInterval <= cfg.LeaseDuration/2,
		"HeartbeatInterval (%s) must be positive and at most half of LeaseDuration (%s), so every lease is extended before it expires",
		cfg.HeartbeatInterval, cfg.LeaseDuration)
	check(cfg.BackoffBase > 0 && cfg.BackoffMax >= cfg.BackoffBase,
		"BackoffBase must be positive and at most BackoffMax, got %s and %s", cfg.BackoffBase, cfg.BackoffMax)
	check(cfg.AbandonGrace > 0, "AbandonGrace must be positive, got %s", cfg.AbandonGrace)
	check(cfg.CommitBatch > 0, "CommitBatch must be positive, got %d", cfg.CommitBatch)
	check(cfg.ClaimFrom == store.StatusPending || cfg.ClaimFrom == store.StatusEnqueued,
		"ClaimFrom must be %s or %s, got %q", store.StatusPending, store.StatusEnqueued, cfg.ClaimFrom)
	if err := problems.Err(); err != nil {
		return fmt.Errorf("%w: worker config: %w", store.ErrInvalid, err)
	}
	return nil
}

// queueLimit is the effective concurrency limit of queue q.
func (cfg *Config) queueLimit(q string) int {
	if l := cfg.Queues[q]; l > 0 && l < cfg.Concurrency {
		return l
	}
	return cfg.Concurrency
}

// graceBound is the wait used after the grace period: for handlers that ignore their
// cancelled context and for the final flush. Never zero, so a flush always gets a try.
func (cfg *Config) graceBound() time.Duration {
	return max(cfg.ShutdownGrace, time.Second)
}

// DefaultWorkerID is the id a worker gets when its Config names none:
// "<hostname>-<pid>-<6 random hex digits>". A Source that claims for a worker (SQS mode)
// uses it too, so both write the same id.
func DefaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
