package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

var outcomeTests = []testCase{
	{"Succeed", testOutcomeSucceed},
	{"RetryNow", testOutcomeRetryNow},
	{"RetryLater", testOutcomeRetryLater},
	{"RetryOfASentTaskBackToPending", testOutcomeRetrySent},
	{"RetryExhaustedGoesDead", testOutcomeRetryExhausted},
	{"ReleaseDoesNotCount", testOutcomeRelease},
	{"FailIsPermanent", testOutcomeFail},
	{"CancelOutcome", testOutcomeCancel},
	{"StaleTokenLeaseLost", testOutcomeStaleToken},
	{"RecordTwiceLeaseLost", testOutcomeTwice},
	{"MixedBatchInInputOrder", testOutcomeMixedBatch},
	{"LongErrorTruncated", testOutcomeLongError},
	{"InvalidOutcome", testOutcomeInvalid},
}

func testOutcomeSucceed(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	done := recordOK(t, s, outcome(task, store.Succeed, ""), store.StatusSucceeded)
	checkNoLease(t, done)
	nearNowPtr(t, "CompletedAt", done.CompletedAt)
	if done.AttemptCount != 1 || done.WorkerID != task.WorkerID {
		t.Fatalf("after success: attempt_count %d worker %q", done.AttemptCount, done.WorkerID)
	}
	if done.UpdatedAt.Before(task.UpdatedAt) {
		t.Fatalf("UpdatedAt went backwards")
	}
	checkClosedAttempt(t, s, task, 1, store.OutcomeSucceeded, "")
	if n := len(deadLettersOf(t, s, task.ID)); n != 0 {
		t.Fatalf("a success wrote %d dead letters", n)
	}
	if got := claim(t, s, claimParams("default", 10)); len(got) != 0 {
		t.Fatal("a SUCCEEDED task was claimed")
	}
}

func testOutcomeRetryNow(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k", MaxAttempts: 3})
	after := recordOK(t, s, outcome(task, store.Retry, "connection reset"), store.StatusPending)
	checkNoLease(t, after)
	isNil(t, "CompletedAt", after.CompletedAt)
	if after.LastError != "connection reset" || after.AttemptCount != 1 {
		t.Fatalf("after retry: last_error %q attempt_count %d", after.LastError, after.AttemptCount)
	}
	nearNow(t, "ScheduledFor of a retry with zero RetryIn", after.ScheduledFor)
	checkClosedAttempt(t, s, task, 1, store.OutcomeRetried, "connection reset")
	again := claimID(t, s, task, store.StatusPending, 30*time.Second)
	if again.AttemptCount != 2 {
		t.Fatalf("second claim: attempt_count %d", again.AttemptCount)
	}
	if a := attempts(t, s, task.ID); len(a) != 2 || a[1].Attempt != 2 || a[1].FinishedAt != nil {
		t.Fatalf("attempts after the second claim: %+v", a)
	}
}

func testOutcomeRetryLater(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	o := outcome(task, store.Retry, "snoozed")
	o.RetryIn = time.Hour + 1500*time.Microsecond
	after := recordOK(t, s, o, store.StatusPending)
	// The store adds RetryIn to the now() it writes updated_at with: exact, whatever the
	// clock of the process that recorded the outcome (DESIGN.md section 9).
	if d := after.ScheduledFor.Sub(after.UpdatedAt); d != o.RetryIn {
		t.Fatalf("ScheduledFor %s is %s after UpdatedAt, want exactly RetryIn %s", after.ScheduledFor, d, o.RetryIn)
	}
	if got := claim(t, s, claimParams("default", 10)); len(got) != 0 {
		t.Fatal("a retry due in an hour was claimed")
	}
	// A retry due shortly is claimable once due.
	task2 := createAndClaim(t, s, store.CreateParams{Kind: "k2"})
	o = outcome(task2, store.Retry, "soon")
	o.RetryIn = 300 * time.Millisecond
	recordOK(t, s, o, store.StatusPending)
	var got []*store.Task
	waitFor(t, "the retry to become due", func() bool {
		got = claim(t, s, claimParams("default", 10))
		return len(got) > 0
	})
	if len(got) != 1 || got[0].ID != task2.ID {
		t.Fatalf("claimed %v, want %s", ids(got), task2.ID)
	}
}

// testOutcomeRetrySent: a task that came through SQS goes back to PENDING on a retry, in
// every mode, without its message (the worker deletes it): a poll worker can claim it, and
// the enqueuer of its queue sends it again.
func testOutcomeRetrySent(t *testing.T, s store.Store) {
	task := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "sqs-retry", Kind: "k"}))
	running := claimID(t, s, task, store.StatusEnqueued, 30*time.Second)
	after := recordOK(t, s, outcome(running, store.Retry, "sqs retry"), store.StatusPending)
	checkNoLease(t, after)
	isNil(t, "EnqueuedAt of a retry", after.EnqueuedAt)
	checkClosedAttempt(t, s, task, 1, store.OutcomeRetried, "sqs retry")
	p := claimParams("sqs-retry", 10)
	p.From = store.StatusEnqueued
	if got := claim(t, s, p); len(got) != 0 {
		t.Fatal("a retry was claimed From ENQUEUED before it was sent again")
	}
	again := claimID(t, s, after, store.StatusPending, 30*time.Second)
	if again.AttemptCount != 2 {
		t.Fatalf("attempt_count %d after the second claim", again.AttemptCount)
	}
}

