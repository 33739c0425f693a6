package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// EnqueueDue: SQS mode's enqueuer hands task ids to a send function and marks the sent
// tasks ENQUEUED. send here is a fake that records what it was handed.
var enqueueTests = []testCase{
	{"DuePendingSentAndMarked", testEnqueuePendingSent},
	{"NothingDueSendNotCalled", testEnqueueNothingDue},
	{"PriorityThenScheduledForAcrossKinds", testEnqueueOrder},
	{"QueueIsolation", testEnqueueQueueIsolation},
	{"PartialSendMarksOnlyReported", testEnqueuePartialSend},
	{"SendErrorReturnedAfterMarking", testEnqueueSendError},
	{"IDsNotHandedOutAreNeverMarked", testEnqueueForeignIDs},
	{"CanceledAfterSendStaysEligible", testEnqueueCanceledAfterSend},
	{"RedeliveryAfterTimeout", testEnqueueRedelivery},
	{"RetriedTaskSentAgain", testEnqueueRetried},
	{"ReapedTaskSentAgain", testEnqueueReaped},
	{"ProcessingAndFinishedNeverSent", testEnqueueNeverSent},
	{"ClaimByIDWaitsForTheMark", testEnqueueClaimWaits},
	{"ConcurrentCallers_1000Tasks_10Callers_EachSentOnce", testEnqueueConcurrent},
	{"InvalidParams", testEnqueueInvalid},
}

// enqueueParams: Limit 100, and a redelivery timeout no test waits for.
func enqueueParams(queue string) store.EnqueueParams {
	return store.EnqueueParams{Queue: queue, Limit: 100, RedeliverAfter: time.Hour}
}

// enqueueWith calls EnqueueDue with report deciding what send reports as sent (nil: all
// it was handed), and returns what send was handed (nil when it was not called) and the
// count and error EnqueueDue returned.
func enqueueWith(t *testing.T, s store.Store, p store.EnqueueParams,
	report func(handed []uuid.UUID) ([]uuid.UUID, error)) (handed []uuid.UUID, n int, err error) {
	t.Helper()
	var h handOff[uuid.UUID, uuid.UUID]
	n, err = s.EnqueueDue(ctx(t), p, h.fn(report, slices.Clone))
	return h.check(t, "EnqueueDue", p.Limit), n, err
}

// handOff stands in for the function EnqueueDue and PublishDeadLetters hand rows to:
// it records what it was handed and reports through report (nil: all, by key).
type handOff[R, K any] struct {
	calls  int
	handed []R
}

func (h *handOff[R, K]) fn(report func([]R) ([]K, error), all func([]R) []K) func(context.Context, []R) ([]K, error) {
	return func(_ context.Context, rows []R) ([]K, error) {
		h.calls++
		h.handed = slices.Clone(rows)
		if report == nil {
			return all(rows), nil
		}
		return report(rows)
	}
}

// check fails the test unless the store called it at most once, with 1..limit rows, and
// returns what it was handed.
func (h *handOff[R, K]) check(t *testing.T, method string, limit int) []R {
	t.Helper()
	if h.calls > 1 {
		t.Fatalf("%s handed rows %d times in one call", method, h.calls)
	}
	if h.calls == 1 && len(h.handed) == 0 {
		t.Fatalf("%s handed nothing", method)
	}
	if len(h.handed) > limit {
		t.Fatalf("%s handed %d rows with limit %d", method, len(h.handed), limit)
	}
	return h.handed
}

// enqueueAll calls EnqueueDue with a send that reports everything sent, and checks that
// every id handed was marked.
func enqueueAll(t *testing.T, s store.Store, p store.EnqueueParams) []uuid.UUID {
	t.Helper()
	handed, n, err := enqueueWith(t, s, p, nil)
	if err != nil {
		t.Fatalf("EnqueueDue(%+v): %v", p, err)
	}
	if n != len(handed) {
		t.Fatalf("EnqueueDue marked %d tasks, send reported all %d it was handed", n, len(handed))
	}
	return handed
}

