package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// PublishDeadLetters: SQS mode's dead-letter outbox. publish here is a fake that records
// what it was handed.
var outboxTests = []testCase{
	{"SQSDeadLetterHandedOnceThenMarked", testOutboxHandedOnce},
	{"EveryPathThatEndsAnSQSTask", testOutboxEveryPath},
	{"PollModeDeadLettersNeverHanded", testOutboxPollMode},
	{"RetrySentAgainCountsAsSQS", testOutboxRetrySentAgain},
	{"RetryRunByAPollWorkerIsNotSQS", testOutboxRetryPolled},
	{"QueuesLimitAndOrder", testOutboxQueuesLimitOrder},
	{"PartialPublishMarksOnlyReported", testOutboxPartial},
	{"HeldRowsSkippedByOtherCallers", testOutboxConcurrent},
	{"RetentionTakesPendingDeadLetters", testOutboxRetention},
	{"InvalidParams", testOutboxInvalid},
}

// publishWith calls PublishDeadLetters with report deciding what publish reports (nil:
// all it was handed) and returns what publish was handed (nil when not called), the
// count and the error.
func publishWith(t *testing.T, s store.Store, p store.PublishParams,
	report func(handed []store.DeadLetter) ([]int64, error)) (handed []store.DeadLetter, n int, err error) {
	t.Helper()
	var h handOff[store.DeadLetter, int64]
	n, err = s.PublishDeadLetters(ctx(t), p, h.fn(report, func(events []store.DeadLetter) []int64 {
		ids := make([]int64, len(events))
		for i, d := range events {
			ids[i] = d.ID
		}
		return ids
	}))
	return h.check(t, "PublishDeadLetters", p.Limit), n, err
}

// publishAll publishes everything awaiting in queues and returns the task ids handed,
// in order, checking that all were marked.
func publishAll(t *testing.T, s store.Store, queues ...string) []store.DeadLetter {
	t.Helper()
	handed, n, err := publishWith(t, s, store.PublishParams{Queues: queues, Limit: 100}, nil)
	if err != nil {
		t.Fatalf("PublishDeadLetters(%v): %v", queues, err)
	}
	if n != len(handed) {
		t.Fatalf("PublishDeadLetters marked %d, publish reported all %d", n, len(handed))
	}
	return handed
}

// sqsDead creates a task in queue, sends it (EnqueueDue), claims it by id from ENQUEUED
// and ends it with kind: an SQS-mode task ending DEAD (Retry with no attempt left) or
// FAILED (Fail).
func sqsDead(t *testing.T, s store.Store, queue string, kind store.OutcomeKind) *store.Task {
	t.Helper()
	task := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: queue, Kind: "k", MaxAttempts: 1}))
	claimed := claimID(t, s, task, store.StatusEnqueued, 30*time.Second)
	want := store.StatusDead
	if kind == store.Fail {
		want = store.StatusFailed
	}
	return recordOK(t, s, outcome(claimed, kind, "boom"), want)
}

func wantEvents(t *testing.T, what string, got []store.DeadLetter, tasks ...*store.Task) {
	t.Helper()
	if len(got) != len(tasks) {
		t.Fatalf("%s: publish was handed %d events, want %d: %+v", what, len(got), len(tasks), got)
	}
	for i, task := range tasks {
		if got[i].TaskID != task.ID {
			t.Fatalf("%s: event %d is task %s, want %s", what, i, got[i].TaskID, task.ID)
		}
	}
}

func testOutboxHandedOnce(t *testing.T, s store.Store) {
	task := sqsDead(t, s, "dlq", store.Retry)
	handed := publishAll(t, s, "dlq")
	wantEvents(t, "an SQS task ended DEAD", handed, task)
	// The event is the dead letter, field for field.
	if want := deadLettersOf(t, s, task.ID); len(want) != 1 || handed[0] != want[0] {
		t.Fatalf("handed %+v, want the dead letter %+v", handed[0], want)
	}
	if got := publishAll(t, s, "dlq"); got != nil {
		t.Fatalf("a published dead letter was handed again: %+v", got)
	}
}