func testOutcomeRetryExhausted(t *testing.T, s store.Store) {
	task := createOne(t, s, store.CreateParams{Queue: "mail", Kind: "send", MaxAttempts: 2})
	c1 := claimID(t, s, task, store.StatusPending, 30*time.Second)
	recordOK(t, s, outcome(c1, store.Retry, "first"), store.StatusPending)
	p := claimParams("mail", 1)
	p.WorkerID = "worker-2"
	p.TaskIDs = []uuid.UUID{task.ID}
	c2 := claim(t, s, p)[0]
	dead := recordOK(t, s, outcome(c2, store.Retry, "second"), store.StatusDead)
	checkNoLease(t, dead)
	nearNowPtr(t, "CompletedAt", dead.CompletedAt)
	if dead.AttemptCount != 2 || dead.LastError != "second" || dead.WorkerID != "worker-2" {
		t.Fatalf("dead task: attempt_count %d last_error %q worker %q", dead.AttemptCount, dead.LastError, dead.WorkerID)
	}
	checkClosedAttempt(t, s, task, 2, store.OutcomeDead, "second")

	evs := deadLettersOf(t, s, task.ID)
	if len(evs) != 1 {
		t.Fatalf("%d dead-letter events, want 1", len(evs))
	}
	ev := evs[0]
	if ev.ID == 0 || ev.TaskID != task.ID || ev.Kind != "send" || ev.Queue != "mail" || ev.WorkerID != "worker-2" ||
		ev.AttemptCount != 2 || ev.MaxAttempts != 2 || ev.Error != "second" || ev.Reason != store.StatusDead {
		t.Fatalf("dead letter %+v does not match the task", ev)
	}
	nearNow(t, "dead letter CreatedAt", ev.CreatedAt)
	isNil(t, "dead letter ReplayedAt", ev.ReplayedAt)
	if got := claim(t, s, claimParams("mail", 10)); len(got) != 0 {
		t.Fatal("a DEAD task was claimed")
	}
	// A task that came through SQS with attempts exhausted is DEAD too.
	t2 := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "sqs-dead", Kind: "k", MaxAttempts: 1}))
	t2 = claimID(t, s, t2, store.StatusEnqueued, 30*time.Second)
	recordOK(t, s, outcome(t2, store.Retry, "boom"), store.StatusDead)
	if n := len(deadLettersOf(t, s, t2.ID)); n != 1 {
		t.Fatalf("%d dead letters, want 1", n)
	}
}

// A released attempt (the worker shut down) is recorded but does not use up the budget:
// on the last attempt it returns the task due now instead of DEAD, and max_attempts grows
// by one so attempt numbers stay unique.
func testOutcomeRelease(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k", MaxAttempts: 1})
	after := recordOK(t, s, outcome(task, store.Release, "worker shut down"), store.StatusPending)
	checkNoLease(t, after)
	isNil(t, "CompletedAt", after.CompletedAt)
	nearNow(t, "ScheduledFor of a release", after.ScheduledFor)
	if after.AttemptCount != 1 || after.MaxAttempts != 2 || after.LastError != "worker shut down" {
		t.Fatalf("after release: attempt %d of %d, last_error %q", after.AttemptCount, after.MaxAttempts, after.LastError)
	}
	checkClosedAttempt(t, s, task, 1, store.OutcomeRetried, "worker shut down")
	if n := len(deadLettersOf(t, s, task.ID)); n != 0 {
		t.Fatalf("a release wrote %d dead letters", n)
	}
	again := claimID(t, s, task, store.StatusPending, 30*time.Second)
	if again.AttemptCount != 2 {
		t.Fatalf("claim after a release: attempt_count %d", again.AttemptCount)
	}
	// Its budget is spent once a counted attempt fails.
	recordOK(t, s, outcome(again, store.Retry, "boom"), store.StatusDead)

	// A task that came through SQS is PENDING without its message: it is sent again.
	enq := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "sqs-release", Kind: "k", MaxAttempts: 1}))
	enq = claimID(t, s, enq, store.StatusEnqueued, 30*time.Second)
	if after := recordOK(t, s, outcome(enq, store.Release, "x"), store.StatusPending); after.EnqueuedAt != nil || after.MaxAttempts != 2 {
		t.Fatalf("released: enqueued_at %v, max_attempts %d", after.EnqueuedAt, after.MaxAttempts)
	}
	wantHanded(t, "a released task", enqueueAll(t, s, enqueueParams("sqs-release")), enq.ID)
	claimID(t, s, enq, store.StatusEnqueued, 30*time.Second)

	// A cancel request wins, and then the budget stays as it was.
	c := createAndClaim(t, s, store.CreateParams{Kind: "k", MaxAttempts: 1})
	if _, err := s.CancelTask(ctx(t), c.ID); err != nil {
		t.Fatal(err)
	}
	if done := recordOK(t, s, outcome(c, store.Release, "x"), store.StatusCanceled); done.MaxAttempts != 1 {
		t.Fatalf("canceled on release: max_attempts %d", done.MaxAttempts)
	}
}

func testOutcomeFail(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Queue: "q", Kind: "parse", MaxAttempts: 10})
	failed := recordOK(t, s, outcome(task, store.Fail, "bad input: no such user"), store.StatusFailed)
	checkNoLease(t, failed)
	nearNowPtr(t, "CompletedAt", failed.CompletedAt)
	if failed.LastError != "bad input: no such user" || failed.AttemptCount != 1 {
		t.Fatalf("failed task: last_error %q attempt_count %d", failed.LastError, failed.AttemptCount)
	}
	checkClosedAttempt(t, s, task, 1, store.OutcomeFailed, "bad input: no such user")
	evs := deadLettersOf(t, s, task.ID)
	if len(evs) != 1 {
		t.Fatalf("%d dead letters, want 1", len(evs))
	}
	ev := evs[0]
	if ev.Reason != store.StatusFailed || ev.Kind != "parse" || ev.Queue != "q" || ev.WorkerID != task.WorkerID ||
		ev.AttemptCount != 1 || ev.MaxAttempts != 10 || ev.Error != "bad input: no such user" {
		t.Fatalf("dead letter %+v does not match the task", ev)
	}
}

