package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/store"
)

func TestClaimTasks(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	now := dbNow(t, pool)
	tasks := mustCreate(t, st,
		store.CreateParams{Kind: "late", ScheduledFor: now.Add(-time.Minute)},
		store.CreateParams{Kind: "urgent", Priority: 5},
		store.CreateParams{Kind: "early", ScheduledFor: now.Add(-time.Hour)},
		store.CreateParams{Kind: "future", ScheduledFor: now.Add(time.Hour)},
		store.CreateParams{Kind: "elsewhere", Queue: "other"},
		store.CreateParams{Kind: "exhausted", MaxAttempts: 2},
	)
	exec(t, pool, `UPDATE rota.tasks SET attempt_count = 2 WHERE id = $1`, tasks[5].ID)

	claimed := mustClaim(t, st, store.ClaimParams{WorkerID: "w1", Limit: 2, LeaseDuration: 30 * time.Second})
	if len(claimed) != 2 || claimed[0].Kind != "urgent" || claimed[1].Kind != "early" {
		t.Fatalf("claimed %v, want urgent then early", kinds(claimed))
	}
	c := claimed[0]
	if c.Status != store.StatusProcessing || c.WorkerID != "w1" || c.LeaseToken == uuid.Nil || c.AttemptCount != 1 ||
		c.LeaseExpiresAt == nil || c.ProcessingStartedAt == nil {
		t.Fatalf("claimed task %+v", c)
	}
	if d := c.LeaseExpiresAt.Sub(*c.ProcessingStartedAt); d != 30*time.Second {
		t.Errorf("lease runs %s from the claim, want 30s", d)
	}
	if claimed[0].LeaseToken == claimed[1].LeaseToken {
		t.Error("two claims share a lease token")
	}
	attempts := mustAttempts(t, st, c.ID)
	if len(attempts) != 1 || attempts[0].Attempt != 1 || attempts[0].WorkerID != "w1" || attempts[0].LeaseToken != c.LeaseToken ||
		attempts[0].FinishedAt != nil || attempts[0].Outcome != "" || !attempts[0].StartedAt.Equal(*c.ProcessingStartedAt) {
		t.Errorf("attempts %+v", attempts)
	}

	rest := mustClaim(t, st, store.ClaimParams{WorkerID: "w2"})
	if len(rest) != 1 || rest[0].Kind != "late" {
		t.Errorf("second claim got %v, want late (future, other queue and exhausted tasks stay)", kinds(rest))
	}
	if other := mustClaim(t, st, store.ClaimParams{Queue: "other"}); len(other) != 1 || other[0].Kind != "elsewhere" {
		t.Errorf("queue other: %v", kinds(other))
	}
	if none := mustClaim(t, st, store.ClaimParams{}); len(none) != 0 {
		t.Errorf("nothing due, yet claimed %v", kinds(none))
	}

	for _, p := range []store.ClaimParams{
		{From: store.StatusProcessing, WorkerID: "w", Limit: 1, LeaseDuration: time.Second},
		{From: store.StatusPending, Limit: 1, LeaseDuration: time.Second},
		{From: store.StatusPending, WorkerID: "w", LeaseDuration: time.Second},
		{From: store.StatusPending, WorkerID: "w", Limit: 1},
	} {
		if _, err := st.ClaimTasks(ctx, p); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ClaimTasks(%+v) = %v, want ErrInvalid", p, err)
		}
	}
}

func kinds(tasks []*store.Task) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t.Kind
	}
	return out
}

