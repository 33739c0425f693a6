package sqsmode_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

// opCounter counts a client's SQS calls by operation, and the entries of its
// ChangeMessageVisibilityBatch calls.
type opCounter struct {
	mu         sync.Mutex
	calls      map[string]int
	cmvEntries int
}

func (c *opCounter) wrap(client *sqs.Client) *sqs.Client {
	c.calls = map[string]int{}
	return sqs.New(client.Options(), func(o *sqs.Options) {
		o.APIOptions = append(slices.Clone(o.APIOptions), func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("rota-test-ops",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
					middleware.InitializeOutput, middleware.Metadata, error) {
					c.mu.Lock()
					c.calls[middleware.GetOperationName(ctx)]++
					if batch, ok := in.Parameters.(*sqs.ChangeMessageVisibilityBatchInput); ok {
						c.cmvEntries += len(batch.Entries)
					}
					c.mu.Unlock()
					return next.HandleInitialize(ctx, in)
				}), middleware.After)
		})
	})
}

func (c *opCounter) snapshot() (calls map[string]int, cmvEntries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out, c.cmvEntries
}

// The heartbeats of a worker's running tasks extend their messages' visibility in batch
// calls: fewer calls than extensions, none of them one message at a time. Each task still
// runs once on two competing workers, its message received once: the extensions kept it
// hidden past its 2 s lease.
func TestExtendsOfRunningTasksGoOutInBatches(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	m := sqsmode.NewMetrics(nil)
	run(t, e.enqueuer(qs, m, nil).Run)
	var ops opCounter
	client := ops.wrap(e.client)
	for i := range 2 {
		src := e.source(qs, "worker-"+string(rune('a'+i)), m, func(c *sqsmode.SourceConfig) {
			c.LeaseDuration, c.Client = 2*time.Second, client
		})
		e.runWorker(e.worker(src, func(c *runtime.Config) { c.HeartbeatInterval = 200 * time.Millisecond }))
	}
	params := make([]store.CreateParams, 20)
	for i := range params {
		params[i] = store.CreateParams{Kind: "sleep", Payload: json.RawMessage(`{"ms": 3000}`)}
	}
	ids := e.create(params...)
	e.waitAll(ids, store.StatusSucceeded)
	e.checkSucceededOnce(ids)
	e.waitEmpty(e.url("rota"))
	e.quiesce()

	calls, entries := ops.snapshot()
	if calls["ChangeMessageVisibility"] != 0 {
		t.Errorf("%d single ChangeMessageVisibility calls, want none (all batched)", calls["ChangeMessageVisibility"])
	}
	batches := calls["ChangeMessageVisibilityBatch"]
	// 20 tasks of 3 s beaten every 200 ms: well over a hundred extensions.
	if entries < 100 || batches >= entries/2 {
		t.Errorf("%d extensions in %d ChangeMessageVisibilityBatch calls: want over 100, at least 2 a call", entries, batches)
	}
	if st := m.Stats(); st.Received != int64(len(ids)) || st.DeletedSettled != int64(len(ids)) {
		t.Errorf("stats %+v: want each message received once and deleted as settled", st)
	}
	t.Logf("%d extensions in %d batch calls", entries, batches)
}

// sentNoops creates n noop tasks, has an enqueuer send them to SQS and stop, and waits
// until every message is visible in the default queue's SQS queue.
func sentNoops(t *testing.T, e *sqsEnv, qs *sqsmode.Queues, m *sqsmode.Metrics, n int) []uuid.UUID {
	t.Helper()
	stopEnqueuer := run(t, e.enqueuer(qs, m, nil).Run)
	ids := e.create(slices.Repeat([]store.CreateParams{{Kind: "noop"}}, n)...)
	e.waitAll(ids, store.StatusEnqueued)
	stopEnqueuer()
	url := e.url("rota")
	poll.Until(t, "every message visible", waitTimeout, 10*time.Millisecond, func() bool { return e.srv.CountMessages(t, url).Visible == len(ids) })
	return ids
}

// Under a backlog one Fetch takes FetchBatch tasks, not one receive's 10: a full first
// receive is followed by concurrent short polls, and every id goes into one claim.
func TestFetchTakesABacklogFetchBatchAtATime(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	m := sqsmode.NewMetrics(nil)
	ids := sentNoops(t, e, qs, m, sqsmode.FetchBatch+5)

	st := &countingStore{Store: e.store}
	src := e.source(qs, "worker-a", m, func(c *sqsmode.SourceConfig) { c.Store = st })
	got, err := src.Fetch(context.Background(), store.DefaultQueue, sqsmode.FetchBatch)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != sqsmode.FetchBatch || st.claims.Load() != 1 {
		t.Errorf("one Fetch of %d over a backlog of %d: %d tasks in %d claims, want %d in 1",
			sqsmode.FetchBatch, len(ids), len(got), st.claims.Load(), sqsmode.FetchBatch)
	}
	for _, d := range got {
		if d.Task.Status != store.StatusProcessing || d.Task.WorkerID != "worker-a" {
			t.Errorf("task %s: %s by %q, want PROCESSING by worker-a", d.Task.ID, d.Task.Status, d.Task.WorkerID)
		}
	}
}

// A Fetch over a shallow queue stops receiving after the first wave of short polls that
// comes back short: 25 visible messages cost the full receive and one wave of 3, not
// the 9 short polls that a FetchBatch of 100 received at once (SQS calls that bring
// nothing cost as much as full ones).
func TestFetchOfAShallowQueueStopsAtAShortWave(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	m := sqsmode.NewMetrics(nil)
	ids := sentNoops(t, e, qs, m, 25)

	calls := &callCounter{}
	src := e.source(qs, "worker-a", m, func(c *sqsmode.SourceConfig) { c.Client = calls.wrap(c.Client) })
	got, err := src.Fetch(context.Background(), store.DefaultQueue, sqsmode.FetchBatch)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ids) || calls.total() != 4 {
		t.Errorf("one Fetch of %d over %d messages: %d tasks in %d receives, want %d in 4",
			sqsmode.FetchBatch, len(ids), len(got), calls.total(), len(ids))
	}
}