// checkSent checks that a task is marked sent: ENQUEUED, no lease, enqueued_at now.
func checkSent(t *testing.T, s store.Store, id uuid.UUID) *store.Task {
	t.Helper()
	task := get(t, s, id)
	if task.Status != store.StatusEnqueued {
		t.Fatalf("task %s is %s after it was sent, want ENQUEUED", id, task.Status)
	}
	checkNoLease(t, task)
	nearNowPtr(t, "EnqueuedAt of a sent task", task.EnqueuedAt)
	nearNow(t, "UpdatedAt of a sent task", task.UpdatedAt)
	return task
}

// checkUnsent checks that a task EnqueueDue did not mark is still PENDING and unsent.
func checkUnsent(t *testing.T, s store.Store, id uuid.UUID) {
	t.Helper()
	task := get(t, s, id)
	if task.Status != store.StatusPending || task.EnqueuedAt != nil {
		t.Fatalf("task %s: status %s enqueued_at %v, want PENDING and never sent", id, task.Status, task.EnqueuedAt)
	}
}

func wantHanded(t *testing.T, what string, got []uuid.UUID, want ...uuid.UUID) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: send was handed %v, want %v", what, got, want)
	}
}

// sendOnce sends task (due, in a queue of its own) and returns it as stored afterwards.
func sendOnce(t *testing.T, s store.Store, task *store.Task) *store.Task {
	t.Helper()
	wantHanded(t, "first send", enqueueAll(t, s, enqueueParams(task.Queue)), task.ID)
	return checkSent(t, s, task.ID)
}

func testEnqueuePendingSent(t *testing.T, s store.Store) {
	due := createN(t, s, "eq", "k", 3)
	later := createOne(t, s, store.CreateParams{Queue: "eq", Kind: "k", ScheduledFor: time.Now().Add(time.Hour)})
	wantHanded(t, "due tasks", enqueueAll(t, s, enqueueParams("eq")), ids(due)...)
	for _, task := range due {
		sent := checkSent(t, s, task.ID)
		if sent.AttemptCount != 0 || sent.WorkerID != "" || !sent.ScheduledFor.Equal(task.ScheduledFor) {
			t.Fatalf("sent task changed beyond status and enqueued_at: %+v", sent)
		}
	}
	checkUnsent(t, s, later.ID)
	if st := statsOf(t, s, "eq"); st == nil || st.Counts[store.StatusEnqueued] != 3 || st.Counts[store.StatusPending] != 1 {
		t.Fatalf("stats after sending: %+v", st)
	}

	// Sent tasks are not sent again, and are claimable by id from ENQUEUED (not PENDING).
	wantHanded(t, "second call", enqueueAll(t, s, enqueueParams("eq")))
	if got := claim(t, s, claimParams("eq", 10)); len(got) != 0 {
		t.Fatalf("claimed %d sent tasks From PENDING", len(got))
	}
	claimID(t, s, due[0], store.StatusEnqueued, 30*time.Second)
}

func testEnqueueNothingDue(t *testing.T, s store.Store) {
	wantHanded(t, "empty store", enqueueAll(t, s, enqueueParams("default")))
	later := createOne(t, s, store.CreateParams{Kind: "k", ScheduledFor: time.Now().Add(time.Hour), Priority: 9})
	wantHanded(t, "a task due in an hour", enqueueAll(t, s, enqueueParams("default")))
	checkUnsent(t, s, later.ID)
}