func TestClaimEnqueuedByID(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	tasks := mustCreate(t, st, store.CreateParams{Kind: "a"}, store.CreateParams{Kind: "b"}, store.CreateParams{Kind: "c"})
	exec(t, pool, `UPDATE rota.tasks SET status = 'ENQUEUED', enqueued_at = now()`)

	if got := mustClaim(t, st, store.ClaimParams{}); len(got) != 0 {
		t.Errorf("claim from PENDING got %v", kinds(got))
	}
	got := mustClaim(t, st, store.ClaimParams{From: store.StatusEnqueued, TaskIDs: []uuid.UUID{tasks[1].ID, store.NewID()}, Limit: 5})
	if len(got) != 1 || got[0].ID != tasks[1].ID || got[0].Status != store.StatusProcessing {
		t.Fatalf("claim by id got %+v", got)
	}
	// The same id again: someone holds it.
	if again := mustClaim(t, st, store.ClaimParams{From: store.StatusEnqueued, TaskIDs: []uuid.UUID{tasks[1].ID}}); len(again) != 0 {
		t.Errorf("claimed a PROCESSING task again: %v", kinds(again))
	}
	// The wrong queue or status claims nothing.
	if none := mustClaim(t, st, store.ClaimParams{Queue: "other", From: store.StatusEnqueued, TaskIDs: []uuid.UUID{tasks[0].ID}}); len(none) != 0 {
		t.Errorf("claimed across queues: %v", kinds(none))
	}
	if none := mustClaim(t, st, store.ClaimParams{TaskIDs: []uuid.UUID{tasks[0].ID}}); len(none) != 0 {
		t.Errorf("claimed an ENQUEUED task from PENDING: %v", kinds(none))
	}
	rest := mustClaim(t, st, store.ClaimParams{From: store.StatusEnqueued})
	if len(rest) != 2 {
		t.Errorf("claim from ENQUEUED got %v, want a and c", kinds(rest))
	}
}