// testOutboxEveryPath: FAILED by an outcome, DEAD by the lease reaper: whatever ended an
// SQS-mode task, its dead letter awaits the DLQ.
func testOutboxEveryPath(t *testing.T, s store.Store) {
	failed := sqsDead(t, s, "paths", store.Fail)
	reaped := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "paths", Kind: "k", MaxAttempts: 1}))
	claimID(t, s, reaped, store.StatusEnqueued, shortLease)
	reapUntil(t, s, store.ReapParams{Limit: 10}, 1)
	if got := get(t, s, reaped.ID); got.Status != store.StatusDead {
		t.Fatalf("reaped task with no attempts left is %s, want DEAD", got.Status)
	}
	wantEvents(t, "FAILED by outcome, DEAD by the reaper", publishAll(t, s, "paths"), failed, reaped)
}

func testOutboxPollMode(t *testing.T, s store.Store) {
	p := store.CreateParams{Queue: "poll", Kind: "k"}
	driveTo(t, s, p, store.StatusDead)
	driveTo(t, s, p, store.StatusFailed)
	if got := publishAll(t, s, "poll"); got != nil {
		t.Fatalf("poll-mode dead letters were handed to the DLQ: %+v", got)
	}
	if n := len(deadLetters(t, s, store.DeadLetterParams{Queue: "poll"})); n != 2 {
		t.Fatalf("%d dead letters recorded, want 2", n)
	}
}

// testOutboxRetrySentAgain: a retry goes back to PENDING without a message; sent again,
// claimed by id and then dead, it is an SQS-mode task whose dead letter awaits the DLQ.
func testOutboxRetrySentAgain(t *testing.T, s store.Store) {
	task := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "again", Kind: "k", MaxAttempts: 2}))
	first := claimID(t, s, task, store.StatusEnqueued, 30*time.Second)
	retried := recordOK(t, s, outcome(first, store.Retry, "again"), store.StatusPending)
	isNil(t, "EnqueuedAt of a retry", retried.EnqueuedAt)
	second := claimID(t, s, sendOnce(t, s, retried), store.StatusEnqueued, 30*time.Second)
	nearNowPtr(t, "EnqueuedAt after a claim by id", second.EnqueuedAt)
	dead := recordOK(t, s, outcome(second, store.Retry, "boom"), store.StatusDead)
	wantEvents(t, "dead after its second message", publishAll(t, s, "again"), dead)
}

// testOutboxRetryPolled: the same retry claimed by a poll worker (its queue moved to poll
// mode) and then dead went through poll mode last: no DLQ event.
func testOutboxRetryPolled(t *testing.T, s store.Store) {
	task := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "moved", Kind: "k", MaxAttempts: 2}))
	first := claimID(t, s, task, store.StatusEnqueued, 30*time.Second)
	retried := recordOK(t, s, outcome(first, store.Retry, "again"), store.StatusPending)
	second := claimID(t, s, retried, store.StatusPending, 30*time.Second)
	recordOK(t, s, outcome(second, store.Retry, "boom"), store.StatusDead)
	if got := publishAll(t, s, "moved"); got != nil {
		t.Fatalf("a task that ended in poll mode was handed to the DLQ: %+v", got)
	}
}

func testOutboxQueuesLimitOrder(t *testing.T, s store.Store) {
	a1 := sqsDead(t, s, "qa", store.Retry)
	b1 := sqsDead(t, s, "qb", store.Fail)
	a2 := sqsDead(t, s, "qa", store.Fail)
	sqsDead(t, s, "qc", store.Retry)

	handed, n, err := publishWith(t, s, store.PublishParams{Queues: []string{"qa", "qb"}, Limit: 2}, nil)
	if err != nil || n != 2 {
		t.Fatalf("PublishDeadLetters: %d, %v", n, err)
	}
	wantEvents(t, "oldest two of qa and qb", handed, a1, b1)
	wantEvents(t, "the rest of qa and qb", publishAll(t, s, "qa", "qb"), a2)
	if got := publishAll(t, s, "qa", "qb"); got != nil {
		t.Fatalf("handed again: %+v", got)
	}
}