// testEnqueueOrder: priority desc, then scheduled_for, then id, across due PENDING tasks
// and a retry waiting for its new message; Limit cuts the same order.
func testEnqueueOrder(t *testing.T, s store.Store) {
	now := time.Now()
	retry := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "ord", Kind: "k", Priority: 3}))
	retry = claimID(t, s, retry, store.StatusEnqueued, 30*time.Second)
	o := outcome(retry, store.Retry, "again")
	recordOK(t, s, o, store.StatusPending)

	res := create(t, s,
		store.CreateParams{Queue: "ord", Kind: "low", Priority: -1, ScheduledFor: now.Add(-time.Hour)},
		store.CreateParams{Queue: "ord", Kind: "p5-new", Priority: 5, ScheduledFor: now.Add(-time.Second)},
		store.CreateParams{Queue: "ord", Kind: "p0", ScheduledFor: now.Add(-time.Minute)},
		store.CreateParams{Queue: "ord", Kind: "p5-old", Priority: 5, ScheduledFor: now.Add(-2 * time.Second)},
	)
	low, p5new, p0, p5old := res[0].Task.ID, res[1].Task.ID, res[2].Task.ID, res[3].Task.ID

	p := enqueueParams("ord")
	p.Limit = 3
	wantHanded(t, "first batch of 3", enqueueAll(t, s, p), p5old, p5new, retry.ID)
	wantHanded(t, "the rest", enqueueAll(t, s, p), p0, low)
}

func testEnqueueQueueIsolation(t *testing.T, s store.Store) {
	a := createN(t, s, "qa", "k", 2)
	b := createN(t, s, "qb", "k", 2)
	d := createN(t, s, store.DefaultQueue, "k", 1)
	wantHanded(t, "queue qa", enqueueAll(t, s, enqueueParams("qa")), ids(a)...)
	checkUnsent(t, s, b[0].ID)
	checkUnsent(t, s, d[0].ID)
	wantHanded(t, `queue "" (the default queue)`, enqueueAll(t, s, enqueueParams("")), d[0].ID)
	wantHanded(t, "queue qb", enqueueAll(t, s, enqueueParams("qb")), ids(b)...)
}

func testEnqueuePartialSend(t *testing.T, s store.Store) {
	tasks := createN(t, s, "part", "k", 3)
	handed, n, err := enqueueWith(t, s, enqueueParams("part"), func(handed []uuid.UUID) ([]uuid.UUID, error) {
		return handed[1:2], nil
	})
	if err != nil || n != 1 {
		t.Fatalf("EnqueueDue with one id reported sent: n %d err %v, want 1 and no error", n, err)
	}
	wantHanded(t, "first call", handed, ids(tasks)...)
	checkSent(t, s, tasks[1].ID)
	checkUnsent(t, s, tasks[0].ID)
	checkUnsent(t, s, tasks[2].ID)
	wantHanded(t, "next call", enqueueAll(t, s, enqueueParams("part")), tasks[0].ID, tasks[2].ID)
}

func testEnqueueSendError(t *testing.T, s store.Store) {
	tasks := createN(t, s, "serr", "k", 3)
	sqsDown := errors.New("sqs: service unavailable")
	_, n, err := enqueueWith(t, s, enqueueParams("serr"), func(handed []uuid.UUID) ([]uuid.UUID, error) {
		return handed[:1], sqsDown
	})
	if !errors.Is(err, sqsDown) {
		t.Fatalf("EnqueueDue: got error %v, want send's error", err)
	}
	if n != 1 {
		t.Fatalf("EnqueueDue marked %d, want the 1 id send reported before failing", n)
	}
	checkSent(t, s, tasks[0].ID)
	checkUnsent(t, s, tasks[1].ID)
	wantHanded(t, "after the failed send", enqueueAll(t, s, enqueueParams("serr")), tasks[1].ID, tasks[2].ID)
}