// TestClaimConcurrent: claimers racing over one queue never get the same task.
func TestClaimConcurrent(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	const n = 300
	params := make([]store.CreateParams, n)
	for i := range params {
		params[i] = store.CreateParams{Kind: "noop", Priority: i % 3}
	}
	mustCreate(t, st, params...)

	var mu sync.Mutex
	seen := map[uuid.UUID]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for {
				tasks, err := st.ClaimTasks(context.Background(), store.ClaimParams{
					From: store.StatusPending, WorkerID: "w" + string(rune('a'+w)), Limit: 7, LeaseDuration: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				if len(tasks) == 0 {
					return
				}
				mu.Lock()
				for _, task := range tasks {
					seen[task.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct tasks claimed, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("task %s claimed %d times", id, c)
		}
	}
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()
	c := claimOnly(t, st, store.CreateParams{Kind: "noop"})

	hb, err := st.Heartbeat(ctx, store.HeartbeatParams{TaskID: c.ID, LeaseToken: c.LeaseToken, LeaseDuration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !hb.LeaseExpiresAt.After(*c.LeaseExpiresAt) || hb.LeaseToken != c.LeaseToken || hb.Status != store.StatusProcessing {
		t.Errorf("heartbeat: %+v", hb)
	}
	if _, err := st.CancelTask(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	hb, err = st.Heartbeat(ctx, store.HeartbeatParams{TaskID: c.ID, LeaseToken: c.LeaseToken, LeaseDuration: time.Hour})
	if err != nil || hb.CancelRequestedAt == nil {
		t.Errorf("heartbeat after a cancel request: %+v, %v; want CancelRequestedAt", hb, err)
	}
	if _, err := st.Heartbeat(ctx, store.HeartbeatParams{TaskID: c.ID, LeaseToken: store.NewID(), LeaseDuration: time.Hour}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("wrong token: %v, want ErrLeaseLost", err)
	}
	if _, err := st.Heartbeat(ctx, store.HeartbeatParams{TaskID: store.NewID(), LeaseToken: c.LeaseToken, LeaseDuration: time.Hour}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown task: %v, want ErrNotFound", err)
	}
	if _, err := st.Heartbeat(ctx, store.HeartbeatParams{TaskID: c.ID, LeaseToken: c.LeaseToken}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("no lease duration: %v, want ErrInvalid", err)
	}
	res, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: c.ID, LeaseToken: c.LeaseToken, Kind: store.Cancel}})
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	if _, err := st.Heartbeat(ctx, store.HeartbeatParams{TaskID: c.ID, LeaseToken: c.LeaseToken, LeaseDuration: time.Hour}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("finished task: %v, want ErrLeaseLost", err)
	}
}

func TestRecordOutcomes(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	now := dbNow(t, pool)

	type tc struct {
		name        string
		create      store.CreateParams
		cancelFirst bool
		outcome     store.Outcome
		status      store.Status
		attempt     store.AttemptOutcome
		deadLetter  bool
	}
	cases := []tc{
		{name: "succeed", outcome: store.Outcome{Kind: store.Succeed}, status: store.StatusSucceeded, attempt: store.OutcomeSucceeded},
		{name: "retry", outcome: store.Outcome{Kind: store.Retry, Error: "try again", RetryIn: time.Hour}, status: store.StatusPending, attempt: store.OutcomeRetried},
		{name: "retry now", outcome: store.Outcome{Kind: store.Retry, Error: "again"}, status: store.StatusPending, attempt: store.OutcomeRetried},
		{name: "retry exhausted", create: store.CreateParams{MaxAttempts: 1}, outcome: store.Outcome{Kind: store.Retry, Error: "last"}, status: store.StatusDead, attempt: store.OutcomeDead, deadLetter: true},
		{name: "fail", outcome: store.Outcome{Kind: store.Fail, Error: "permanent"}, status: store.StatusFailed, attempt: store.OutcomeFailed, deadLetter: true},
		{name: "cancel", cancelFirst: true, outcome: store.Outcome{Kind: store.Cancel, Error: "canceled"}, status: store.StatusCanceled, attempt: store.OutcomeCanceled},
		{name: "retry after cancel request", cancelFirst: true, outcome: store.Outcome{Kind: store.Retry, Error: "ctx canceled"}, status: store.StatusCanceled, attempt: store.OutcomeCanceled},
		{name: "fail after cancel request", cancelFirst: true, outcome: store.Outcome{Kind: store.Fail, Error: "ctx canceled"}, status: store.StatusCanceled, attempt: store.OutcomeCanceled},
		{name: "succeed after cancel request", cancelFirst: true, outcome: store.Outcome{Kind: store.Succeed}, status: store.StatusSucceeded, attempt: store.OutcomeSucceeded},
	}
	var outcomes []store.Outcome
	for i := range cases {
		c := &cases[i]
		c.create.Kind = "k" + strings.ReplaceAll(c.name, " ", "_")
		task := claimOnly(t, st, c.create)
		if c.cancelFirst {
			if _, err := st.CancelTask(ctx, task.ID); err != nil {
				t.Fatal(err)
			}
		}
		c.outcome.TaskID, c.outcome.LeaseToken = task.ID, task.LeaseToken
		outcomes = append(outcomes, c.outcome)
	}
	// One batch, plus a stale token and a repeat of the first outcome.
	outcomes = append(outcomes, store.Outcome{TaskID: outcomes[1].TaskID, LeaseToken: store.NewID(), Kind: store.Succeed}, outcomes[0])
	results, err := st.RecordOutcomes(ctx, outcomes)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(outcomes) {
		t.Fatalf("%d results for %d outcomes", len(results), len(outcomes))
	}
	for i, c := range cases {
		r := results[i]
		if r.Err != nil || r.Status != c.status || r.TaskID != c.outcome.TaskID {
			t.Errorf("%s: result %+v, want status %s", c.name, r, c.status)
			continue
		}
		task := mustGet(t, st, c.outcome.TaskID)
		if task.Status != c.status || task.LeaseToken != uuid.Nil || task.LeaseExpiresAt != nil || task.WorkerID != "worker-1" {
			t.Errorf("%s: task %+v", c.name, task)
		}
		if task.Status.Terminal() != (task.CompletedAt != nil) {
			t.Errorf("%s: status %s with completed_at %v", c.name, task.Status, task.CompletedAt)
		}
		if c.outcome.Error != "" && task.LastError != c.outcome.Error {
			t.Errorf("%s: last_error %q, want %q", c.name, task.LastError, c.outcome.Error)
		}
		switch c.name {
		case "retry":
			if d := task.ScheduledFor.Sub(task.UpdatedAt); d != time.Hour {
				t.Errorf("retry: scheduled_for %v is %s after the outcome's now(), want 1h", task.ScheduledFor, d)
			}
		case "retry now":
			if task.ScheduledFor.Before(now) || task.ScheduledFor.After(dbNow(t, pool)) {
				t.Errorf("retry now: scheduled_for %v, want about now", task.ScheduledFor)
			}
		}
		attempts := mustAttempts(t, st, task.ID)
		last := attempts[len(attempts)-1]
		if last.Outcome != c.attempt || last.FinishedAt == nil || last.Error != c.outcome.Error {
			t.Errorf("%s: attempt %+v, want outcome %s", c.name, last, c.attempt)
		}
		dls, _, err := st.ListDeadLetters(ctx, store.DeadLetterParams{Kind: task.Kind})
		if err != nil {
			t.Fatal(err)
		}
		if c.deadLetter != (len(dls) == 1) {
			t.Errorf("%s: dead letters %+v", c.name, dls)
		} else if c.deadLetter && (dls[0].Reason != c.status || dls[0].Error != c.outcome.Error || dls[0].WorkerID != "worker-1" || dls[0].TaskID != task.ID) {
			t.Errorf("%s: dead letter %+v", c.name, dls[0])
		}
	}
	for _, r := range results[len(cases):] {
		if !errors.Is(r.Err, store.ErrLeaseLost) || r.Status != "" {
			t.Errorf("stale or repeated outcome: %+v, want ErrLeaseLost", r)
		}
	}
	// Recording again changes nothing.
	again, err := st.RecordOutcomes(ctx, outcomes[:1])
	if err != nil || !errors.Is(again[0].Err, store.ErrLeaseLost) {
		t.Errorf("second recording: %+v, %v", again, err)
	}
	if res, err := st.RecordOutcomes(ctx, nil); err != nil || len(res) != 0 {
		t.Errorf("RecordOutcomes(nil) = %v, %v", res, err)
	}
	for _, o := range []store.Outcome{{Kind: "explode"}, {Kind: ""}} {
		if _, err := st.RecordOutcomes(ctx, []store.Outcome{o}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("RecordOutcomes(%+v) = %v, want ErrInvalid", o, err)
		}
	}
}

func TestRecordOutcomesTruncatesErrors(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	task := claimOnly(t, st, store.CreateParams{Kind: "noop"})
	long := strings.Repeat("x", store.MaxErrorMessageLength+100)
	if _, err := st.RecordOutcomes(context.Background(), []store.Outcome{{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Fail, Error: long}}); err != nil {
		t.Fatal(err)
	}
	want := store.TruncateError(long)
	if got := mustGet(t, st, task.ID); got.LastError != want {
		t.Errorf("last_error has %d bytes, want %d", len(got.LastError), len(want))
	}
	if a := mustAttempts(t, st, task.ID); a[0].Error != want {
		t.Errorf("attempt error has %d bytes, want %d", len(a[0].Error), len(want))
	}
}

func TestRecordOutcomesRetryThenClaimAgain(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()
	task := claimOnly(t, st, store.CreateParams{Kind: "noop", MaxAttempts: 2})
	if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Retry, Error: "1"}}); err != nil {
		t.Fatal(err)
	}
	second := mustClaim(t, st, store.ClaimParams{})
	if len(second) != 1 || second[0].AttemptCount != 2 || second[0].LeaseToken == task.LeaseToken {
		t.Fatalf("second claim %+v", second)
	}
	res, err := st.RecordOutcomes(ctx, []store.Outcome{
		{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}, // the first worker, too late
		{TaskID: task.ID, LeaseToken: second[0].LeaseToken, Kind: store.Retry, Error: "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, store.ErrLeaseLost) || res[1].Status != store.StatusDead {
		t.Errorf("results %+v, want lease lost then DEAD", res)
	}
	attempts := mustAttempts(t, st, task.ID)
	if len(attempts) != 2 || attempts[0].Outcome != store.OutcomeRetried || attempts[1].Outcome != store.OutcomeDead || attempts[1].Attempt != 2 {
		t.Errorf("attempts %+v", attempts)
	}
	// No attempts left: never claimed again.
	if got := mustClaim(t, st, store.ClaimParams{}); len(got) != 0 {
		t.Errorf("claimed a DEAD task: %v", kinds(got))
	}
}

func TestReapExpiredLeases(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	retry := claimOnly(t, st, store.CreateParams{Kind: "retry", MaxAttempts: 5})
	exhausted := claimOnly(t, st, store.CreateParams{Kind: "exhausted", MaxAttempts: 1})
	canceled := claimOnly(t, st, store.CreateParams{Kind: "canceled"})
	alive := claimOnly(t, st, store.CreateParams{Kind: "alive"})
	if _, err := st.CancelTask(ctx, canceled.ID); err != nil {
		t.Fatal(err)
	}
	for _, task := range []*store.Task{retry, exhausted, canceled} {
		expireLease(t, pool, task.ID)
	}
	before := dbNow(t, pool)
	n, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 10, BackoffBase: 10 * time.Second, BackoffMax: time.Hour})
	if err != nil || n != 3 {
		t.Fatalf("reaped %d, %v; want 3", n, err)
	}
	after := dbNow(t, pool)

	got := mustGet(t, st, retry.ID)
	if got.Status != store.StatusPending || got.LeaseToken != uuid.Nil || got.CompletedAt != nil ||
		got.LastError != "lease expired (worker worker-1)" {
		t.Errorf("retried task %+v", got)
	}
	// First retry: uniform in [0, base).
	if got.ScheduledFor.Before(before) || got.ScheduledFor.After(after.Add(10*time.Second)) {
		t.Errorf("retry scheduled for %v, want within 10s of %v", got.ScheduledFor, before)
	}
	if got := mustGet(t, st, exhausted.ID); got.Status != store.StatusDead || got.CompletedAt == nil {
		t.Errorf("exhausted task %+v", got)
	}
	if got := mustGet(t, st, canceled.ID); got.Status != store.StatusCanceled || got.CompletedAt == nil {
		t.Errorf("canceled task %+v", got)
	}
	if got := mustGet(t, st, alive.ID); got.Status != store.StatusProcessing || got.LeaseToken != alive.LeaseToken {
		t.Errorf("live lease was reaped: %+v", got)
	}
	for _, id := range []uuid.UUID{retry.ID, exhausted.ID, canceled.ID} {
		a := mustAttempts(t, st, id)
		if len(a) != 1 || a[0].Outcome != store.OutcomeLeaseExpired || a[0].FinishedAt == nil || a[0].Error != "lease expired (worker worker-1)" {
			t.Errorf("attempts of %s: %+v", id, a)
		}
	}
	dls, _, err := st.ListDeadLetters(ctx, store.DeadLetterParams{})
	if err != nil || len(dls) != 1 || dls[0].TaskID != exhausted.ID || dls[0].Reason != store.StatusDead {
		t.Errorf("dead letters %+v, %v", dls, err)
	}
	// The old lease cannot write.
	res, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: retry.ID, LeaseToken: retry.LeaseToken, Kind: store.Succeed}})
	if err != nil || !errors.Is(res[0].Err, store.ErrLeaseLost) {
		t.Errorf("outcome with a reaped lease: %+v, %v", res, err)
	}
	if n, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 10}); n != 0 || err != nil {
		t.Errorf("second reap: %d, %v", n, err)
	}

	for _, p := range []store.ReapParams{{}, {Limit: 1, BackoffMax: -1}, {Limit: 1, BackoffBase: -1}} {
		if _, err := st.ReapExpiredLeases(ctx, p); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ReapExpiredLeases(%+v) = %v, want ErrInvalid", p, err)
		}
	}
}