func testOutcomeCancel(t *testing.T, s store.Store) {
	// A Cancel outcome after a cancel request.
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	if _, err := s.CancelTask(ctx(t), task.ID); err != nil {
		t.Fatal(err)
	}
	done := recordOK(t, s, outcome(task, store.Cancel, "context canceled"), store.StatusCanceled)
	checkNoLease(t, done)
	nearNowPtr(t, "CompletedAt", done.CompletedAt)
	checkClosedAttempt(t, s, task, 1, store.OutcomeCanceled, "context canceled")
	if n := len(deadLettersOf(t, s, task.ID)); n != 0 {
		t.Fatalf("a cancel wrote %d dead letters", n)
	}
	// PROCESSING -> CANCELED is legal without a request too (e.g. the worker stopping).
	t2 := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	recordOK(t, s, outcome(t2, store.Cancel, ""), store.StatusCanceled)
}

func testOutcomeStaleToken(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	for _, kind := range []store.OutcomeKind{store.Succeed, store.Retry, store.Release, store.Fail, store.Cancel} {
		o := outcome(task, kind, "x")
		o.LeaseToken = uuid.New()
		r := record(t, s, o)[0]
		wantErr(t, r.Err, store.ErrLeaseLost, "outcome "+string(kind)+" with a wrong token")
	}
	sameTask(t, "task after stale outcomes", get(t, s, task.ID), task)
	// An unknown task holds no lease either.
	r0 := record(t, s, store.Outcome{TaskID: store.NewID(), LeaseToken: uuid.New(), Kind: store.Succeed})[0]
	wantErr(t, r0.Err, store.ErrLeaseLost, "outcome for an unknown task")
	if a := attempts(t, s, task.ID); len(a) != 1 || a[0].FinishedAt != nil {
		t.Fatalf("stale outcomes touched the attempt: %+v", a)
	}
	// The previous claim's token, after the task was retried and claimed again.
	recordOK(t, s, outcome(task, store.Retry, "x"), store.StatusPending)
	again := claimID(t, s, task, store.StatusPending, 30*time.Second)
	r := record(t, s, outcome(task, store.Succeed, ""))[0]
	wantErr(t, r.Err, store.ErrLeaseLost, "Succeed with the previous claim's token")
	sameTask(t, "task after a stale success", get(t, s, task.ID), again)
}

func testOutcomeTwice(t *testing.T, s store.Store) {
	for _, kind := range []store.OutcomeKind{store.Succeed, store.Retry, store.Release, store.Fail, store.Cancel} {
		task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
		o := outcome(task, kind, "err")
		first := record(t, s, o)[0]
		if first.Err != nil {
			t.Fatalf("first %s: %v", kind, first.Err)
		}
		before := get(t, s, task.ID)
		second := record(t, s, o)[0]
		wantErr(t, second.Err, store.ErrLeaseLost, "recording "+string(kind)+" twice")
		sameTask(t, "task after the repeated outcome", get(t, s, task.ID), before)
		if a := attempts(t, s, task.ID); len(a) != 1 {
			t.Fatalf("%d attempt rows", len(a))
		}
	}
	// Twice within one batch.
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	res := record(t, s, outcome(task, store.Succeed, ""), outcome(task, store.Succeed, ""))
	if res[0].Err != nil || res[0].Status != store.StatusSucceeded {
		t.Fatalf("first of a doubled batch: %+v", res[0])
	}
	wantErr(t, res[1].Err, store.ErrLeaseLost, "second success in one batch")
}

func testOutcomeMixedBatch(t *testing.T, s store.Store) {
	mk := func(maxAttempts int) *store.Task {
		return createAndClaim(t, s, store.CreateParams{Kind: "k", MaxAttempts: maxAttempts})
	}
	succ, retry, dead, fail, cancel, stale, enq := mk(5), mk(5), mk(1), mk(5), mk(5), mk(5), mk(5)
	staleOutcome := outcome(stale, store.Succeed, "")
	staleOutcome.LeaseToken = uuid.New()
	enqOutcome := outcome(enq, store.Retry, "e")
	outcomes := []store.Outcome{
		outcome(fail, store.Fail, "f"),
		staleOutcome,
		outcome(succ, store.Succeed, ""),
		outcome(dead, store.Retry, "d"),
		enqOutcome,
		outcome(retry, store.Retry, "r"),
		outcome(cancel, store.Cancel, "c"),
	}
	want := []store.Status{store.StatusFailed, "", store.StatusSucceeded, store.StatusDead, store.StatusPending, store.StatusPending, store.StatusCanceled}
	res := record(t, s, outcomes...)
	for i, r := range res {
		if want[i] == "" {
			wantErr(t, r.Err, store.ErrLeaseLost, "stale outcome in a batch")
			if got := get(t, s, r.TaskID); got.Status != store.StatusProcessing {
				t.Fatalf("stale outcome changed the task to %s", got.Status)
			}
			continue
		}
		if r.Err != nil || r.Status != want[i] {
			t.Fatalf("result %d: status %s err %v, want %s", i, r.Status, r.Err, want[i])
		}
		if got := get(t, s, r.TaskID); got.Status != want[i] {
			t.Fatalf("task %d is %s, want %s", i, got.Status, want[i])
		}
	}
	res, err := s.RecordOutcomes(ctx(t), nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("RecordOutcomes(nil) = %v, %v", res, err)
	}
}

