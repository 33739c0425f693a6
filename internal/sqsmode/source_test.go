package sqsmode_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

func TestSQSModeRunsEveryTaskOnce(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true, "default", "emails")
	m := sqsmode.NewMetrics(nil)
	for range 2 {
		enq := e.enqueuer(qs, m, nil)
		run(t, enq.Run)
	}
	for i := range 3 {
		src := e.source(qs, "worker-"+string(rune('a'+i)), m, nil)
		e.runWorker(e.worker(src, nil, "default", "emails"))
	}

	ids := e.createN(300, store.CreateParams{Kind: "noop"})
	ids = append(ids, e.createN(30, store.CreateParams{Kind: "sleep", Payload: json.RawMessage(`{"ms": 20}`)})...)
	ids = append(ids, e.createN(30, store.CreateParams{Kind: "noop", Queue: "emails"})...)
	e.waitAll(ids, store.StatusSucceeded)
	e.checkSucceededOnce(ids)
	e.waitEmpty(e.url("rota"))
	e.waitEmpty(e.url("rota-emails"))
	e.quiesce()
	st := m.Stats()
	if st.Sent != int64(len(ids)) || st.DeletedSettled != int64(len(ids)) {
		t.Errorf("stats %+v: want %d sent and %d deleted as settled", st, len(ids), len(ids))
	}
}

func TestDuplicateMessagesAreDeletedAndEachTaskRunsOnce(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	m := sqsmode.NewMetrics(nil)
	ids := e.createN(60, store.CreateParams{Kind: "noop"})
	// Every id three more times, as SQS may deliver it: before the enqueuer's own send,
	// so some arrive while the task is still PENDING (and are claimed from it: the
	// enqueuer then has nothing to send for that task).
	url := e.url("rota")
	for range 3 {
		e.sendBodies(url, idStrings(ids)...)
	}
	run(t, e.enqueuer(qs, m, nil).Run)
	for i := range 3 {
		e.runWorker(e.worker(e.source(qs, "worker-"+string(rune('a'+i)), m, nil), nil))
	}

	e.waitAll(ids, store.StatusSucceeded)
	e.checkSucceededOnce(ids)
	e.waitEmpty(url)
	e.quiesce()
	st := m.Stats()
	// Every message is deleted once: one per task after its outcome, every other one
	// (the 3 extra per task and the enqueuer's sends that came too late) as a duplicate.
	if dups := 3*int64(len(ids)) + st.Sent - int64(len(ids)); st.DeletedSettled != int64(len(ids)) || st.DeletedDuplicate != dups {
		t.Errorf("stats %+v: want %d deleted as settled and %d as duplicates", st, len(ids), dups)
	}
}

// fetchUntil calls src.Fetch until cond holds, collecting what it delivers.
func fetchUntil(t *testing.T, src *sqsmode.Source, queue string, what string, cond func([]runtime.Delivery) bool) []runtime.Delivery {
	t.Helper()
	var got []runtime.Delivery
	waitFor(t, what, func() bool {
		d, err := src.Fetch(context.Background(), queue, 10)
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		got = append(got, d...)
		return cond(got)
	})
	return got
}

func TestPoisonUnknownAndMisroutedMessagesAreDeleted(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true, "default", "emails")
	m := sqsmode.NewMetrics(nil)
	src := e.source(qs, "worker-a", m, nil)
	email := e.create(store.CreateParams{Kind: "noop", Queue: "emails"})[0]
	url := e.url("rota")
	e.sendBodies(url, "hello", `{"task_id": "x"}`, strings.Repeat("z", 500), // not ids
		uuid.NewString(), // no such task
		email.String())   // a task of queue emails, in the default queue's SQS queue

	d := fetchUntil(t, src, "default", "five messages judged", func([]runtime.Delivery) bool {
		st := m.Stats()
		return st.DeletedPoison+st.DeletedDuplicate+st.DeletedMisrouted >= 5
	})
	e.quiesce()
	if len(d) != 0 {
		t.Errorf("Fetch delivered %d tasks, want none", len(d))
	}
	st := m.Stats()
	if st.Poison != 3 || st.DeletedPoison != 3 || st.DeletedDuplicate != 1 || st.DeletedMisrouted != 1 || st.Received != 5 {
		t.Errorf("stats %+v: want 5 received, 3 poison (deleted), 1 duplicate, 1 misrouted", st)
	}
	e.waitEmpty(url)
	if task := e.get(email); task.Status != store.StatusPending || task.AttemptCount != 0 {
		t.Errorf("the misrouted task is %s with %d attempts, want untouched", task.Status, task.AttemptCount)
	}
}

