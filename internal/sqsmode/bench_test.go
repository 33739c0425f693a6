package sqsmode_test

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
	"github.com/rotaqueue/rota/internal/testutil/sqstest"
)

// benchWorkers is how many SQS workers drain the backlog; benchClients is how many
// senders and receivers MeasureCeiling runs (as rota bench's ceiling does).
const (
	benchWorkers = 4
	benchClients = 4
)

// drainSetup is one sub-benchmark of BenchmarkSQSModeDrain: zero fields are the defaults.
type drainSetup struct {
	name                          string
	roundsPerQueue                int // the Enqueuer's RoundsPerQueue
	fetchLoops                    int // each worker's FetchLoops
	fetchBatch                    int // each worker's FetchBatch (default: sqsmode.FetchBatch)
	enqueueBatch, sendConcurrency int // the Enqueuer's BatchSize and SendConcurrency
	// maxAhead > 0 holds each enqueue round while more than this many sent messages are
	// not yet received: a benchmark-only bound on what fauxqs holds, to measure what
	// the enqueuer's lead costs it (not a setting of the Enqueuer).
	maxAhead int
}

// BenchmarkSQSModeDrain measures SQS mode end to end: b.N due noop tasks in PostgreSQL
// are sent by one Enqueuer and drained by benchWorkers runtime workers with SQS Sources,
// each with its own client as `rota serve/worker --mode sqs` have, until every task is
// SUCCEEDED in the database and every message is deleted. Then, on the same fauxqs, it
// measures the raw ceiling (sqstest.MeasureCeiling: b.N messages sent, received and
// deleted in batches of 10 with nothing else in the way). Reported: tasks/s,
// ceiling_msgs/s and their ratio (ns/op is per task), and per task the SQS calls and
// claim statements of the drain, and the CPU per task of the drain (this process,
// PostgreSQL's backends of the test database, fauxqs: task_*_us) against the ceiling's
// CPU per message (ceil_msg_*_us). The sub-benchmarks run the defaults and, for
// comparison in the same run, one enqueue round at a time per queue (as before
// RoundsPerQueue), a single fetch loop per worker, fetches of one receive (10
// messages, as before sqsmode.FetchBatch) and of 40 (its value before session 11), the
// enqueuer's rounds of 100 sent 4 calls at once (the defaults before session 7), and
// enqueue rounds held while 2,000 sent messages are unreceived (maxAhead).
//
//	go test -run '^$' -bench SQSModeDrain -benchtime 10000x -count 3 ./internal/sqsmode/
func BenchmarkSQSModeDrain(b *testing.B) {
	for _, setup := range []drainSetup{
		{name: "defaults"},
		{name: "rounds_per_queue=1", roundsPerQueue: 1},
		{name: "fetch_loops=1", fetchLoops: 1},
		{name: "fetch_batch=10", fetchBatch: 10},
		{name: "fetch_batch=40", fetchBatch: 40},
		{name: "enqueue_batch=100,send_concurrency=4", enqueueBatch: 100, sendConcurrency: 4},
		{name: "max_ahead=2000", maxAhead: 2000},
	} {
		b.Run(setup.name, func(b *testing.B) { benchmarkSQSModeDrain(b, setup) })
	}
}