// testEnqueueForeignIDs: send reporting ids it was not handed (a bug, a stale batch)
// marks nothing but what this call handed out.
func testEnqueueForeignIDs(t *testing.T, s store.Store) {
	due := createOne(t, s, store.CreateParams{Queue: "foreign", Kind: "k"})
	later := createOne(t, s, store.CreateParams{Queue: "foreign", Kind: "k", ScheduledFor: time.Now().Add(time.Hour)})
	other := createOne(t, s, store.CreateParams{Queue: "elsewhere", Kind: "k"})
	_, n, err := enqueueWith(t, s, enqueueParams("foreign"), func(handed []uuid.UUID) ([]uuid.UUID, error) {
		return append([]uuid.UUID{later.ID, other.ID, uuid.New()}, append(handed, handed...)...), nil
	})
	if err != nil || n != 1 {
		t.Fatalf("EnqueueDue: n %d err %v, want 1 and no error", n, err)
	}
	checkSent(t, s, due.ID)
	checkUnsent(t, s, later.ID)
	checkUnsent(t, s, other.ID)
}

// testEnqueueCanceledAfterSend: the caller's context ends after the ids were sent but
// before the mark; nothing is marked and the tasks are handed out again (a duplicate
// message is harmless, a lost task would not be).
func testEnqueueCanceledAfterSend(t *testing.T, s store.Store) {
	tasks := createN(t, s, "cancel", "k", 2)
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	n, err := s.EnqueueDue(c, enqueueParams("cancel"), func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
		cancel()
		return ids, nil
	})
	if err == nil || n != 0 {
		t.Fatalf("EnqueueDue whose context ended during send: n %d err %v, want 0 and an error", n, err)
	}
	for _, task := range tasks {
		checkUnsent(t, s, task.ID)
	}
	wantHanded(t, "next call", enqueueAll(t, s, enqueueParams("cancel")), ids(tasks)...)
}

func testEnqueueRedelivery(t *testing.T, s store.Store) {
	task := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "lost", Kind: "k"}))
	wantHanded(t, "before the redelivery timeout", enqueueAll(t, s, enqueueParams("lost")))

	p := enqueueParams("lost")
	p.RedeliverAfter = 50 * time.Millisecond
	var again []uuid.UUID
	waitFor(t, "the task to be sent again", func() bool {
		again = enqueueAll(t, s, p)
		return len(again) > 0
	})
	wantHanded(t, "after the redelivery timeout", again, task.ID)
	resent := checkSent(t, s, task.ID)
	if !resent.EnqueuedAt.After(*task.EnqueuedAt) {
		t.Fatalf("EnqueuedAt after the re-send %s, not after the first send %s", resent.EnqueuedAt, task.EnqueuedAt)
	}
	if resent.AttemptCount != 0 {
		t.Fatalf("a re-send changed attempt_count to %d", resent.AttemptCount)
	}
	wantHanded(t, "right after the re-send", enqueueAll(t, s, enqueueParams("lost")))
	claimID(t, s, task, store.StatusEnqueued, 30*time.Second)
}

// testEnqueueRetried: a retry goes back to PENDING without its message (the worker
// deletes the old one) and is sent again once its backoff has passed.
func testEnqueueRetried(t *testing.T, s store.Store) {
	task := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "retry", Kind: "k"}))
	running := claimID(t, s, task, store.StatusEnqueued, 30*time.Second)
	retried := recordOK(t, s, outcome(running, store.Retry, "try again"), store.StatusPending)
	isNil(t, "EnqueuedAt of a retry waiting for its new message", retried.EnqueuedAt)
	wantHanded(t, "a due retry", enqueueAll(t, s, enqueueParams("retry")), task.ID)
	checkSent(t, s, task.ID)

	// A retry whose backoff has not passed waits.
	running = claimID(t, s, task, store.StatusEnqueued, 30*time.Second)
	o := outcome(running, store.Retry, "later")
	o.RetryIn = time.Hour
	recordOK(t, s, o, store.StatusPending)
	p := enqueueParams("retry")
	p.RedeliverAfter = time.Nanosecond
	wantHanded(t, "a retry due in an hour", enqueueAll(t, s, p))
}