// retryIn makes task id PENDING, due in d, as a retry leaves it: sent, claimed, failed.
func (e *sqsEnv) retryIn(id uuid.UUID, d time.Duration) {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.store.EnqueueDue(ctx, store.EnqueueParams{Limit: 1000, RedeliverAfter: time.Hour},
		func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) { return ids, nil }); err != nil {
		e.t.Fatalf("EnqueueDue: %v", err)
	}
	claimed, err := e.store.ClaimTasks(ctx, store.ClaimParams{From: store.StatusEnqueued, TaskIDs: []uuid.UUID{id},
		WorkerID: "earlier-worker", LeaseDuration: time.Minute})
	if err != nil || len(claimed) != 1 {
		e.t.Fatalf("ClaimTasks = %v, %v; want the task", claimed, err)
	}
	res, err := e.store.RecordOutcomes(ctx, []store.Outcome{{TaskID: id, LeaseToken: claimed[0].LeaseToken,
		Kind: store.Retry, Error: "try later", RetryIn: d}})
	if err != nil || res[0].Err != nil || res[0].Status != store.StatusPending {
		e.t.Fatalf("RecordOutcomes = %+v, %v; want PENDING", res, err)
	}
}

func TestNotYetDueTaskMessagesAreHiddenUntilDue(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	m := sqsmode.NewMetrics(nil)
	src := e.source(qs, "worker-a", m, nil)
	url := e.url("rota")

	// Far off: a retry an hour away and a task scheduled for tomorrow.
	retry := e.create(store.CreateParams{Kind: "noop"})[0]
	e.retryIn(retry, time.Hour)
	tomorrow := e.create(store.CreateParams{Kind: "noop", ScheduledFor: time.Now().Add(24 * time.Hour)})[0]
	e.sendBodies(url, retry.String(), tomorrow.String())
	fetchUntil(t, src, "default", "two messages hidden", func([]runtime.Delivery) bool { return m.Stats().Deferred >= 2 })
	if c := e.srv.CountMessages(t, url); c.InFlight != 2 || c.Visible != 0 {
		t.Errorf("queue after hiding: %+v, want both messages in flight (hidden)", c)
	}
	if st := m.Stats(); st.Deferred != 2 || st.DeletedDuplicate != 0 {
		t.Errorf("stats %+v: want 2 deferred, none deleted", st)
	}

	// Soon: the hidden message comes back when the task is due, and is claimed.
	soon := e.create(store.CreateParams{Kind: "noop"})[0]
	e.retryIn(soon, 1500*time.Millisecond)
	e.sendBodies(url, soon.String())
	d := fetchUntil(t, src, "default", "the retry to be claimed once due", func(d []runtime.Delivery) bool { return len(d) > 0 })
	if len(d) != 1 || d[0].Task.ID != soon || d[0].Task.Status != store.StatusProcessing || d[0].Task.AttemptCount != 2 {
		t.Fatalf("delivered %+v, want the retry, PROCESSING, attempt 2", d)
	}
	if m.Stats().Deferred != 3 {
		t.Errorf("Deferred = %d, want 3 (the soon-due message was hidden first)", m.Stats().Deferred)
	}
}