func testOutcomeLongError(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	long := "panic: " + strings.Repeat("stack frame\n", 4*store.MaxErrorMessageLength/12)
	after := recordOK(t, s, outcome(task, store.Fail, long), store.StatusFailed)
	limit := store.MaxErrorMessageLength + len("…(truncated)")
	if len(after.LastError) > limit || !strings.HasPrefix(after.LastError, "panic: stack frame") {
		t.Fatalf("last_error of %d bytes for a %d-byte error, want it truncated to at most %d", len(after.LastError), len(long), limit)
	}
	if a := lastAttempt(t, s, task.ID); len(a.Error) > limit {
		t.Fatalf("attempt error of %d bytes, want at most %d", len(a.Error), limit)
	}
	if ev := deadLettersOf(t, s, task.ID); len(ev) != 1 || len(ev[0].Error) > limit {
		t.Fatalf("dead letter error not truncated")
	}
}

func testOutcomeInvalid(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	other := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	bad := []store.Outcome{
		{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: "explode"},
		{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: ""},
		{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Retry, RetryIn: -time.Second},
	}
	for _, o := range bad {
		// Bad input fails the whole call and writes nothing, valid outcomes included.
		_, err := s.RecordOutcomes(ctx(t), []store.Outcome{outcome(other, store.Succeed, ""), o})
		wantErr(t, err, store.ErrInvalid, "RecordOutcomes with kind "+string(o.Kind))
	}
	sameTask(t, "task after invalid outcomes", get(t, s, task.ID), task)
	sameTask(t, "other task after invalid outcomes", get(t, s, other.ID), other)
}

var cancelTests = []testCase{
	{"Pending", testCancelPending},
	{"Enqueued", testCancelEnqueued},
	{"ProcessingRequestsCancel", testCancelProcessing},
	{"RequestedThenRetryOrFailRecordsCanceled", testCancelThenRetryOrFail},
	{"RequestedThenSucceedStillSucceeds", testCancelThenSucceed},
	{"AlreadyCanceledUnchanged", testCancelTwice},
	{"TerminalIllegal", testCancelTerminal},
	{"NotFound", testCancelNotFound},
}

func testCancelPending(t *testing.T, s store.Store) {
	task := createOne(t, s, store.CreateParams{Kind: "k", ScheduledFor: time.Now().Add(time.Hour)})
	got, err := s.CancelTask(ctx(t), task.ID)
	if err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	if got.Status != store.StatusCanceled || got.AttemptCount != 0 {
		t.Fatalf("canceled PENDING task: status %s attempt_count %d", got.Status, got.AttemptCount)
	}
	nearNowPtr(t, "CompletedAt", got.CompletedAt)
	checkNoLease(t, got)
	sameTask(t, "GetTask after cancel", get(t, s, task.ID), got)
	if n := len(deadLettersOf(t, s, task.ID)); n != 0 {
		t.Fatalf("cancel wrote %d dead letters", n)
	}
	if a := attempts(t, s, task.ID); len(a) != 0 {
		t.Fatalf("cancel of a never-run task wrote attempts: %+v", a)
	}
	// Canceled tasks are never claimed, even when due.
	t2 := createOne(t, s, store.CreateParams{Kind: "k"})
	if _, err := s.CancelTask(ctx(t), t2.ID); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, s, claimParams("default", 10)); len(got) != 0 {
		t.Fatal("a CANCELED task was claimed")
	}
}

func testCancelEnqueued(t *testing.T, s store.Store) {
	task := sendOnce(t, s, createOne(t, s, store.CreateParams{Kind: "k"}))
	got, err := s.CancelTask(ctx(t), task.ID)
	if err != nil || got.Status != store.StatusCanceled {
		t.Fatalf("CancelTask of an ENQUEUED task: %v, %v", got, err)
	}
	p := claimParams("default", 10)
	p.From = store.StatusEnqueued
	if got := claim(t, s, p); len(got) != 0 {
		t.Fatal("a CANCELED task was claimed From ENQUEUED")
	}
}

func testCancelProcessing(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	got, err := s.CancelTask(ctx(t), task.ID)
	if err != nil {
		t.Fatalf("CancelTask of a PROCESSING task: %v", err)
	}
	if got.Status != store.StatusProcessing || got.LeaseToken != task.LeaseToken || got.WorkerID != task.WorkerID {
		t.Fatalf("cancel of a PROCESSING task changed it: %+v", got)
	}
	nearNowPtr(t, "CancelRequestedAt", got.CancelRequestedAt)
	isNil(t, "CompletedAt", got.CompletedAt)
	sameTask(t, "GetTask after cancel request", get(t, s, task.ID), got)
	// Asking again is harmless.
	again, err := s.CancelTask(ctx(t), task.ID)
	if err != nil || again.Status != store.StatusProcessing || again.CancelRequestedAt == nil {
		t.Fatalf("second cancel request: %+v, %v", again, err)
	}
}