func testOutboxPartial(t *testing.T, s store.Store) {
	first := sqsDead(t, s, "part", store.Retry)
	second := sqsDead(t, s, "part", store.Retry)
	boom := errors.New("sqs refused")
	handed, n, err := publishWith(t, s, store.PublishParams{Queues: []string{"part"}, Limit: 10},
		func(events []store.DeadLetter) ([]int64, error) {
			// Report the second, plus an id this call never handed out.
			return []int64{events[1].ID, events[0].ID + 1000}, boom
		})
	if !errors.Is(err, boom) || n != 1 {
		t.Fatalf("PublishDeadLetters: %d, %v; want 1 and publish's error", n, err)
	}
	wantEvents(t, "both", handed, first, second)
	wantEvents(t, "the unreported one, again", publishAll(t, s, "part"), first)
}

// testOutboxConcurrent: while one call's publish runs, another call skips its rows
// (SKIP LOCKED) and gets only the others.
func testOutboxConcurrent(t *testing.T, s store.Store) {
	held := sqsDead(t, s, "conc", store.Retry)
	inPublish := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := s.PublishDeadLetters(context.Background(), store.PublishParams{Queues: []string{"conc"}, Limit: 1},
			func(_ context.Context, events []store.DeadLetter) ([]int64, error) {
				close(inPublish)
				<-release
				return []int64{events[0].ID}, nil
			})
		done <- err
	}()
	<-inPublish
	other := sqsDead(t, s, "conc", store.Retry)
	wantEvents(t, "while the first is held", publishAll(t, s, "conc"), other)
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the holding call: %v", err)
	}
	if got := publishAll(t, s, "conc"); got != nil {
		t.Fatalf("handed again after both calls: %+v (first %s)", got, held.ID)
	}
}

// testOutboxRetention: a dead letter deleted with its task is no longer awaited.
func testOutboxRetention(t *testing.T, s store.Store) {
	sqsDead(t, s, "ret", store.Retry)
	future := time.Now().Add(time.Hour)
	if _, err := s.DeleteFinishedTasks(ctx(t), store.RetentionParams{
		SucceededBefore: future, FailedBefore: future, Limit: 100,
	}); err != nil {
		t.Fatalf("DeleteFinishedTasks: %v", err)
	}
	if got := publishAll(t, s, "ret"); got != nil {
		t.Fatalf("a deleted task's dead letter was handed: %+v", got)
	}
}

func testOutboxInvalid(t *testing.T, s store.Store) {
	sqsDead(t, s, "inv", store.Retry)
	never := func(context.Context, []store.DeadLetter) ([]int64, error) {
		t.Fatal("publish called for invalid params")
		return nil, nil
	}
	for _, p := range []store.PublishParams{
		{Limit: 10},
		{Queues: []string{"inv"}, Limit: 0},
		{Queues: []string{"inv"}, Limit: store.MaxListLimit + 1},
		{Queues: []string{"inv", ""}, Limit: 10},
	} {
		_, err := s.PublishDeadLetters(ctx(t), p, never)
		wantErr(t, err, store.ErrInvalid, "PublishDeadLetters with bad params")
	}
	_, err := s.PublishDeadLetters(ctx(t), store.PublishParams{Queues: []string{"inv"}, Limit: 10}, nil)
	wantErr(t, err, store.ErrInvalid, "PublishDeadLetters without publish")
	if got := publishAll(t, s, "inv"); len(got) != 1 {
		t.Fatalf("after the invalid calls, %d events awaited, want 1", len(got))
	}
}