func TestRetriesGoBackThroughSQS(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	m := sqsmode.NewMetrics(nil)
	run(t, e.enqueuer(qs, m, nil).Run)
	e.runWorker(e.worker(e.source(qs, "worker-a", m, nil), nil))

	ids := e.createN(5, store.CreateParams{Kind: "fail", Payload: json.RawMessage(`{"times": 2}`), MaxAttempts: 5})
	e.waitAll(ids, store.StatusSucceeded)
	e.checkSucceededOnce(ids)
	for _, id := range ids {
		attempts, err := e.store.ListAttempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var outcomes []store.AttemptOutcome
		for _, a := range attempts {
			outcomes = append(outcomes, a.Outcome)
		}
		want := []store.AttemptOutcome{store.OutcomeRetried, store.OutcomeRetried, store.OutcomeSucceeded}
		if !slices.Equal(outcomes, want) {
			t.Errorf("task %s attempts %v, want %v", id, outcomes, want)
		}
	}
	e.waitEmpty(e.url("rota"))
	e.quiesce()
	// Each attempt had its own message: the enqueuer sent each retry again.
	if st := m.Stats(); st.Sent != 15 || st.DeletedSettled != 15 {
		t.Errorf("stats %+v: want 15 sent and 15 deleted as settled (3 attempts x 5 tasks)", st)
	}
}

func TestDeadAndFailedTasksPublishDeadTaskEvents(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	m := sqsmode.NewMetrics(nil)
	run(t, e.enqueuer(qs, m, nil).Run)
	e.runWorker(e.worker(e.source(qs, "worker-a", m, nil), nil))

	dead := e.create(store.CreateParams{Kind: "fail", Payload: json.RawMessage(`{"times": 5}`), MaxAttempts: 2})[0]
	failed := e.create(store.CreateParams{Kind: "fail", Payload: json.RawMessage(`{"permanent": true}`), MaxAttempts: 3})[0]
	e.waitAll([]uuid.UUID{dead, failed}, store.StatusDead, store.StatusFailed)
	if s := e.get(dead).Status; s != store.StatusDead {
		t.Fatalf("exhausted task is %s, want DEAD", s)
	}
	if s := e.get(failed).Status; s != store.StatusFailed {
		t.Fatalf("permanently failed task is %s, want FAILED", s)
	}

	dlq := e.url("rota-dlq")
	waitFor(t, "two dead-task events", func() bool { return m.Stats().DLQPublished >= 2 })
	bodies := e.receiveAll(dlq)
	if len(bodies) != 2 {
		t.Fatalf("DLQ holds %d messages, want 2", len(bodies))
	}
	letters, _, err := e.store.ListDeadLetters(context.Background(), store.DeadLetterParams{})
	if err != nil {
		t.Fatal(err)
	}
	byTask := map[uuid.UUID]store.DeadLetter{}
	for _, l := range letters {
		byTask[l.TaskID] = l
	}
	for _, b := range bodies {
		var raw map[string]any
		if err := json.Unmarshal([]byte(b), &raw); err != nil {
			t.Fatalf("DLQ message %q is not JSON: %v", b, err)
		}
		for _, field := range []string{"task_id", "kind", "queue", "worker_id", "attempt_count", "max_attempts", "error", "reason", "timestamp"} {
			if _, ok := raw[field]; !ok {
				t.Errorf("DLQ message %s lacks %q", b, field)
			}
		}
		var ev sqsmode.DeadTaskEvent
		if err := json.Unmarshal([]byte(b), &ev); err != nil {
			t.Fatal(err)
		}
		ts, _ := raw["timestamp"].(string)
		if parsed, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.HasSuffix(ts, "Z") || parsed.IsZero() {
			t.Errorf("timestamp %q: want RFC 3339 in UTC", ts)
		}
		l, ok := byTask[ev.TaskID]
		if !ok {
			t.Errorf("event for task %s has no dead_letters row", ev.TaskID)
			continue
		}
		got := store.DeadLetter{TaskID: ev.TaskID, Kind: ev.Kind, Queue: ev.Queue, WorkerID: ev.WorkerID,
			AttemptCount: ev.AttemptCount, MaxAttempts: ev.MaxAttempts, Error: ev.Error, Reason: ev.Reason}
		want := l
		want.ID, want.CreatedAt, want.ReplayedAt = 0, time.Time{}, nil
		if got != want {
			t.Errorf("event %+v\n  does not match the dead_letters row %+v", got, want)
		}
	}
	if st := m.Stats(); st.DLQFailures != 0 {
		t.Errorf("DLQFailures = %d, want 0", st.DLQFailures)
	}
}

