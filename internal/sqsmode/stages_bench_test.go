package sqsmode_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
	"github.com/rotaqueue/rota/internal/testutil/sqstest"
)

// countingStore counts and times the store calls of the SQS path, so that the stage
// benchmarks can say where a round's time goes.
type countingStore struct {
	store.Store
	rounds, roundNanos, sendNanos atomic.Int64
	claims, commits               atomic.Int64
	claimNanos, commitNanos       atomic.Int64
}

func (s *countingStore) EnqueueDue(ctx context.Context, p store.EnqueueParams,
	send func(context.Context, []uuid.UUID) ([]uuid.UUID, error)) (int, error) {
	start := time.Now()
	timed := func(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
		sendStart := time.Now()
		defer func() { s.sendNanos.Add(int64(time.Since(sendStart))) }()
		return send(ctx, ids)
	}
	n, err := s.Store.EnqueueDue(ctx, p, timed)
	if n > 0 {
		s.rounds.Add(1)
		s.roundNanos.Add(int64(time.Since(start)))
	}
	return n, err
}

func (s *countingStore) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
	s.claims.Add(1)
	defer func(start time.Time) { s.claimNanos.Add(int64(time.Since(start))) }(time.Now())
	return s.Store.ClaimTasks(ctx, p)
}

func (s *countingStore) RecordOutcomes(ctx context.Context, o []store.Outcome) ([]store.OutcomeResult, error) {
	s.commits.Add(1)
	defer func(start time.Time) { s.commitNanos.Add(int64(time.Since(start))) }(time.Now())
	return s.Store.RecordOutcomes(ctx, o)
}

// reportStatementTimes reports the mean wall time of a claim and of an outcome batch:
// a worker's slot is held through both.
func (s *countingStore) reportStatementTimes(b *testing.B) {
	if n := s.claims.Load(); n > 0 {
		b.ReportMetric(float64(s.claimNanos.Load())/float64(n)/1e6, "claim_ms")
	}
	if n := s.commits.Load(); n > 0 {
		b.ReportMetric(float64(s.commitNanos.Load())/float64(n)/1e6, "outcomes_ms")
		b.ReportMetric(float64(b.N)/float64(n), "outcomes/batch")
	}
}

// callCounter counts the SQS calls of the clients it wraps.
type callCounter struct{ n atomic.Int64 }

// wrap returns a copy of client whose calls are counted.
func (c *callCounter) wrap(client *sqs.Client) *sqs.Client {
	return sqs.New(client.Options(), func(o *sqs.Options) {
		o.APIOptions = append(slices.Clone(o.APIOptions), func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("rota-bench-count",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
					middleware.InitializeOutput, middleware.Metadata, error) {
					c.n.Add(1)
					return next.HandleInitialize(ctx, in)
				}), middleware.After)
		})
	})
}

func (c *callCounter) total() int64 { return c.n.Load() }

// reportEnqueueRounds reports the average round and how much of it was the SQS send
// (the rest is SQL: the locking select, the mark, the commit).
func (s *countingStore) reportEnqueueRounds(b *testing.B) {
	rounds := s.rounds.Load()
	if rounds == 0 {
		return
	}
	b.ReportMetric(float64(rounds), "rounds")
	b.ReportMetric(float64(s.roundNanos.Load()-s.sendNanos.Load())/float64(rounds)/1e6, "sql_ms/round")
	b.ReportMetric(float64(s.sendNanos.Load())/float64(rounds)/1e6, "send_ms/round")
}

// benchEnv is a stage benchmark's database, fauxqs and resolved queues.
type benchEnv struct {
	pool    *pgxpool.Pool
	store   *countingStore
	srv     *sqstest.Server
	queues  *sqsmode.Queues
	metrics *sqsmode.Metrics
	logger  *slog.Logger
}