// TestReapBackoff: the n-th attempt waits up to base * 2^(n-1), capped at BackoffMax, and
// goes back to PENDING.
func TestReapBackoff(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		priorAttempts int // attempts before the one that expires
		base, max     time.Duration
		ceiling       time.Duration
	}{
		{0, time.Second, time.Hour, time.Second},
		{2, time.Second, time.Hour, 4 * time.Second},
		{2, time.Hour, 90 * time.Minute, 90 * time.Minute},
		{500, time.Hour, 2 * time.Hour, 2 * time.Hour}, // 2^499 must not overflow
	} {
		task := mustCreate(t, st, store.CreateParams{Kind: "noop", MaxAttempts: store.MaxMaxAttempts})[0]
		exec(t, pool, `UPDATE rota.tasks SET attempt_count = $2 WHERE id = $1`, task.ID, tc.priorAttempts)
		mustClaim(t, st, store.ClaimParams{TaskIDs: []uuid.UUID{task.ID}})
		expireLease(t, pool, task.ID)
		before := dbNow(t, pool)
		if n, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 1, BackoffBase: tc.base, BackoffMax: tc.max}); err != nil || n != 1 {
			t.Fatalf("reap: %d, %v", n, err)
		}
		after := dbNow(t, pool)
		got := mustGet(t, st, task.ID)
		if got.Status != store.StatusPending || got.ScheduledFor.Before(before) || got.ScheduledFor.After(after.Add(tc.ceiling)) {
			t.Errorf("attempt %d (base %s, max %s): %s at %v, want PENDING within %s of %v",
				got.AttemptCount, tc.base, tc.max, got.Status, got.ScheduledFor, tc.ceiling, before)
		}
	}
}