// TestMissingDLQKeepsEventsForLater: with the DLQ gone (and not to be created), the
// tasks still end and their messages are deleted; their dead-task events wait in the
// database, and once the DLQ is back every one of them is published, once.
func TestMissingDLQKeepsEventsForLater(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	e.srv.CreateQueue(t, "rota")
	e.srv.CreateQueue(t, "rota-dlq")
	qs := e.queues(false)
	if _, err := e.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(e.url("rota-dlq"))}); err != nil {
		t.Fatal(err)
	}
	m := sqsmode.NewMetrics(nil)
	run(t, e.enqueuer(qs, m, nil).Run)
	e.runWorker(e.worker(e.source(qs, "worker-a", m, nil), nil))

	ids := e.createN(3, store.CreateParams{Kind: "fail", Payload: json.RawMessage(`{"permanent": true}`)})
	e.waitAll(ids, store.StatusFailed)
	e.waitEmpty(e.url("rota"))
	waitFor(t, "failed DLQ publishes", func() bool { return m.Stats().DLQFailures >= 3 })
	if st := m.Stats(); st.DeletedSettled != 3 || st.DLQPublished != 0 {
		t.Errorf("stats %+v: want 3 deleted as settled and nothing published", st)
	}

	e.srv.CreateQueue(t, "rota-dlq") // the same name, so the same URL
	waitFor(t, "the waiting events published", func() bool { return m.Stats().DLQPublished >= 3 })
	bodies := e.receiveAll(e.url("rota-dlq"))
	got := map[uuid.UUID]int{}
	for _, b := range bodies {
		var ev sqsmode.DeadTaskEvent
		if err := json.Unmarshal([]byte(b), &ev); err != nil {
			t.Fatalf("DLQ message %q: %v", b, err)
		}
		got[ev.TaskID]++
	}
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("task %s: %d DLQ events, want 1 (all: %v)", id, got[id], got)
		}
	}
	if len(bodies) != len(ids) {
		t.Errorf("DLQ holds %d messages, want %d", len(bodies), len(ids))
	}
}

func TestExtendKeepsARunningTasksMessageHidden(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	m := sqsmode.NewMetrics(nil)
	run(t, e.enqueuer(qs, m, nil).Run)
	// Two workers; a 2 s lease, so the message would be visible again after 2 s without
	// the heartbeats' Extend, and the other worker would receive it.
	for i := range 2 {
		src := e.source(qs, "worker-"+string(rune('a'+i)), m, func(c *sqsmode.SourceConfig) { c.LeaseDuration = 2 * time.Second })
		e.runWorker(e.worker(src, func(c *runtime.Config) { c.HeartbeatInterval = 200 * time.Millisecond }))
	}
	id := e.create(store.CreateParams{Kind: "sleep", Payload: json.RawMessage(`{"ms": 5000}`)})[0]
	e.waitAll([]uuid.UUID{id}, store.StatusSucceeded)
	e.checkSucceededOnce([]uuid.UUID{id})
	e.waitEmpty(e.url("rota"))
	e.quiesce()
	if st := m.Stats(); st.Received != 1 || st.DeletedSettled != 1 {
		t.Errorf("stats %+v: want the one message received once and deleted as settled", st)
	}
}

