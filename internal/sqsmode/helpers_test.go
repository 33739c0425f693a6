package sqsmode_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/handlers"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/history"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
	"github.com/rotaqueue/rota/internal/testutil/poll"
	"github.com/rotaqueue/rota/internal/testutil/sqstest"
	"github.com/rotaqueue/rota/internal/testutil/testio"
)

// waitTimeout bounds every wait on a condition: generous, because the machine running
// the tests may be busy; nothing here asserts on speed.
const waitTimeout = 90 * time.Second

// sqsEnv is one test's PostgreSQL database and fauxqs server.
type sqsEnv struct {
	t      *testing.T
	pool   *pgxpool.Pool
	store  *postgres.Store
	srv    *sqstest.Server
	client *sqs.Client

	workerStops []func()          // of the workers started with runWorker
	sources     []*sqsmode.Source // every source made, closed after the workers stop
}

func newSQSEnv(t *testing.T) *sqsEnv {
	t.Helper()
	pool := pgtest.NewPool(t)
	srv := sqstest.Start(t)
	return &sqsEnv{t: t, pool: pool, store: postgres.New(pool), srv: srv, client: srv.Client(t)}
}

// queues returns resolved Queues for rotaQueues ("default" when none), with the SQS
// queue "rota" for the default queue and the DLQ "rota-dlq".
func (e *sqsEnv) queues(create bool, rotaQueues ...string) *sqsmode.Queues {
	e.t.Helper()
	if len(rotaQueues) == 0 {
		rotaQueues = []string{store.DefaultQueue}
	}
	qs, err := sqsmode.NewQueues(e.client, sqsmode.QueueConfig{Queue: "rota", DLQ: "rota-dlq", Create: create}, rotaQueues)
	if err != nil {
		e.t.Fatalf("NewQueues: %v", err)
	}
	if err := qs.Resolve(context.Background(), true); err != nil {
		e.t.Fatalf("Resolve: %v", err)
	}
	return qs
}

