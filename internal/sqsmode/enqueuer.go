package sqsmode

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/loop"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/validate"
)

// Defaults of EnqueuerConfig.
const (
	// DefaultEnqueueBatch and DefaultSendConcurrency make a round of a backlog 25
	// SendMessageBatch calls, 10 at once: as long as a round of 100, 4 at once, was (the
	// workers' claims of its ids wait for its commit), with the round's SQL (lock, mark,
	// commit) shared by 2.5 times the tasks: PostgreSQL's CPU per task in the SQS drain
	// about 13% lower (docs/performance.md, SQS mode session 7).
	DefaultEnqueueBatch = 250
	// DefaultEnqueueInterval is short so that a retry whose backoff has passed, or a
	// delayed task that came due, is sent promptly: no insert announces those.
	DefaultEnqueueInterval = 200 * time.Millisecond
	// DefaultRedeliverAfter is how long an ENQUEUED task's message may go unclaimed
	// before it is presumed lost and sent again. It must exceed how long a message can
	// wait in SQS under a normal backlog, or every backlogged task gets a second message
	// (harmless, as workers delete messages they cannot claim, but it doubles the
	// traffic exactly when the queue is already behind). Five minutes covers a deep
	// backlog while still healing a lost message, or an SQS queue that lost everything,
	// within minutes.
	DefaultRedeliverAfter = 5 * time.Minute
	// DefaultRoundsPerQueue lets a backlog be sent by rounds that overlap. A lone round
	// spends about half its time waiting for SQS, holding its tasks' locks, and the
	// workers' claims of the ids it sent wait for its commit: with one round per queue
	// the workers outran the enqueuer (docs/performance.md, SQS mode drain).
	DefaultRoundsPerQueue  = 4
	DefaultSendConcurrency = 10
	DefaultSendTimeout     = 10 * time.Second
	// DefaultDLQInterval is how often the DLQ relay looks for dead letters to publish
	// (an index-only look at an almost always empty partial index).
	DefaultDLQInterval       = time.Second
	maxEnqueueFailureBackoff = 5 * time.Second
)

// EnqueuerConfig configures an Enqueuer.
type EnqueuerConfig struct {
	Store  store.Store // required
	Client *sqs.Client // required
	Queues *Queues     // required: one loop per Rota queue it holds

	// BatchSize is the most tasks one round sends (one transaction; 10 per
	// SendMessageBatch). A full round is followed by more at once (RoundsPerQueue).
	// Default: DefaultEnqueueBatch; at most store.MaxListLimit.
	BatchSize int
	// Interval is the wait after a round that was not full, unless an insert of a due
	// task wakes the queue first. Default: DefaultEnqueueInterval.
	Interval time.Duration
	// RedeliverAfter is how long after a send an ENQUEUED task's message is presumed
	// lost and sent again. Default: DefaultRedeliverAfter (see there for why).
	RedeliverAfter time.Duration
	// RoundsPerQueue is how many rounds of one Rota queue may run at once while there is
	// a backlog (each holds a database connection). Default: DefaultRoundsPerQueue.
	RoundsPerQueue int
	// SendConcurrency is how many SendMessageBatch calls of one round run at once.
	// Default: DefaultSendConcurrency.
	SendConcurrency int
	// SendTimeout bounds one SendMessageBatch call (the round's row locks are held
	// meanwhile). Default: DefaultSendTimeout.
	SendTimeout time.Duration
	// DLQInterval is the pause between rounds of the DLQ relay, which publishes the
	// dead-task events of the queues this enqueuer serves (dlq.go). Each publish call is
	// bounded by SendTimeout. Default: DefaultDLQInterval.
	DLQInterval time.Duration
	// LossCheckInterval is how often the loss watch (losswatch.go) compares each SQS
	// queue with the database, to send at once the tasks of a queue that lost its
	// messages (purged, re-created, failed over). Negative turns it off (then only the
	// redelivery timeout heals such a loss). Default: DefaultLossCheckInterval.
	LossCheckInterval time.Duration
	// NoDLQ turns the DLQ relay off: dead letters are still recorded, and stay awaiting
	// publication for a relay that has it on.
	NoDLQ bool

	Metrics *Metrics     // default: NewMetrics(nil)
	Logger  *slog.Logger // default: slog.Default()
}