// A handler cancelled because its worker shut down does not use up the task's attempts
// in SQS mode either: the task goes back to ENQUEUED (a new message) and another worker
// completes it.
func TestShutdownOnLastAttemptReleasesTheTask(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	m := sqsmode.NewMetrics(nil)
	run(t, e.enqueuer(qs, m, nil).Run)

	started := make(chan struct{}, 1)
	var runs atomic.Int32
	mux := runtime.NewMux()
	mux.HandleFunc("deploy", func(ctx context.Context, job *runtime.Job) error {
		if runs.Add(1) == 1 {
			started <- struct{}{}
			<-ctx.Done() // still running when the grace period ends
			return ctx.Err()
		}
		return nil
	})
	withMux := func(grace time.Duration) func(*runtime.Config) {
		return func(cfg *runtime.Config) { cfg.Mux, cfg.ShutdownGrace = mux, grace }
	}
	first := e.worker(e.source(qs, "worker-a", m, nil), withMux(50*time.Millisecond))
	stopFirst := run(t, func(ctx context.Context) {
		if err := first.Run(ctx); err != nil {
			t.Errorf("first worker: Run: %v", err)
		}
	})
	id := e.create(store.CreateParams{Kind: "deploy", MaxAttempts: 1})[0]
	select {
	case <-started:
	case <-time.After(waitTimeout):
		t.Fatal("the task never started")
	}
	stopFirst()

	// PENDING, or ENQUEUED already: the enqueuer runs on and may have sent it again by now.
	task := e.get(id)
	if (task.Status != store.StatusPending && task.Status != store.StatusEnqueued) || task.AttemptCount != 1 || task.MaxAttempts != 2 {
		t.Fatalf("task after shutdown: status %s, attempts %d of %d; want PENDING or ENQUEUED, 1 of 2",
			task.Status, task.AttemptCount, task.MaxAttempts)
	}
	attempts, err := e.store.ListAttempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 1 || attempts[0].Outcome != store.OutcomeRetried || attempts[0].WorkerID != "worker-a" {
		t.Fatalf("attempts after shutdown: %+v", attempts)
	}

	e.runWorker(e.worker(e.source(qs, "worker-b", m, nil), withMux(time.Second)))
	e.waitAll([]uuid.UUID{id}, store.StatusSucceeded)
	e.checkSucceededOnce([]uuid.UUID{id})
	e.waitEmpty(e.url("rota"))
}

// TestNotYetDueHidingFollowsTheDatabaseClock (issue #12 item 4): whether a received
// task is due yet is the database's call. The store here shows the rows of a database
// whose clock runs 10 minutes ahead of this process (its times and its clock at the
// read, Task.ReadAt, shifted alike): a retry due in 1.5 s is hidden for about 1.5 s and
// then claimed. Judged by this process's clock it looked 10 minutes away, and its
// message was hidden that long.
func TestNotYetDueHidingFollowsTheDatabaseClock(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	m := sqsmode.NewMetrics(nil)
	src := e.source(e.queues(true), "worker-a", m, func(cfg *sqsmode.SourceConfig) {
		cfg.Store = clockAhead{Store: e.store, by: 10 * time.Minute}
	})
	soon := e.create(store.CreateParams{Kind: "noop"})[0]
	e.retryIn(soon, 1500*time.Millisecond)
	e.sendBodies(e.url("rota"), soon.String())
	var got []runtime.Delivery
	poll.Until(t, "the retry to be claimed once due", 20*time.Second, 20*time.Millisecond, func() bool {
		d, err := src.Fetch(context.Background(), store.DefaultQueue, 10)
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		got = append(got, d...)
		return len(got) > 0
	})
	if len(got) != 1 || got[0].Task.ID != soon || m.Stats().Deferred != 1 {
		t.Fatalf("delivered %+v after %d deferrals, want the retry after 1", got, m.Stats().Deferred)
	}
}

// clockAhead is a store whose database clock runs ahead of this process by `by`: GetTask
// shows a task's due time and the clock at the read shifted alike.
type clockAhead struct {
	store.Store
	by time.Duration
}

func (c clockAhead) GetTask(ctx context.Context, id uuid.UUID) (*store.Task, error) {
	t, err := c.Store.GetTask(ctx, id)
	if err != nil {
		return nil, err
	}
	t.ScheduledFor, t.ReadAt = t.ScheduledFor.Add(c.by), t.ReadAt.Add(c.by)
	return t, nil
}