func benchmarkSQSModeDrain(b *testing.B, setup drainSetup) {
	pool := pgtest.NewPoolConns(b, 16)
	pg := postgres.New(pool)
	b.Cleanup(pg.Close)
	st := &countingStore{Store: pg}
	srv := sqstest.Start(b)
	calls := &callCounter{}
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	queues, err := sqsmode.NewQueues(benchClient(b, srv), sqsmode.QueueConfig{Queue: "bench", DLQ: "bench-dlq", Create: true},
		[]string{store.DefaultQueue})
	if err != nil {
		b.Fatal(err)
	}
	if err := queues.Resolve(ctx, true); err != nil {
		b.Fatal(err)
	}
	insertNoops(b, pool, st, b.N)

	// The workers run first, long polling an empty queue; the clock starts with the
	// enqueuer.
	var ran atomic.Int64
	metrics := sqsmode.NewMetrics(nil)
	runCtx, stop := context.WithCancel(ctx)
	var fleet benchFleet
	for range benchWorkers {
		src, err := sqsmode.NewSource(sqsmode.SourceConfig{Store: st, Client: calls.wrap(benchClient(b, srv)),
			Queues: queues, Metrics: metrics, Logger: logger})
		if err != nil {
			b.Fatal(err)
		}
		fleet.start(b, runCtx, src, runtime.Config{Store: st, FetchLoops: setup.fetchLoops, FetchBatch: setup.fetchBatch,
			Logger: logger}, &ran)
	}
	var enqStore store.Store = st
	if setup.maxAhead > 0 {
		enqStore = &aheadBound{Store: st, metrics: metrics, max: int64(setup.maxAhead)}
	}
	enq, err := sqsmode.NewEnqueuer(sqsmode.EnqueuerConfig{Store: enqStore, Client: calls.wrap(benchClient(b, srv)),
		Queues: queues, RoundsPerQueue: setup.roundsPerQueue, BatchSize: setup.enqueueBatch,
		SendConcurrency: setup.sendConcurrency, Metrics: metrics, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	meter := startCPUMeter(b, pool)
	stopProfile := profileDrain(b)
	statements := startStatementMeter(b, pool)
	start := time.Now()
	go enq.Run(runCtx)
	waitDrained(b, pool, metrics, &ran, b.N)
	elapsed := time.Since(start)
	drainCPU := meter.stop(b)
	stopProfile()
	statements.stop(b, b.N)
	b.StopTimer()

	stop()
	fleet.wait(b)
	if s := metrics.Stats(); s.Received != int64(b.N) || s.DeletedDuplicate+s.DeletedPoison+s.DeletedMisrouted != 0 {
		b.Errorf("%d messages received for %d tasks (%+v): the drain should see each task's message once", s.Received, b.N, s)
	}
	n := float64(b.N)
	b.ReportMetric(float64(calls.total())/n, "sqs_calls/task")
	b.ReportMetric(float64(st.claims.Load())/n, "claims/task")
	st.reportEnqueueRounds(b)
	st.reportStatementTimes(b)

	ceilingURL := srv.CreateQueue(b, "ceiling")
	ceilingClient := benchClient(b, srv)
	meter = startCPUMeter(b, nil)
	ceiling, err := sqstest.MeasureCeiling(ctx, ceilingClient, ceilingURL, b.N, benchClients)
	if err != nil {
		b.Fatal(err)
	}
	ceilingCPU := meter.stop(b)
	perSecond := n / elapsed.Seconds()
	b.ReportMetric(perSecond, "tasks/s")
	b.ReportMetric(ceiling, "ceiling_msgs/s")
	b.ReportMetric(perSecond/ceiling, "ratio")
	drainCPU.report(b, "task", b.N)
	ceilingCPU.report(b, "ceil_msg", b.N)
}

// benchClient is an SQS client for srv made as `rota serve` and `rota worker` make theirs
// (sqsmode.NewClient), so that the benchmarks measure its HTTP settings.
func benchClient(b *testing.B, srv *sqstest.Server) *sqs.Client {
	client, err := sqsmode.NewClient(context.Background(), sqsmode.ClientConfig{Endpoint: srv.Endpoint(),
		Region: sqstest.Region, Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// insertNoops inserts n due noop tasks and vacuums, so the drain starts from a settled
// table.
func insertNoops(b *testing.B, pool *pgxpool.Pool, st store.Store, n int) {
	ctx := context.Background()
	for left := n; left > 0; {
		params := make([]store.CreateParams, min(left, 5000))
		for i := range params {
			params[i] = store.CreateParams{Kind: "noop", ScheduledFor: time.Now().Add(-time.Second)}
		}
		if _, err := st.CreateTasks(ctx, params); err != nil {
			b.Fatal(err)
		}
		left -= len(params)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE rota.tasks`); err != nil {
		b.Fatal(err)
	}
}

// waitDrained waits until n handlers ran, all n tasks are SUCCEEDED in the database and
// n messages were deleted after their outcome committed: the end of the pipeline.
func waitDrained(b *testing.B, pool *pgxpool.Pool, metrics *sqsmode.Metrics, ran *atomic.Int64, n int) {
	deadline := time.Now().Add(10 * time.Minute)
	for ran.Load() < int64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d handlers ran", ran.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	for {
		var succeeded int
		if err := pool.QueryRow(context.Background(),
			`SELECT count(*) FROM rota.tasks WHERE status = 'SUCCEEDED'`).Scan(&succeeded); err != nil {
			b.Fatal(err)
		}
		deleted := metrics.Stats().DeletedSettled
		if succeeded == n && deleted >= int64(n) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d tasks succeeded, %d messages deleted", succeeded, n, deleted)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// benchFleet is a benchmark's SQS-mode workers: started one at a time, stopped together.
type benchFleet struct {
	done    []chan error
	sources []*sqsmode.Source
}

// start runs a worker on src until ctx ends. cfg brings the store and any tuning; start
// sets what SQS mode needs (src's worker id and lease, its batch unless cfg has one, ENQUEUED) and a noop
// handler that counts its runs in ran.
func (f *benchFleet) start(b *testing.B, ctx context.Context, src *sqsmode.Source, cfg runtime.Config, ran *atomic.Int64) {
	b.Helper()
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { ran.Add(1); return nil })
	cfg.Mux, cfg.Source, cfg.ClaimFrom = mux, src, store.StatusEnqueued
	cfg.WorkerID, cfg.LeaseDuration = src.WorkerID(), src.LeaseDuration()
	cfg.FetchBatch = cmp.Or(cfg.FetchBatch, sqsmode.FetchBatch)
	w, err := runtime.NewWorker(cfg)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	f.done = append(f.done, done)
	f.sources = append(f.sources, src)
}

// wait waits, once the workers' context ended, for each to return and for its source's
// last SQS calls.
func (f *benchFleet) wait(b *testing.B) {
	b.Helper()
	for _, done := range f.done {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	for _, src := range f.sources {
		src.Close()
	}
}

// aheadBound holds each enqueue round while more than max sent messages are not yet
// received (drainSetup.maxAhead).
type aheadBound struct {
	store.Store
	metrics *sqsmode.Metrics
	max     int64
}

func (a *aheadBound) EnqueueDue(ctx context.Context, p store.EnqueueParams,
	send func(context.Context, []uuid.UUID) ([]uuid.UUID, error)) (int, error) {
	for {
		s := a.metrics.Stats()
		if s.Sent-s.Received <= a.max || ctx.Err() != nil {
			return a.Store.EnqueueDue(ctx, p, send)
		}
		time.Sleep(time.Millisecond)
	}
}