// TestReapConcurrent: reapers racing over the same expired leases handle each task once.
func TestReapConcurrent(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	const n = 120
	params := make([]store.CreateParams, n)
	for i := range params {
		params[i] = store.CreateParams{Kind: "noop"}
	}
	mustCreate(t, st, params...)
	if got := mustClaim(t, st, store.ClaimParams{Limit: n}); len(got) != n {
		t.Fatalf("claimed %d", len(got))
	}
	exec(t, pool, `UPDATE rota.tasks SET lease_expires_at = now() - interval '1 second'`)
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				k, err := st.ReapExpiredLeases(context.Background(), store.ReapParams{Limit: 7, BackoffBase: time.Second, BackoffMax: time.Second})
				if err != nil {
					t.Error(err)
					return
				}
				if k == 0 {
					return
				}
				mu.Lock()
				total += k
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if total != n {
		t.Errorf("reaped %d in total, want %d", total, n)
	}
	var closed int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM rota.task_attempts WHERE outcome = 'LEASE_EXPIRED'`).Scan(&closed); err != nil || closed != n {
		t.Errorf("%d attempts closed (%v), want %d", closed, err, n)
	}
}

// TestReapExpiredWithinLooksBackOnlySoFar: with ExpiredWithin, a lease that expired
// longer ago is left alone and one that expired within it is reaped; without it, both.
func TestReapExpiredWithinLooksBackOnlySoFar(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	mustCreate(t, st, store.CreateParams{Kind: "old"}, store.CreateParams{Kind: "recent"})
	claimed := mustClaim(t, st, store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w",
		Limit: 2, LeaseDuration: time.Hour})
	if len(claimed) != 2 {
		t.Fatalf("claimed %d", len(claimed))
	}
	exec(t, pool, `UPDATE rota.tasks SET lease_expires_at = now() - CASE kind WHEN 'old' THEN interval '1 hour' ELSE interval '1 second' END`)
	reap := func(within time.Duration) int {
		t.Helper()
		n, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 10, BackoffBase: time.Second, BackoffMax: time.Second, ExpiredWithin: within})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := reap(time.Minute); n != 1 {
		t.Fatalf("reaped %d leases that expired within a minute, want 1 (the recent one)", n)
	}
	var oldStatus string
	if err := pool.QueryRow(ctx, `SELECT status FROM rota.tasks WHERE kind = 'old'`).Scan(&oldStatus); err != nil || oldStatus != "PROCESSING" {
		t.Fatalf("the lease that expired an hour ago: %s, %v; want it left PROCESSING", oldStatus, err)
	}
	if n := reap(0); n != 1 {
		t.Fatalf("a full reap took %d, want 1 (the old one)", n)
	}
	if _, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 10, ExpiredWithin: -time.Second}); err == nil {
		t.Fatal("a negative ExpiredWithin was accepted")
	}
}

// TestReapLookBackUnderAHeldTransaction: while a transaction holds vacuum back, the index
// entries of every version that was once PROCESSING stay, and a reap that looks at every
// expired lease walks all of them; one that looks back a second does not.
func TestReapLookBackUnderAHeldTransaction(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	const n = 2000
	params := make([]store.CreateParams, n)
	for i := range params {
		params[i] = store.CreateParams{Kind: "noop"}
	}
	mustCreate(t, st, params...)
	// The held transaction: a snapshot older than every change below.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT count(*) FROM rota.tasks`); err != nil {
		t.Fatal(err)
	}
	// Every task claimed with a lease of a millisecond and finished: n dead PROCESSING
	// versions whose leases have expired.
	claimed := mustClaim(t, st, store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w",
		Limit: n, LeaseDuration: time.Millisecond})
	outcomes := make([]store.Outcome, len(claimed))
	for i, c := range claimed {
		outcomes[i] = store.Outcome{TaskID: c.ID, LeaseToken: c.LeaseToken, Kind: store.Succeed}
	}
	if _, err := st.RecordOutcomes(ctx, outcomes); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // those leases now expired more than a second ago
	read := func(within time.Duration) int64 {
		t.Helper()
		before := indexTuplesRead(t, pool)
		if _, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 1000, BackoffBase: time.Second, BackoffMax: time.Second, ExpiredWithin: within}); err != nil {
			t.Fatal(err)
		}
		return indexTuplesRead(t, pool) - before
	}
	short, full := read(time.Second), read(0)
	t.Logf("index entries read: looking back a second %d, every expired lease %d", short, full)
	if short > 100 {
		t.Errorf("a reap looking back a second read %d index entries of rota.tasks, want a few", short)
	}
	if full < n {
		t.Errorf("a full reap read %d index entries, want at least %d: the held transaction no longer keeps them?", full, n)
	}
}