func testCancelThenRetryOrFail(t *testing.T, s store.Store) {
	for _, kind := range []store.OutcomeKind{store.Retry, store.Fail} {
		for _, maxAttempts := range []int{1, 5} { // exhausted or not: the cancel wins
			task := createAndClaim(t, s, store.CreateParams{Kind: "k", MaxAttempts: maxAttempts})
			if _, err := s.CancelTask(ctx(t), task.ID); err != nil {
				t.Fatal(err)
			}
			o := outcome(task, kind, "handler stopped")
			o.RetryIn = time.Hour
			done := recordOK(t, s, o, store.StatusCanceled)
			checkNoLease(t, done)
			nearNowPtr(t, "CompletedAt", done.CompletedAt)
			checkClosedAttempt(t, s, task, 1, store.OutcomeCanceled, "handler stopped")
			if n := len(deadLettersOf(t, s, task.ID)); n != 0 {
				t.Fatalf("%s of a cancel-requested task wrote %d dead letters", kind, n)
			}
		}
	}
}

func testCancelThenSucceed(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	if _, err := s.CancelTask(ctx(t), task.ID); err != nil {
		t.Fatal(err)
	}
	recordOK(t, s, outcome(task, store.Succeed, ""), store.StatusSucceeded)
	checkClosedAttempt(t, s, task, 1, store.OutcomeSucceeded, "")
}

func testCancelTwice(t *testing.T, s store.Store) {
	task := createOne(t, s, store.CreateParams{Kind: "k"})
	first, err := s.CancelTask(ctx(t), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.CancelTask(ctx(t), task.ID)
	if err != nil {
		t.Fatalf("canceling a CANCELED task: %v, want no error", err)
	}
	sameTask(t, "second cancel", second, first)
	sameTask(t, "GetTask after the second cancel", get(t, s, task.ID), first)
}

func testCancelTerminal(t *testing.T, s store.Store) {
	for _, status := range []store.Status{store.StatusSucceeded, store.StatusDead, store.StatusFailed} {
		task := driveTo(t, s, store.CreateParams{Kind: "k"}, status)
		_, err := s.CancelTask(ctx(t), task.ID)
		wantErr(t, err, store.ErrIllegalTransition, "CancelTask of a "+string(status)+" task")
		sameTask(t, "task after an illegal cancel", get(t, s, task.ID), task)
	}
}

func testCancelNotFound(t *testing.T, s store.Store) {
	_, err := s.CancelTask(ctx(t), store.NewID())
	wantErr(t, err, store.ErrNotFound, "CancelTask of an unknown task")
}

var replayTests = []testCase{
	{"TerminalFailuresBackToPending", testReplay},
	{"IllegalFromOtherStatuses", testReplayIllegal},
	{"NotFound", testReplayNotFound},
	{"IdempotencyKeyConflict", testReplayConflict},
	{"RepeatedDeadAndReplay", testReplayRepeated},
}

func testReplay(t *testing.T, s store.Store) {
	for _, status := range []store.Status{store.StatusDead, store.StatusFailed, store.StatusCanceled} {
		q := "replay-" + strings.ToLower(string(status))
		old := driveTo(t, s, store.CreateParams{Queue: q, Kind: "k", MaxAttempts: 3, IdempotencyKey: q}, status)
		oldAttempts := attempts(t, s, old.ID)
		got, err := s.ReplayTask(ctx(t), old.ID)
		if err != nil {
			t.Fatalf("ReplayTask of a %s task: %v", status, err)
		}
		if got.Status != store.StatusPending || got.AttemptCount != 0 || got.MaxAttempts != old.MaxAttempts || got.IdempotencyKey != q {
			t.Fatalf("replayed %s task: status %s attempt_count %d max %d key %q", status, got.Status, got.AttemptCount, got.MaxAttempts, got.IdempotencyKey)
		}
		nearNow(t, "ScheduledFor of a replayed task", got.ScheduledFor)
		checkNoLease(t, got)
		isNil(t, "CompletedAt of a replayed task", got.CompletedAt)
		isNil(t, "CancelRequestedAt of a replayed task", got.CancelRequestedAt)
		if got.LastError != "" {
			t.Fatalf("replayed task keeps last_error %q; a replay starts afresh (the history keeps it)", got.LastError)
		}
		sameTask(t, "GetTask after replay", get(t, s, old.ID), got)

		a := attempts(t, s, old.ID)
		if len(a) != len(oldAttempts)+1 {
			t.Fatalf("replay of a %s task: %d attempt rows, want %d", status, len(a), len(oldAttempts)+1)
		}
		ev := a[len(a)-1]
		if ev.Outcome != store.OutcomeReplayed || ev.Attempt != old.AttemptCount || ev.Error != "replayed from "+string(status) ||
			ev.WorkerID != "" || ev.LeaseToken != uuid.Nil || ev.TaskID != old.ID {
			t.Fatalf("replay event %+v, want REPLAYED at attempt %d with error %q", ev, old.AttemptCount, "replayed from "+string(status))
		}
		nearNow(t, "replay event StartedAt", ev.StartedAt)
		nearNowPtr(t, "replay event FinishedAt", ev.FinishedAt)

		if status != store.StatusCanceled {
			dl := deadLettersOf(t, s, old.ID)
			if len(dl) != 1 {
				t.Fatalf("%d dead letters, want 1", len(dl))
			}
			nearNowPtr(t, "dead letter ReplayedAt", dl[0].ReplayedAt)
		}
		// The replayed task holds its key again.
		if r := create(t, s, store.CreateParams{Kind: "k", IdempotencyKey: q}); !r[0].Existing || r[0].Task.ID != old.ID {
			t.Fatalf("after replay the key %q does not name the replayed task", q)
		}
		// And it runs again with a fresh budget.
		p := claimParams(q, 10)
		c := claim(t, s, p)
		if len(c) != 1 || c[0].ID != old.ID || c[0].AttemptCount != 1 {
			t.Fatalf("claim after replay: %v", ids(c))
		}
		recordOK(t, s, outcome(c[0], store.Succeed, ""), store.StatusSucceeded)
	}
}

func testReplayIllegal(t *testing.T, s store.Store) {
	pending := createOne(t, s, store.CreateParams{Kind: "k"})
	processing := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	succeeded := driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusSucceeded)
	enq := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "replay-enq", Kind: "k"}))
	for _, task := range []*store.Task{pending, processing, succeeded, enq} {
		_, err := s.ReplayTask(ctx(t), task.ID)
		wantErr(t, err, store.ErrIllegalTransition, "ReplayTask of a "+string(task.Status)+" task")
		sameTask(t, "task after an illegal replay", get(t, s, task.ID), task)
	}
}