// Enqueuer is the DueTaskEnqueuer: for each Rota queue it repeatedly hands the tasks that
// need an SQS message (due PENDING tasks, due retries, messages presumed lost) to
// Store.EnqueueDue, which locks them with SKIP LOCKED while their ids are sent and marks
// the sent ones ENQUEUED. Any number of enqueuers may run at once: the locks keep them
// from sending one task twice in a round, and a failed send leaves the task eligible.
type Enqueuer struct {
	cfg     EnqueuerConfig
	id      string // this enqueuer's name in rota.sqs_enqueuers (served.go)
	senders map[string]*sender
	dlq     *dlqRelay  // nil with NoDLQ
	losses  *lossWatch // nil with a negative LossCheckInterval
	log     *slog.Logger
}

// NewEnqueuer checks cfg and fills its defaults.
func NewEnqueuer(cfg EnqueuerConfig) (*Enqueuer, error) {
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultEnqueueBatch)
	cfg.Interval = cmp.Or(cfg.Interval, DefaultEnqueueInterval)
	cfg.RedeliverAfter = cmp.Or(cfg.RedeliverAfter, DefaultRedeliverAfter)
	cfg.RoundsPerQueue = cmp.Or(cfg.RoundsPerQueue, DefaultRoundsPerQueue)
	cfg.SendConcurrency = cmp.Or(cfg.SendConcurrency, DefaultSendConcurrency)
	cfg.SendTimeout = cmp.Or(cfg.SendTimeout, DefaultSendTimeout)
	cfg.DLQInterval = cmp.Or(cfg.DLQInterval, DefaultDLQInterval)
	cfg.LossCheckInterval = cmp.Or(cfg.LossCheckInterval, DefaultLossCheckInterval)
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())

	// Every problem at once, not one per attempt.
	var problems validate.Problems
	check := problems.Check
	check(cfg.Store != nil, "Store is required")
	check(cfg.Client != nil, "Client is required")
	check(cfg.Queues != nil, "Queues is required")
	check(cfg.BatchSize >= 1 && cfg.BatchSize <= store.MaxListLimit, "BatchSize must be between 1 and %d, got %d", store.MaxListLimit, cfg.BatchSize)
	check(cfg.Interval > 0, "Interval must be positive, got %s", cfg.Interval)
	check(cfg.RedeliverAfter > 0, "RedeliverAfter must be positive, got %s", cfg.RedeliverAfter)
	check(cfg.RoundsPerQueue > 0, "RoundsPerQueue must be positive, got %d", cfg.RoundsPerQueue)
	check(cfg.SendConcurrency > 0, "SendConcurrency must be positive, got %d", cfg.SendConcurrency)
	check(cfg.SendTimeout > 0, "SendTimeout must be positive, got %s", cfg.SendTimeout)
	check(cfg.DLQInterval > 0, "DLQInterval must be positive, got %s", cfg.DLQInterval)
	if err := problems.Err(); err != nil {
		return nil, fmt.Errorf("%w: enqueuer config: %w", store.ErrInvalid, err)
	}

	e := &Enqueuer{cfg: cfg, id: uuid.NewString(), senders: map[string]*sender{}, log: cfg.Logger.With("component", "sqs-enqueuer")}
	if !cfg.NoDLQ {
		e.dlq = &dlqRelay{store: cfg.Store, client: cfg.Client, queue: cfg.Queues.dlq,
			rotaQueues: cfg.Queues.RotaQueues(), interval: cfg.DLQInterval, timeout: cfg.SendTimeout,
			metrics: cfg.Metrics, log: cfg.Logger.With("component", "sqs-dlq-relay")}
	}
	if cfg.LossCheckInterval > 0 {
		e.losses = newLossWatch(e, cfg.LossCheckInterval)
	}
	for _, rq := range cfg.Queues.RotaQueues() {
		q, _ := cfg.Queues.forRota(rq)
		e.senders[rq] = &sender{client: cfg.Client, rotaQueue: rq, queue: q,
			concurrency: cfg.SendConcurrency, timeout: cfg.SendTimeout, metrics: cfg.Metrics}
	}
	return e, nil
}

// Round runs one EnqueueDue for Rota queue rq and returns how many tasks it marked
// ENQUEUED. An error may come with a count: the ids that were sent are marked anyway.
func (e *Enqueuer) Round(ctx context.Context, rq string) (int, error) {
	s := e.senders[rq]
	if s == nil {
		return 0, fmt.Errorf("%w: the enqueuer does not serve Rota queue %q", store.ErrInvalid, rq)
	}
	return e.cfg.Store.EnqueueDue(ctx, store.EnqueueParams{
		Queue: rq, Limit: e.cfg.BatchSize, RedeliverAfter: e.cfg.RedeliverAfter,
	}, s.send)
}