func testEnqueueReaped(t *testing.T, s store.Store) {
	task := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "reap", Kind: "k"}))
	claimID(t, s, task, store.StatusEnqueued, shortLease)
	reapUntil(t, s, store.ReapParams{Limit: 10}, 1)
	reaped := get(t, s, task.ID)
	if reaped.Status != store.StatusPending {
		t.Fatalf("reaped task is %s, want PENDING", reaped.Status)
	}
	isNil(t, "EnqueuedAt of a reaped task", reaped.EnqueuedAt)
	wantHanded(t, "a reaped task", enqueueAll(t, s, enqueueParams("reap")), task.ID)
	checkSent(t, s, task.ID)
}

// testEnqueueNeverSent: running and finished tasks get no message, whatever the
// redelivery timeout.
func testEnqueueNeverSent(t *testing.T, s store.Store) {
	p := store.CreateParams{Queue: "done", Kind: "k"}
	for _, status := range []store.Status{store.StatusSucceeded, store.StatusFailed, store.StatusDead, store.StatusCanceled} {
		driveTo(t, s, p, status)
	}
	createAndClaim(t, s, p) // PROCESSING from PENDING

	sent := createN(t, s, "done", "k", 2)
	enqueueAll(t, s, enqueueParams("done"))
	claimID(t, s, sent[0], store.StatusEnqueued, 30*time.Second) // PROCESSING from ENQUEUED
	if c, err := s.CancelTask(ctx(t), sent[1].ID); err != nil || c.Status != store.StatusCanceled {
		t.Fatalf("cancel an ENQUEUED task: %v", err)
	}

	quick := enqueueParams("done")
	quick.RedeliverAfter = time.Nanosecond
	wantHanded(t, "running and finished tasks", enqueueAll(t, s, quick))
}

// testEnqueueClaimWaits: a worker may receive an id before the enqueuer has committed
// ENQUEUED. Its claim by id must wait for the mark and then claim the task; finding the
// task still PENDING would make the worker drop the message. The claim starts inside
// send; a claim that returns while send is still running (given 200ms to) did not wait.
func testEnqueueClaimWaits(t *testing.T, s store.Store) {
	task := createOne(t, s, store.CreateParams{Queue: "early", Kind: "k"})
	type claimResult struct {
		tasks []*store.Task
		err   error
	}
	result := make(chan claimResult, 1)
	var early *claimResult
	n, err := s.EnqueueDue(ctx(t), enqueueParams("early"), func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
		go func() {
			p := claimParams("early", 1)
			p.From = store.StatusEnqueued
			p.TaskIDs = ids
			got, err := s.ClaimTasks(ctx(t), p)
			result <- claimResult{got, err}
		}()
		select {
		case r := <-result:
			early = &r
		case <-time.After(200 * time.Millisecond):
		}
		return ids, nil
	})
	if err != nil || n != 1 {
		t.Fatalf("EnqueueDue: n %d err %v", n, err)
	}
	if early != nil {
		t.Fatalf("a claim by id of a task being sent returned %v (err %v) before the mark: it must wait for it", ids(early.tasks), early.err)
	}
	r := <-result
	if r.err != nil {
		t.Fatalf("ClaimTasks by id during the send: %v", r.err)
	}
	if len(r.tasks) != 1 || r.tasks[0].ID != task.ID {
		t.Fatalf("a claim by id issued before the mark committed got %v, want the task", ids(r.tasks))
	}
}