func testReplayNotFound(t *testing.T, s store.Store) {
	_, err := s.ReplayTask(ctx(t), store.NewID())
	wantErr(t, err, store.ErrNotFound, "ReplayTask of an unknown task")
}

func testReplayConflict(t *testing.T, s store.Store) {
	old := driveTo(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "held"}, store.StatusFailed)
	newer := createOne(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "held"})
	_, err := s.ReplayTask(ctx(t), old.ID)
	wantErr(t, err, store.ErrConflict, "replaying a task whose key a newer live task holds")
	sameTask(t, "old task after a conflicting replay", get(t, s, old.ID), old)
	if a := attempts(t, s, old.ID); a[len(a)-1].Outcome == store.OutcomeReplayed {
		t.Fatal("a failed replay recorded a REPLAYED event")
	}
	if dl := deadLettersOf(t, s, old.ID); len(dl) != 1 || dl[0].ReplayedAt != nil {
		t.Fatalf("a failed replay touched the dead letter: %+v", dl)
	}
	// Once the newer task is canceled, the old one may be replayed.
	if _, err := s.CancelTask(ctx(t), newer.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplayTask(ctx(t), old.ID); err != nil {
		t.Fatalf("replay after the key was freed: %v", err)
	}
}

func testReplayRepeated(t *testing.T, s store.Store) {
	task := createOne(t, s, store.CreateParams{Kind: "k", MaxAttempts: 1})
	for round := 1; round <= 3; round++ {
		c := claimID(t, s, task, store.StatusPending, 30*time.Second)
		if c.AttemptCount != 1 {
			t.Fatalf("round %d: attempt_count %d after claim", round, c.AttemptCount)
		}
		recordOK(t, s, outcome(c, store.Retry, "boom"), store.StatusDead)
		if _, err := s.ReplayTask(ctx(t), task.ID); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	dl := deadLettersOf(t, s, task.ID)
	if len(dl) != 3 {
		t.Fatalf("%d dead letters after 3 deaths, want 3", len(dl))
	}
	for _, ev := range dl {
		if ev.ReplayedAt == nil {
			t.Fatalf("dead letter %d not marked replayed", ev.ID)
		}
	}
	var outcomes []store.AttemptOutcome
	for _, a := range attempts(t, s, task.ID) {
		outcomes = append(outcomes, a.Outcome)
	}
	want := []store.AttemptOutcome{store.OutcomeDead, store.OutcomeReplayed, store.OutcomeDead, store.OutcomeReplayed, store.OutcomeDead, store.OutcomeReplayed}
	if len(outcomes) != len(want) {
		t.Fatalf("attempt outcomes %v, want %v", outcomes, want)
	}
	for i := range want {
		if outcomes[i] != want[i] {
			t.Fatalf("attempt outcomes %v, want %v", outcomes, want)
		}
	}
}

var reapTests = []testCase{
	{"ExpiredBackToPending", testReapExpired},
	{"ExhaustedGoesDead", testReapExhausted},
	{"CancelRequestedGoesCanceled", testReapCancelRequested},
	{"UnexpiredUntouched", testReapUnexpired},
	{"SentTaskBackToPending", testReapSent},
	{"LimitRespected", testReapLimit},
	{"HeldTasksSkipped", testReapHeld},
	{"FullJitterBackoff", testReapBackoff},
	{"InvalidParams", testReapInvalid},
}

func testReapInvalid(t *testing.T, s store.Store) {
	task := claimID(t, s, createOne(t, s, store.CreateParams{Kind: "k"}), store.StatusPending, shortLease)
	waitExpiredLeases(t, s, "default", 1)
	for name, p := range map[string]store.ReapParams{
		"limit 0":               {},
		"negative limit":        {Limit: -1},
		"negative backoff base": {Limit: 10, BackoffBase: -time.Second},
		"negative backoff max":  {Limit: 10, BackoffMax: -time.Second},
	} {
		n, err := s.ReapExpiredLeases(ctx(t), p)
		wantErr(t, err, store.ErrInvalid, "ReapExpiredLeases with "+name)
		if n != 0 {
			t.Fatalf("ReapExpiredLeases with %s reaped %d", name, n)
		}
	}
	sameTask(t, "task after invalid reaps", get(t, s, task.ID), task)
}

// shortLease is the lease used to make a task's lease expire in the reap tests.
const shortLease = 100 * time.Millisecond

func testReapExpired(t *testing.T, s store.Store) {
	task := claimID(t, s, createOne(t, s, store.CreateParams{Kind: "k", MaxAttempts: 3}), store.StatusPending, shortLease)
	reapUntil(t, s, store.ReapParams{Limit: 10}, 1)
	after := get(t, s, task.ID)
	if after.Status != store.StatusPending || after.AttemptCount != 1 {
		t.Fatalf("reaped task: status %s attempt_count %d, want PENDING 1", after.Status, after.AttemptCount)
	}
	checkNoLease(t, after)
	isNil(t, "CompletedAt", after.CompletedAt)
	if after.LastError == "" {
		t.Fatal("a reaped task has no last_error saying why")
	}
	nearNow(t, "ScheduledFor with zero backoff", after.ScheduledFor)
	a := lastAttempt(t, s, task.ID)
	if a.Attempt != 1 || a.Outcome != store.OutcomeLeaseExpired || a.LeaseToken != task.LeaseToken {
		t.Fatalf("attempt after reap: %+v, want LEASE_EXPIRED", a)
	}
	nearNowPtr(t, "attempt FinishedAt", a.FinishedAt)

	// The vanished worker's late writes are fenced off.
	r := record(t, s, outcome(task, store.Succeed, ""))[0]
	wantErr(t, r.Err, store.ErrLeaseLost, "Succeed with a reaped lease")
	_, err := s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: task.ID, LeaseToken: task.LeaseToken, LeaseDuration: time.Minute})
	wantErr(t, err, store.ErrLeaseLost, "Heartbeat with a reaped lease")
	sameTask(t, "task after fenced writes", get(t, s, task.ID), after)

	// Another worker takes it over; the old token still cannot write.
	again := claimID(t, s, task, store.StatusPending, 30*time.Second)
	if again.AttemptCount != 2 || again.LeaseToken == task.LeaseToken {
		t.Fatalf("claim after reap: attempt_count %d", again.AttemptCount)
	}
	r = record(t, s, outcome(task, store.Fail, "late"))[0]
	wantErr(t, r.Err, store.ErrLeaseLost, "Fail with a reaped lease after a new claim")
	recordOK(t, s, outcome(again, store.Succeed, ""), store.StatusSucceeded)
	if n, err := s.ReapExpiredLeases(ctx(t), store.ReapParams{Limit: 10}); err != nil || n != 0 {
		t.Fatalf("nothing left to reap: %d, %v", n, err)
	}
}