// Run sends due tasks until ctx ends: one loop per Rota queue, woken early by inserts,
// and the DLQ relay unless NoDLQ. It first marks its queues as served (served.go), and
// keeps trying until it can: sending into a queue not marked served would let a reaper
// take the sent tasks back to PENDING.
func (e *Enqueuer) Run(ctx context.Context) {
	for failures := 1; ; failures++ {
		err := e.markServed(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		pause := failureBackoff(e.cfg.Interval, failures)
		e.log.Warn("could not mark this enqueuer's queues as served; retrying", "retry_in", pause.String(), "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
	wake := make(map[string]chan struct{}, len(e.senders))
	for rq := range e.senders {
		wake[rq] = make(chan struct{}, 1)
	}
	var wg sync.WaitGroup
	wg.Go(func() { e.keepServed(ctx) })
	wg.Go(func() { e.listen(ctx, wake) })
	if e.dlq != nil {
		wg.Go(func() { e.dlq.run(ctx) })
	}
	if e.losses != nil {
		wg.Go(func() { e.losses.run(ctx) })
	}
	for rq, ch := range wake {
		wg.Go(func() { e.runQueue(ctx, rq, ch) })
	}
	e.log.Info("sqs enqueuer started", "queues", e.cfg.Queues.RotaQueues(), "interval", e.cfg.Interval,
		"batch", e.cfg.BatchSize, "rounds_per_queue", e.cfg.RoundsPerQueue, "redeliver_after", e.cfg.RedeliverAfter,
		"loss_check_interval", e.cfg.LossCheckInterval)
	wg.Wait()
}

// runQueue is one Rota queue's loop. Idle, it waits for the interval or a wake-up, then
// runs one round. A full round means a backlog: more rounds start at once, up to
// RoundsPerQueue in flight, each started as soon as another comes back full, so the SQL
// of one round overlaps the SQS sends of the others. A round that is not full ends the
// backlog; failures make the idle wait grow.
func (e *Enqueuer) runQueue(ctx context.Context, rq string, wake <-chan struct{}) {
	type result struct {
		n   int
		err error
	}
	done := make(chan result, e.cfg.RoundsPerQueue)
	inFlight := 0
	start := func() {
		inFlight++
		warm.Go(func() { // a kept goroutine: its stack has grown for pgx and the SDK already
			n, err := e.Round(ctx, rq)
			done <- result{n, err}
		})
	}
	failures := 0
	backlog := false
	pause := loop.Jitter(e.cfg.Interval)
	start() // a round at once on start
	for {
		if ctx.Err() == nil {
			for backlog && inFlight < e.cfg.RoundsPerQueue {
				start()
			}
		}
		if inFlight == 0 {
			if ctx.Err() != nil {
				return
			}
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
			case <-t.C:
			case <-wake:
			}
			t.Stop()
			if ctx.Err() == nil {
				start()
			}
			continue
		}
		r := <-done
		inFlight--
		switch {
		case ctx.Err() != nil:
			backlog = false // stopping: only wait for the rounds in flight
		case r.err != nil:
			failures++
			backlog = false
			pause = failureBackoff(e.cfg.Interval, failures)
			e.log.Warn("enqueue round failed; unsent tasks stay eligible", "queue", rq,
				"sent", r.n, "failures", failures, "retry_in", pause.Round(time.Millisecond).String(), "error", r.err)
		default:
			if failures > 0 {
				e.log.Info("enqueue rounds work again", "queue", rq, "after_failures", failures)
			}
			failures = 0
			backlog = r.n >= e.cfg.BatchSize
			pause = loop.Jitter(e.cfg.Interval)
		}
	}
}

// listen turns Store.WaitForTasks wake-ups into per-queue wake-ups. They only make
// sending faster: the interval finds everything anyway, so failures are logged and
// retried after a pause.
func (e *Enqueuer) listen(ctx context.Context, wake map[string]chan struct{}) {
	failures := 0
	for ctx.Err() == nil {
		ch, err := e.cfg.Store.WaitForTasks(ctx)
		if err == nil {
			for rq := range ch {
				failures = 0
				if w, ok := wake[rq]; ok {
					select {
					case w <- struct{}{}:
					default: // a wake-up is already pending
					}
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		pause := failureBackoff(time.Second, failures)
		e.log.Warn("task wake-ups unavailable; relying on the interval", "failures", failures, "error", err)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// failureBackoff doubles base per consecutive failure, up to 5 s, with jitter.
func failureBackoff(base time.Duration, failures int) time.Duration {
	d := maxEnqueueFailureBackoff
	if failures < 16 {
		d = min(d, base<<failures)
	}
	return d/2 + rand.N(d/2+1)
}