func newBenchEnv(b *testing.B) *benchEnv {
	pool := pgtest.NewPoolConns(b, 16)
	pg := postgres.New(pool)
	b.Cleanup(pg.Close)
	srv := sqstest.Start(b)
	client := srv.Client(b)
	queues, err := sqsmode.NewQueues(client, sqsmode.QueueConfig{Queue: "bench", DLQ: "bench-dlq", Create: true},
		[]string{store.DefaultQueue})
	if err != nil {
		b.Fatal(err)
	}
	if err := queues.Resolve(context.Background(), true); err != nil {
		b.Fatal(err)
	}
	return &benchEnv{pool: pool, store: &countingStore{Store: pg}, srv: srv, queues: queues,
		metrics: sqsmode.NewMetrics(nil), logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func (e *benchEnv) enqueuer(b *testing.B, rounds int) *sqsmode.Enqueuer {
	enq, err := sqsmode.NewEnqueuer(sqsmode.EnqueuerConfig{Store: e.store, Client: benchClient(b, e.srv), Queues: e.queues,
		RoundsPerQueue: rounds, Metrics: e.metrics, Logger: e.logger})
	if err != nil {
		b.Fatal(err)
	}
	return enq
}

// waitEnqueued waits until the enqueuer has sent n ids and committed their tasks
// ENQUEUED.
func (e *benchEnv) waitEnqueued(b *testing.B, n int) {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if e.metrics.Stats().Sent >= int64(n) {
			var enqueued int
			if err := e.pool.QueryRow(context.Background(),
				`SELECT count(*) FROM rota.tasks WHERE status = 'ENQUEUED'`).Scan(&enqueued); err != nil {
				b.Fatal(err)
			}
			if enqueued == n {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d ids sent", e.metrics.Stats().Sent, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkSQSEnqueuerAlone measures the enqueuer with no workers: b.N due tasks sent
// by one Enqueuer with the defaults. It reports tasks/s, and per round the SQL time and
// the SQS send time.
//
//	go test -run '^$' -bench SQSEnqueuerAlone -benchtime 10000x ./internal/sqsmode/
func BenchmarkSQSEnqueuerAlone(b *testing.B) {
	for _, rounds := range []int{1, sqsmode.DefaultRoundsPerQueue} {
		b.Run(fmt.Sprintf("rounds=%d", rounds), func(b *testing.B) { benchmarkSQSEnqueuerAlone(b, rounds) })
	}
}

func benchmarkSQSEnqueuerAlone(b *testing.B, rounds int) {
	e := newBenchEnv(b)
	insertNoops(b, e.pool, e.store, b.N)
	enq := e.enqueuer(b, rounds)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	b.ResetTimer()
	start := time.Now()
	go enq.Run(ctx)
	e.waitEnqueued(b, b.N)
	elapsed := time.Since(start)
	b.StopTimer()
	stop()

	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
	e.store.reportEnqueueRounds(b)
}

// BenchmarkSQSWorkersAlone measures the workers with no enqueuer in the way: b.N tasks
// are sent and marked ENQUEUED first (untimed), then benchWorkers workers drain them.
// It reports tasks/s, messages per receive, and claim statements and outcome writes per
// task.
//
//	go test -run '^$' -bench SQSWorkersAlone -benchtime 10000x ./internal/sqsmode/
func BenchmarkSQSWorkersAlone(b *testing.B) {
	e := newBenchEnv(b)
	insertNoops(b, e.pool, e.store, b.N)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	enqCtx, stopEnq := context.WithCancel(ctx)
	go e.enqueuer(b, 0).Run(enqCtx)
	e.waitEnqueued(b, b.N)
	stopEnq()

	var ran atomic.Int64
	obs := &fetchCounter{}
	var fleet benchFleet
	b.ResetTimer()
	start := time.Now()
	for range benchWorkers {
		src, err := sqsmode.NewSource(sqsmode.SourceConfig{Store: e.store, Client: benchClient(b, e.srv), Queues: e.queues,
			Metrics: e.metrics, Logger: e.logger})
		if err != nil {
			b.Fatal(err)
		}
		fleet.start(b, ctx, src, runtime.Config{Store: e.store, Observer: obs, Logger: e.logger}, &ran)
	}
	waitDrained(b, e.pool, e.metrics, &ran, b.N)
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	fleet.wait(b)

	n := float64(b.N)
	b.ReportMetric(n/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64(e.metrics.Stats().Received)/max(1, float64(obs.fetches.Load())), "msgs/receive")
	b.ReportMetric(float64(e.store.claims.Load())/n, "claims/task")
	b.ReportMetric(float64(e.store.commits.Load())/n, "commits/task")
}

// fetchCounter counts the workers' fetches (a receive each).
type fetchCounter struct {
	runtime.NopObserver
	fetches atomic.Int64
}

func (c *fetchCounter) ClaimDone(string, int, time.Duration, error) { c.fetches.Add(1) }