func testReapExhausted(t *testing.T, s store.Store) {
	task := createOne(t, s, store.CreateParams{Queue: "rq", Kind: "rk", MaxAttempts: 1})
	c := claimID(t, s, task, store.StatusPending, shortLease)
	reapUntil(t, s, store.ReapParams{Limit: 10}, 1)
	dead := get(t, s, task.ID)
	if dead.Status != store.StatusDead {
		t.Fatalf("reaped task with attempts exhausted: %s, want DEAD", dead.Status)
	}
	checkNoLease(t, dead)
	nearNowPtr(t, "CompletedAt", dead.CompletedAt)
	if a := lastAttempt(t, s, task.ID); a.FinishedAt == nil || a.Outcome == "" {
		t.Fatalf("attempt not closed: %+v", a)
	}
	dl := deadLettersOf(t, s, task.ID)
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	if ev := dl[0]; ev.Reason != store.StatusDead || ev.Queue != "rq" || ev.Kind != "rk" || ev.WorkerID != c.WorkerID ||
		ev.AttemptCount != 1 || ev.MaxAttempts != 1 || ev.Error != dead.LastError || ev.Error == "" {
		t.Fatalf("dead letter %+v does not match the task (last_error %q)", ev, dead.LastError)
	}
	r := record(t, s, outcome(c, store.Succeed, ""))[0]
	wantErr(t, r.Err, store.ErrLeaseLost, "Succeed after the task was reaped DEAD")
}

func testReapCancelRequested(t *testing.T, s store.Store) {
	task := claimID(t, s, createOne(t, s, store.CreateParams{Kind: "k"}), store.StatusPending, shortLease)
	if _, err := s.CancelTask(ctx(t), task.ID); err != nil {
		t.Fatal(err)
	}
	reapUntil(t, s, store.ReapParams{Limit: 10}, 1)
	got := get(t, s, task.ID)
	if got.Status != store.StatusCanceled {
		t.Fatalf("reaped cancel-requested task: %s, want CANCELED", got.Status)
	}
	checkNoLease(t, got)
	nearNowPtr(t, "CompletedAt", got.CompletedAt)
	if a := lastAttempt(t, s, task.ID); a.FinishedAt == nil || a.Outcome == "" {
		t.Fatalf("attempt not closed: %+v", a)
	}
	if n := len(deadLettersOf(t, s, task.ID)); n != 0 {
		t.Fatalf("%d dead letters for a canceled task", n)
	}
}

func testReapUnexpired(t *testing.T, s store.Store) {
	long := createAndClaim(t, s, store.CreateParams{Kind: "long"})
	short := claimID(t, s, createOne(t, s, store.CreateParams{Kind: "short"}), store.StatusPending, shortLease)
	reapUntil(t, s, store.ReapParams{Limit: 10}, 1)
	if got := get(t, s, short.ID); got.Status != store.StatusPending {
		t.Fatalf("expired task: %s", got.Status)
	}
	sameTask(t, "unexpired task after reaping", get(t, s, long.ID), long)
	if _, err := s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: long.ID, LeaseToken: long.LeaseToken, LeaseDuration: time.Minute}); err != nil {
		t.Fatalf("heartbeat of the unexpired task: %v", err)
	}
	// A heartbeat keeps a short lease alive.
	hb := claimID(t, s, createOne(t, s, store.CreateParams{Kind: "hb"}), store.StatusPending, time.Second)
	if _, err := s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: hb.ID, LeaseToken: hb.LeaseToken, LeaseDuration: time.Hour}); err != nil {
		t.Fatal(err)
	}
	short2 := claimID(t, s, get(t, s, short.ID), store.StatusPending, shortLease)
	reapUntil(t, s, store.ReapParams{Limit: 10}, 1)
	if got := get(t, s, short2.ID); got.Status != store.StatusPending {
		t.Fatalf("expired task: %s", got.Status)
	}
	if got := get(t, s, hb.ID); got.Status != store.StatusProcessing || got.LeaseToken != hb.LeaseToken {
		t.Fatalf("heartbeated task was reaped: %s", got.Status)
	}
}