// TestClaimRowsKeepTheirOwnFields claims, in one statement, tasks whose optional columns
// alternate between set and NULL: the claim reads every row into one set of scan
// targets, so a value one row leaves behind must never show in the next. (GetTask does
// not read trace contexts: those are checked against what each task was created with.)
func TestClaimRowsKeepTheirOwnFields(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()
	var params []store.CreateParams
	for i := range 6 {
		p := store.CreateParams{Kind: "k", Priority: 10 - i, Payload: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))}
		if i%2 == 0 {
			p.IdempotencyKey = fmt.Sprintf("key-%d", i)
			p.TimeoutSeconds = 30 + i
			p.TraceContext = map[string]string{"traceparent": fmt.Sprintf("00-%032x-%016x-01", i+1, i+1)}
		}
		params = append(params, p)
	}
	created := mustCreate(t, st, params...)
	claimed := mustClaim(t, st, store.ClaimParams{WorkerID: "w", Limit: len(created), LeaseDuration: time.Minute})
	if len(claimed) != len(created) {
		t.Fatalf("claimed %d of %d tasks", len(claimed), len(created))
	}
	for i, c := range claimed {
		if c.ID != created[i].ID {
			t.Fatalf("claim %d is task %s, want %s (priority order)", i, c.ID, created[i].ID)
		}
		stored, err := st.GetTask(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if string(c.Payload) != string(stored.Payload) || c.IdempotencyKey != stored.IdempotencyKey ||
			c.TimeoutSeconds != stored.TimeoutSeconds ||
			c.LeaseToken != stored.LeaseToken || c.Priority != stored.Priority {
			t.Errorf("claimed task %d:\n %+v\nstored:\n %+v", i, c, stored)
		}
		if want := params[i].TraceContext; !maps.Equal(c.TraceContext, want) || c.IdempotencyKey != params[i].IdempotencyKey {
			t.Errorf("claimed task %d has trace context %v and key %q, created with %v and %q",
				i, c.TraceContext, c.IdempotencyKey, want, params[i].IdempotencyKey)
		}
	}
}