// testEnqueueConcurrent is the acceptance test for "enqueuers run side by side": 1,000
// tasks needing a message (900 new, 100 retries), 10 callers in a loop until nothing is
// handed out; every task is handed to exactly one send.
func testEnqueueConcurrent(t *testing.T, s store.Store) {
	const retries, fresh, callers = 100, 900, 10
	first := createN(t, s, "race", "k", retries)
	p := enqueueParams("race")
	wantHanded(t, "setup", enqueueAll(t, s, p), ids(first)...)
	cp := claimParams("race", retries)
	cp.From = store.StatusEnqueued
	cp.TaskIDs = ids(first)
	running := claim(t, s, cp)
	outcomes := make([]store.Outcome, len(running))
	for i, task := range running {
		outcomes[i] = outcome(task, store.Retry, "again")
	}
	for i, r := range record(t, s, outcomes...) {
		if r.Err != nil || r.Status != store.StatusPending {
			t.Fatalf("retry %d: %+v", i, r)
		}
	}
	created := createN(t, s, "race", "k", fresh)

	c := ctx(t)
	handed := race(t, "EnqueueDue", callers, func(g int) func() ([]uuid.UUID, error) {
		p := enqueueParams("race")
		p.Limit = 1 + g*7%50 // batch sizes 1..50
		return func() ([]uuid.UUID, error) {
			var got []uuid.UUID
			n, err := s.EnqueueDue(c, p, func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
				got = slices.Clone(ids)
				return ids, nil
			})
			if err == nil && (len(got) > p.Limit || n != len(got)) {
				err = fmt.Errorf("handed %d ids with limit %d, marked %d", len(got), p.Limit, n)
			}
			return got, err
		}
	})

	sentBy := map[uuid.UUID]int{}
	for g, got := range handed {
		for _, id := range got {
			if prev, dup := sentBy[id]; dup {
				t.Fatalf("task %s handed to two sends: caller %d and caller %d", id, prev, g)
			}
			sentBy[id] = g
		}
	}
	for _, task := range append(first, created...) {
		if _, ok := sentBy[task.ID]; !ok {
			t.Fatalf("task %s never sent", task.ID)
		}
	}
	if len(sentBy) != retries+fresh {
		t.Fatalf("%d tasks sent, want %d", len(sentBy), retries+fresh)
	}
	enqueued := listAll(t, s, store.ListParams{Statuses: []store.Status{store.StatusEnqueued}, Queue: "race", Limit: store.MaxListLimit})
	if len(enqueued) != retries+fresh {
		t.Fatalf("%d ENQUEUED tasks, want %d", len(enqueued), retries+fresh)
	}
	for _, task := range enqueued {
		nearNowPtr(t, "EnqueuedAt", task.EnqueuedAt)
	}
}

func testEnqueueInvalid(t *testing.T, s store.Store) {
	task := createOne(t, s, store.CreateParams{Kind: "k"})
	send := func(context.Context, []uuid.UUID) ([]uuid.UUID, error) {
		t.Error("send called for invalid params")
		return nil, nil
	}
	for name, p := range map[string]store.EnqueueParams{
		"limit 0":                   {RedeliverAfter: time.Minute},
		"negative limit":            {Limit: -1, RedeliverAfter: time.Minute},
		"limit above the maximum":   {Limit: store.MaxListLimit + 1, RedeliverAfter: time.Minute},
		"no redelivery timeout":     {Limit: 10},
		"negative redelivery":       {Limit: 10, RedeliverAfter: -time.Second},
		"queue name with a space":   {Queue: "no such", Limit: 10, RedeliverAfter: time.Minute},
		"queue name starting digit": {Queue: "1q", Limit: 10, RedeliverAfter: time.Minute},
	} {
		n, err := s.EnqueueDue(ctx(t), p, send)
		wantErr(t, err, store.ErrInvalid, "EnqueueDue with "+name)
		if n != 0 {
			t.Fatalf("EnqueueDue with %s marked %d", name, n)
		}
	}
	n, err := s.EnqueueDue(ctx(t), enqueueParams("default"), nil)
	wantErr(t, err, store.ErrInvalid, "EnqueueDue with a nil send")
	if n != 0 {
		t.Fatalf("EnqueueDue with a nil send marked %d", n)
	}
	sameTask(t, "task after invalid calls", get(t, s, task.ID), task)
}