// testReapSent: a task that came through SQS is reaped to PENDING too, without its
// message, so that the workers of its queue find it whatever its queue's mode is now.
func testReapSent(t *testing.T, s store.Store) {
	task := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "reap-sqs", Kind: "k"}))
	claimID(t, s, task, store.StatusEnqueued, shortLease)
	reapUntil(t, s, store.ReapParams{Limit: 10}, 1)
	got := get(t, s, task.ID)
	if got.Status != store.StatusPending {
		t.Fatalf("reaped task of SQS mode: %s, want PENDING", got.Status)
	}
	checkNoLease(t, got)
	isNil(t, "EnqueuedAt of a reaped task", got.EnqueuedAt)
	again := claimID(t, s, got, store.StatusPending, 30*time.Second)
	if again.AttemptCount != 2 {
		t.Fatalf("attempt_count %d", again.AttemptCount)
	}
}

func testReapLimit(t *testing.T, s store.Store) {
	tasks := createN(t, s, "lim", "k", 3)
	for _, task := range tasks {
		claimID(t, s, task, store.StatusPending, shortLease)
	}
	waitExpiredLeases(t, s, "lim", 3)
	for _, want := range []int{2, 1, 0} {
		n, err := s.ReapExpiredLeases(ctx(t), store.ReapParams{Limit: 2})
		if err != nil || n != want {
			t.Fatalf("ReapExpiredLeases(limit 2) = %d, %v; want %d", n, err, want)
		}
	}
	for _, task := range tasks {
		if got := get(t, s, task.ID); got.Status != store.StatusPending {
			t.Fatalf("task %s: %s", task.ID, got.Status)
		}
	}
}

// testReapHeld: a task the caller holds (ReapParams.HeldTaskIDs: its outcome is on its
// way) is not reaped even though its lease expired, and its outcome is then written;
// the others are reaped as usual.
func testReapHeld(t *testing.T, s store.Store) {
	tasks := createN(t, s, "held", "k", 3)
	var claimed []*store.Task
	for _, task := range tasks {
		claimed = append(claimed, claimID(t, s, task, store.StatusPending, shortLease))
	}
	waitExpiredLeases(t, s, "held", 3)
	held := []uuid.UUID{claimed[0].ID, claimed[2].ID}
	n, err := s.ReapExpiredLeases(ctx(t), store.ReapParams{Limit: 10, HeldTaskIDs: held})
	if err != nil || n != 1 {
		t.Fatalf("ReapExpiredLeases(2 of 3 held) = %d, %v; want 1", n, err)
	}
	if got := get(t, s, claimed[1].ID); got.Status != store.StatusPending {
		t.Fatalf("the task not held: %s, want PENDING (reaped)", got.Status)
	}
	for _, c := range []*store.Task{claimed[0], claimed[2]} {
		if got := get(t, s, c.ID); got.Status != store.StatusProcessing || got.LeaseToken != c.LeaseToken {
			t.Fatalf("held task %s was reaped: %s", c.ID, got.Status)
		}
	}
	recordOK(t, s, outcome(claimed[0], store.Succeed, ""), store.StatusSucceeded)
	// Once no longer held, an expired lease is reaped again.
	if n, err := s.ReapExpiredLeases(ctx(t), store.ReapParams{Limit: 10}); err != nil || n != 1 {
		t.Fatalf("ReapExpiredLeases(none held) = %d, %v; want 1", n, err)
	}
}

func testReapBackoff(t *testing.T, s store.Store) {
	const n = 6
	const ceiling = 1000 * time.Hour
	tasks := createN(t, s, "bo", "k", n)
	for _, task := range tasks {
		claimID(t, s, task, store.StatusPending, shortLease)
	}
	waitExpiredLeases(t, s, "bo", n)
	reapUntil(t, s, store.ReapParams{Limit: 100, BackoffBase: ceiling, BackoffMax: ceiling}, n)
	seen := map[time.Time]bool{}
	for _, task := range tasks {
		got := get(t, s, task.ID)
		if got.Status != store.StatusPending {
			t.Fatalf("status %s", got.Status)
		}
		now := time.Now()
		if got.ScheduledFor.Before(now.Add(-clockSkew)) || got.ScheduledFor.After(now.Add(ceiling+clockSkew)) {
			t.Fatalf("ScheduledFor %s outside [now, now+%s]", got.ScheduledFor, ceiling)
		}
		seen[got.ScheduledFor.Truncate(time.Second)] = true
	}
	if len(seen) < n/2 {
		t.Fatalf("%d tasks reaped with full jitter got only %d distinct retry times", n, len(seen))
	}
	if c := claim(t, s, claimParams("bo", 10)); len(c) != 0 {
		t.Fatalf("claimed %d tasks that are backing off for up to %s", len(c), ceiling)
	}
}