// url is the URL of an existing SQS queue.
func (e *sqsEnv) url(name string) string {
	e.t.Helper()
	out, err := e.client.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		e.t.Fatalf("GetQueueUrl %q: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

func (e *sqsEnv) enqueuer(qs *sqsmode.Queues, m *sqsmode.Metrics, tweak func(*sqsmode.EnqueuerConfig)) *sqsmode.Enqueuer {
	e.t.Helper()
	cfg := sqsmode.EnqueuerConfig{Store: e.store, Client: e.client, Queues: qs, Interval: 20 * time.Millisecond,
		RedeliverAfter: time.Hour, DLQInterval: 50 * time.Millisecond, Metrics: m, Logger: testLogger(e.t)}
	if tweak != nil {
		tweak(&cfg)
	}
	enq, err := sqsmode.NewEnqueuer(cfg)
	if err != nil {
		e.t.Fatalf("NewEnqueuer: %v", err)
	}
	return enq
}

// testLease is the workers' lease, and so the visibility timeout of received messages.
const testLease = 5 * time.Second

func (e *sqsEnv) source(qs *sqsmode.Queues, workerID string, m *sqsmode.Metrics, tweak func(*sqsmode.SourceConfig)) *sqsmode.Source {
	e.t.Helper()
	cfg := sqsmode.SourceConfig{Store: e.store, Client: e.client, Queues: qs, WorkerID: workerID,
		LeaseDuration: testLease, WaitSeconds: 1, RetryDelay: time.Second, Metrics: m, Logger: testLogger(e.t)}
	if tweak != nil {
		tweak(&cfg)
	}
	src, err := sqsmode.NewSource(cfg)
	if err != nil {
		e.t.Fatalf("NewSource: %v", err)
	}
	e.sources = append(e.sources, src)
	e.t.Cleanup(src.Close) // after the workers' cleanups: they were registered later
	return src
}

// worker builds a runtime worker in SQS mode with the built-in handlers and src, serving
// queues ("default" when none); tweak, when set, adjusts its config.
func (e *sqsEnv) worker(src *sqsmode.Source, tweak func(*runtime.Config), queues ...string) *runtime.Worker {
	e.t.Helper()
	mux := runtime.NewMux()
	handlers.Register(mux, handlers.Config{})
	limits := map[string]int{}
	for _, q := range queues {
		limits[q] = 0
	}
	cfg := runtime.Config{
		Store: e.store, Mux: mux, WorkerID: src.WorkerID(), Queues: limits, Concurrency: 20,
		FetchBatch: 10, LeaseDuration: src.LeaseDuration(), HeartbeatInterval: 500 * time.Millisecond,
		BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		ReapInterval: 500 * time.Millisecond, ShutdownGrace: 5 * time.Second,
		ClaimFrom: store.StatusEnqueued, Source: src, Logger: testLogger(e.t),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	w, err := runtime.NewWorker(cfg)
	if err != nil {
		e.t.Fatalf("NewWorker: %v", err)
	}
	return w
}

// run runs fn in the background until the test ends (or the returned stop is called),
// and checks it returned.
func run(t *testing.T, fn func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); fn(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(waitTimeout):
				t.Errorf("a background loop did not stop after its context ended")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// runWorker runs w until the test ends (or quiesce), failing the test if Run returns
// an error.
func (e *sqsEnv) runWorker(w *runtime.Worker) {
	stop := run(e.t, func(ctx context.Context) {
		if err := w.Run(ctx); err != nil {
			e.t.Errorf("worker %s: Run: %v", w.ID(), err)
		}
	})
	e.workerStops = append(e.workerStops, stop)
}

// quiesce stops the workers and waits for their sources' background SQS calls, so that
// the metrics are final.
func (e *sqsEnv) quiesce() {
	for _, stop := range e.workerStops {
		stop()
	}
	for _, src := range e.sources {
		src.Close()
	}
}

func (e *sqsEnv) create(params ...store.CreateParams) []uuid.UUID {
	e.t.Helper()
	res, err := e.store.CreateTasks(context.Background(), params)
	if err != nil {
		e.t.Fatalf("CreateTasks: %v", err)
	}
	ids := make([]uuid.UUID, len(res))
	for i, r := range res {
		ids[i] = r.Task.ID
	}
	return ids
}

func (e *sqsEnv) createN(n int, p store.CreateParams) []uuid.UUID {
	e.t.Helper()
	params := make([]store.CreateParams, n)
	for i := range params {
		params[i] = p
	}
	return e.create(params...)
}

func (e *sqsEnv) get(id uuid.UUID) *store.Task {
	e.t.Helper()
	task, err := e.store.GetTask(context.Background(), id)
	if err != nil {
		e.t.Fatalf("GetTask %s: %v", id, err)
	}
	return task
}

// waitAll waits until every task has one of statuses.
func (e *sqsEnv) waitAll(ids []uuid.UUID, statuses ...store.Status) {
	e.t.Helper()
	want := map[store.Status]bool{}
	for _, s := range statuses {
		want[s] = true
	}
	i := 0
	deadline := time.Now().Add(waitTimeout)
	for ; i < len(ids); i++ {
		for {
			task := e.get(ids[i])
			if want[task.Status] {
				break
			}
			if time.Now().After(deadline) {
				for _, name := range []string{"rota", "rota-emails"} {
					if out, err := e.client.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)}); err == nil {
						e.t.Logf("SQS queue %s: %+v", name, e.srv.CountMessages(e.t, aws.ToString(out.QueueUrl)))
					}
				}
				e.t.Fatalf("timed out waiting for %d tasks to be %v: task %d of them, %s, is %s (attempts %d, enqueued_at %v, scheduled_for %v, worker %q, lease until %v)",
					len(ids), statuses, i, task.ID, task.Status, task.AttemptCount, task.EnqueuedAt, task.ScheduledFor, task.WorkerID, task.LeaseExpiresAt)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// checkSucceededOnce fails the test unless each task is SUCCEEDED with exactly one
// SUCCEEDED attempt and a consistent attempt history (history.Assert).
func (e *sqsEnv) checkSucceededOnce(ids []uuid.UUID) {
	e.t.Helper()
	history.Assert(e.t, e.pool, history.All(store.StatusSucceeded, ids))
}

// sendIDs sends raw message bodies to the SQS queue at url, as a misbehaving producer or
// SQS's own duplication would.
func (e *sqsEnv) sendBodies(url string, bodies ...string) {
	e.t.Helper()
	for _, b := range bodies {
		if _, err := e.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b)}); err != nil {
			e.t.Fatalf("SendMessage: %v", err)
		}
	}
}

// waitEmpty waits until the SQS queue at url holds no message at all (none visible, in
// flight or delayed): every message was deleted.
func (e *sqsEnv) waitEmpty(url string) {
	e.t.Helper()
	waitFor(e.t, "SQS queue "+url+" to be empty", func() bool { return e.srv.CountMessages(e.t, url).Total() == 0 })
}

// receiveAll receives every visible message of the queue at url (deleting them) and
// returns their bodies.
func (e *sqsEnv) receiveAll(url string) []string {
	e.t.Helper()
	var bodies []string
	for {
		out, err := e.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 0, VisibilityTimeout: 60})
		if err != nil {
			e.t.Fatalf("ReceiveMessage: %v", err)
		}
		if len(out.Messages) == 0 {
			return bodies
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := e.client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				e.t.Fatalf("DeleteMessage: %v", err)
			}
		}
	}
}

// waitFor polls cond until it holds or waitTimeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, waitTimeout, 20*time.Millisecond, cond)
}

// testLogger logs warnings and errors into the test's output until the test ends.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testio.TestOutput(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// idStrings is ids as message bodies.
func idStrings(ids []uuid.UUID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}
