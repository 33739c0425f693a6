// Package storetest is the conformance suite every store.Store adapter must pass: the
// executable form of the rules written in package store's doc comments and in the
// PostgreSQL schema's triggers.
//
// An adapter's test calls Run with a constructor that returns a fresh, empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
//	}
//
// The suite uses nothing but the store.Store interface. Adapters keep time with their own
// clock (PostgreSQL uses now()), so times are compared with a tolerance (clockSkew) and
// never assumed exact; waits poll a condition with a deadline instead of sleeping.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// clockSkew is how far an adapter's clock (a database server's now()) may be from the
// test process's clock, including the time a call takes.
const clockSkew = 2 * time.Second

// waitTimeout bounds every poll for a condition (lease expiry, a wake-up).
const waitTimeout = 15 * time.Second

// testTimeout bounds each subtest's context.
const testTimeout = 2 * time.Minute

type testFunc func(t *testing.T, s store.Store)

type testCase struct {
	name string
	fn   testFunc
}

type group struct {
	name  string
	tests []testCase
}

// Run runs the conformance suite. newStore must return a new, empty store for each call
// (subtests run in parallel, each with its own store); Run closes each store when its
// subtest ends.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	groups := []group{
		{"Create", createTests},
		{"Get", getTests},
		{"List", listTests},
		{"Claim", claimTests},
		{"Heartbeat", heartbeatTests},
		{"Outcomes", outcomeTests},
		{"Outputs", outputTests},
		{"Cancel", cancelTests},
		{"Replay", replayTests},
		{"BulkReplay", bulkReplayTests},
		{"Retention", retentionTests},
		{"Ping", pingTests},
		{"Reap", reapTests},
		{"EnqueueDue", enqueueTests},
		{"CountSent", countSentTests},
		{"PublishDeadLetters", outboxTests},
		{"QueueModes", queueModeTests},
		{"Attempts", attemptTests},
		{"DeadLetters", deadLetterTests},
		{"Stats", statsTests},
		{"WaitForTasks", waitTests},
		{"Concurrency", concurrencyTests},
		{"Schedules", scheduleTests},
		{"ScheduleOverlap", overlapTests},
		{"ScheduleFlows", scheduleFlowTests},
		{"Insights", insightsTests},
		{"Workers", workerTests},
		{"QueueSettings", queueSettingsTests},
		{"Limits", limitTests},
		{"Flows", flowTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					s := newStore(t)
					if s == nil {
						t.Fatal("newStore returned nil")
					}
					t.Cleanup(s.Close)
					tc.fn(t, s)
				})
			}
		})
	}
}

// ctx returns a context for one subtest's calls.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return c
}

// --- creating -----------------------------------------------------------------------

func create(t *testing.T, s store.Store, params ...store.CreateParams) []store.CreateResult {
	t.Helper()
	res, err := s.CreateTasks(ctx(t), params)
	if err != nil {
		t.Fatalf("CreateTasks: %v", err)
	}
	if len(res) != len(params) {
		t.Fatalf("CreateTasks returned %d results for %d params", len(res), len(params))
	}
	for i, r := range res {
		if r.Task == nil {
			t.Fatalf("CreateTasks result %d has a nil task", i)
		}
	}
	return res
}

func createOne(t *testing.T, s store.Store, p store.CreateParams) *store.Task {
	t.Helper()
	r := create(t, s, p)[0]
	if r.Existing {
		t.Fatalf("CreateTasks: got Existing = true for a new task")
	}
	return r.Task
}

// createN creates n due tasks of kind in queue (one batch) and returns them in input order.
func createN(t *testing.T, s store.Store, queue, kind string, n int) []*store.Task {
	t.Helper()
	params := make([]store.CreateParams, n)
	for i := range params {
		params[i] = store.CreateParams{Queue: queue, Kind: kind}
	}
	res := create(t, s, params...)
	out := make([]*store.Task, n)
	for i, r := range res {
		out[i] = r.Task
	}
	return out
}

// --- reading ------------------------------------------------------------------------

func get(t *testing.T, s store.Store, id uuid.UUID) *store.Task {
	t.Helper()
	task, err := s.GetTask(ctx(t), id)
	if err != nil {
		t.Fatalf("GetTask(%s): %v", id, err)
	}
	if task.ID != id {
		t.Fatalf("GetTask(%s) returned task %s", id, task.ID)
	}
	return task
}

// listAll pages through ListTasks and returns every task.
func listAll(t *testing.T, s store.Store, p store.ListParams) []*store.Task {
	t.Helper()
	var out []*store.Task
	for page := 0; ; page++ {
		if page > 10000 {
			t.Fatal("ListTasks: cursor paging never ends")
		}
		tasks, next, err := s.ListTasks(ctx(t), p)
		if err != nil {
			t.Fatalf("ListTasks(%+v): %v", p, err)
		}
		out = append(out, tasks...)
		if next == "" {
			return out
		}
		p.Cursor = next
	}
}

func countTasks(t *testing.T, s store.Store) int {
	t.Helper()
	return len(listAll(t, s, store.ListParams{Limit: store.MaxListLimit}))
}

func attempts(t *testing.T, s store.Store, id uuid.UUID) []store.Attempt {
	t.Helper()
	a, err := s.ListAttempts(ctx(t), id)
	if err != nil {
		t.Fatalf("ListAttempts(%s): %v", id, err)
	}
	return a
}

func deadLetters(t *testing.T, s store.Store, p store.DeadLetterParams) []store.DeadLetter {
	t.Helper()
	var out []store.DeadLetter
	for page := 0; ; page++ {
		if page > 10000 {
			t.Fatal("ListDeadLetters: cursor paging never ends")
		}
		evs, next, err := s.ListDeadLetters(ctx(t), p)
		if err != nil {
			t.Fatalf("ListDeadLetters(%+v): %v", p, err)
		}
		out = append(out, evs...)
		if next == "" {
			return out
		}
		p.Cursor = next
	}
}

func deadLettersOf(t *testing.T, s store.Store, id uuid.UUID) []store.DeadLetter {
	t.Helper()
	var out []store.DeadLetter
	for _, ev := range deadLetters(t, s, store.DeadLetterParams{Limit: store.MaxListLimit}) {
		if ev.TaskID == id {
			out = append(out, ev)
		}
	}
	return out
}

func statsOf(t *testing.T, s store.Store, queue string) *store.QueueStats {
	t.Helper()
	all, err := s.Stats(ctx(t))
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	for i := range all {
		if all[i].Queue == queue {
			return &all[i]
		}
	}
	return nil
}

// --- claiming and outcomes ----------------------------------------------------------

// claimParams returns poll-mode claim params for queue with a 30s lease.
func claimParams(queue string, limit int) store.ClaimParams {
	return store.ClaimParams{
		Queue:         queue,
		From:          store.StatusPending,
		WorkerID:      "worker-1",
		Limit:         limit,
		LeaseDuration: 30 * time.Second,
	}
}

func claim(t *testing.T, s store.Store, p store.ClaimParams) []*store.Task {
	t.Helper()
	tasks, err := s.ClaimTasks(ctx(t), p)
	if err != nil {
		t.Fatalf("ClaimTasks(%+v): %v", p, err)
	}
	if limit := p.Limit; (limit > 0 && len(tasks) > limit) || len(tasks) > max(limit, len(p.TaskIDs)) {
		t.Fatalf("ClaimTasks: got %d tasks, limit %d", len(tasks), p.Limit)
	}
	return tasks
}

// claimID claims exactly the task id (TaskIDs restriction) from its queue.
func claimID(t *testing.T, s store.Store, task *store.Task, from store.Status, lease time.Duration) *store.Task {
	t.Helper()
	p := claimParams(task.Queue, 1)
	p.From = from
	p.TaskIDs = []uuid.UUID{task.ID}
	p.LeaseDuration = lease
	got := claim(t, s, p)
	if len(got) != 1 || got[0].ID != task.ID {
		t.Fatalf("ClaimTasks(TaskIDs=[%s], From=%s): got %s, want the task", task.ID, from, ids(got))
	}
	return got[0]
}

// createAndClaim creates a due task and claims it with a 30s lease.
func createAndClaim(t *testing.T, s store.Store, p store.CreateParams) *store.Task {
	t.Helper()
	return claimID(t, s, createOne(t, s, p), store.StatusPending, 30*time.Second)
}

func record(t *testing.T, s store.Store, outcomes ...store.Outcome) []store.OutcomeResult {
	t.Helper()
	res, err := s.RecordOutcomes(ctx(t), outcomes)
	if err != nil {
		t.Fatalf("RecordOutcomes: %v", err)
	}
	if len(res) != len(outcomes) {
		t.Fatalf("RecordOutcomes returned %d results for %d outcomes", len(res), len(outcomes))
	}
	for i, r := range res {
		if r.TaskID != outcomes[i].TaskID {
			t.Fatalf("RecordOutcomes result %d is for task %s, want %s (results must be in input order)", i, r.TaskID, outcomes[i].TaskID)
		}
	}
	return res
}

// recordOK records one outcome that must succeed and returns the task afterwards.
func recordOK(t *testing.T, s store.Store, o store.Outcome, want store.Status) *store.Task {
	t.Helper()
	r := record(t, s, o)[0]
	if r.Err != nil {
		t.Fatalf("RecordOutcomes(%s %s): %v", o.Kind, o.TaskID, r.Err)
	}
	if r.Status != want {
		t.Fatalf("RecordOutcomes(%s %s): status %s, want %s", o.Kind, o.TaskID, r.Status, want)
	}
	task := get(t, s, o.TaskID)
	if task.Status != want {
		t.Fatalf("after %s outcome: task status %s, want %s", o.Kind, task.Status, want)
	}
	return task
}

func outcome(task *store.Task, kind store.OutcomeKind, errMsg string) store.Outcome {
	return store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: kind, Error: errMsg}
}

// driveTo creates a task and moves it to a terminal status (SUCCEEDED, FAILED, DEAD or
// CANCELED) through the public API.
func driveTo(t *testing.T, s store.Store, p store.CreateParams, status store.Status) *store.Task {
	t.Helper()
	switch status {
	case store.StatusCanceled:
		task := createOne(t, s, p)
		c, err := s.CancelTask(ctx(t), task.ID)
		if err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
		if c.Status != store.StatusCanceled {
			t.Fatalf("CancelTask of a PENDING task: status %s", c.Status)
		}
		return c
	case store.StatusSucceeded:
		task := createAndClaim(t, s, p)
		return recordOK(t, s, outcome(task, store.Succeed, ""), store.StatusSucceeded)
	case store.StatusFailed:
		task := createAndClaim(t, s, p)
		return recordOK(t, s, outcome(task, store.Fail, "permanent boom"), store.StatusFailed)
	case store.StatusDead:
		p.MaxAttempts = 1
		task := createAndClaim(t, s, p)
		return recordOK(t, s, outcome(task, store.Retry, "transient boom"), store.StatusDead)
	}
	t.Fatalf("driveTo: unsupported status %s", status)
	return nil
}

// reapUntil calls ReapExpiredLeases until it has reaped want tasks in total (leases
// expire on the adapter's clock) and returns the total.
func reapUntil(t *testing.T, s store.Store, p store.ReapParams, want int) int {
	t.Helper()
	total := 0
	deadline := time.Now().Add(waitTimeout)
	for {
		n, err := s.ReapExpiredLeases(ctx(t), p)
		if err != nil {
			t.Fatalf("ReapExpiredLeases: %v", err)
		}
		if n < 0 || (p.Limit > 0 && n > p.Limit) {
			t.Fatalf("ReapExpiredLeases returned %d (limit %d)", n, p.Limit)
		}
		total += n
		if total >= want {
			return total
		}
		if time.Now().After(deadline) {
			t.Fatalf("ReapExpiredLeases: reaped %d tasks in %s, want %d", total, waitTimeout, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond until it holds or waitTimeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExpiredLeases waits until Stats reports n expired leases in queue.
func waitExpiredLeases(t *testing.T, s store.Store, queue string, n int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d expired leases in queue %q", n, queue), func() bool {
		st := statsOf(t, s, queue)
		return st != nil && st.ExpiredLeases == n
	})
}

// --- assertions ---------------------------------------------------------------------

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// nearNow checks that tm is within clockSkew of the test's clock.
func nearNow(t *testing.T, what string, tm time.Time) {
	t.Helper()
	near(t, what, tm, time.Now(), clockSkew)
}

func near(t *testing.T, what string, got, want time.Time, tol time.Duration) {
	t.Helper()
	if got.IsZero() {
		t.Fatalf("%s is zero, want about %s", what, want.Format(time.RFC3339Nano))
	}
	if d := got.Sub(want); d > tol || d < -tol {
		t.Fatalf("%s = %s, want %s (±%s)", what, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano), tol)
	}
}

func nearNowPtr(t *testing.T, what string, tm *time.Time) {
	t.Helper()
	if tm == nil {
		t.Fatalf("%s is nil, want about now", what)
	}
	nearNow(t, what, *tm)
}

func isNil(t *testing.T, what string, tm *time.Time) {
	t.Helper()
	if tm != nil {
		t.Fatalf("%s = %s, want nil", what, tm.Format(time.RFC3339Nano))
	}
}

func jsonEqual(t *testing.T, what string, got, want json.RawMessage) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %q is not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: bad expectation %q: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s = %s, want %s", what, got, want)
	}
}

// sameTask checks that two reads of a task agree on every field.
func sameTask(t *testing.T, what string, got, want *store.Task) {
	t.Helper()
	timeEq := func(a, b time.Time) bool { return a.Equal(b) }
	ptrEq := func(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }
	var diffs []string
	check := func(field string, ok bool, g, w any) {
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %v != %v", field, g, w))
		}
	}
	check("ID", got.ID == want.ID, got.ID, want.ID)
	check("Queue", got.Queue == want.Queue, got.Queue, want.Queue)
	check("Kind", got.Kind == want.Kind, got.Kind, want.Kind)
	check("Status", got.Status == want.Status, got.Status, want.Status)
	check("Priority", got.Priority == want.Priority, got.Priority, want.Priority)
	check("ScheduledFor", timeEq(got.ScheduledFor, want.ScheduledFor), got.ScheduledFor, want.ScheduledFor)
	check("AttemptCount", got.AttemptCount == want.AttemptCount, got.AttemptCount, want.AttemptCount)
	check("MaxAttempts", got.MaxAttempts == want.MaxAttempts, got.MaxAttempts, want.MaxAttempts)
	check("IdempotencyKey", got.IdempotencyKey == want.IdempotencyKey, got.IdempotencyKey, want.IdempotencyKey)
	check("TimeoutSeconds", got.TimeoutSeconds == want.TimeoutSeconds, got.TimeoutSeconds, want.TimeoutSeconds)
	check("WorkerID", got.WorkerID == want.WorkerID, got.WorkerID, want.WorkerID)
	check("LeaseToken", got.LeaseToken == want.LeaseToken, got.LeaseToken, want.LeaseToken)
	check("LeaseExpiresAt", ptrEq(got.LeaseExpiresAt, want.LeaseExpiresAt), got.LeaseExpiresAt, want.LeaseExpiresAt)
	check("CancelRequestedAt", ptrEq(got.CancelRequestedAt, want.CancelRequestedAt), got.CancelRequestedAt, want.CancelRequestedAt)
	check("EnqueuedAt", ptrEq(got.EnqueuedAt, want.EnqueuedAt), got.EnqueuedAt, want.EnqueuedAt)
	check("ProcessingStartedAt", ptrEq(got.ProcessingStartedAt, want.ProcessingStartedAt), got.ProcessingStartedAt, want.ProcessingStartedAt)
	check("CompletedAt", ptrEq(got.CompletedAt, want.CompletedAt), got.CompletedAt, want.CompletedAt)
	check("LastError", got.LastError == want.LastError, got.LastError, want.LastError)
	check("CreatedAt", timeEq(got.CreatedAt, want.CreatedAt), got.CreatedAt, want.CreatedAt)
	check("UpdatedAt", timeEq(got.UpdatedAt, want.UpdatedAt), got.UpdatedAt, want.UpdatedAt)
	var gp, wp any
	_ = json.Unmarshal(got.Payload, &gp)
	_ = json.Unmarshal(want.Payload, &wp)
	check("Payload", reflect.DeepEqual(gp, wp), string(got.Payload), string(want.Payload))
	var gout, wout any
	_ = json.Unmarshal(got.Output, &gout)
	_ = json.Unmarshal(want.Output, &wout)
	check("Output", (got.Output == nil) == (want.Output == nil) && reflect.DeepEqual(gout, wout), string(got.Output), string(want.Output))
	if len(diffs) > 0 {
		t.Fatalf("%s: tasks differ:\n  %s", what, strings.Join(diffs, "\n  "))
	}
}

// checkNoLease checks that a task that left PROCESSING holds no lease.
func checkNoLease(t *testing.T, task *store.Task) {
	t.Helper()
	if task.LeaseToken != uuid.Nil {
		t.Fatalf("task %s in %s still has lease token %s", task.ID, task.Status, task.LeaseToken)
	}
	isNil(t, "LeaseExpiresAt of a task that is not PROCESSING", task.LeaseExpiresAt)
}

func ids(tasks []*store.Task) []uuid.UUID {
	out := make([]uuid.UUID, len(tasks))
	for i, task := range tasks {
		out[i] = task.ID
	}
	return out
}

func sortedIDs(tasks []*store.Task) []uuid.UUID {
	out := ids(tasks)
	slices.SortFunc(out, compareIDs)
	return out
}

func compareIDs(a, b uuid.UUID) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func lastAttempt(t *testing.T, s store.Store, id uuid.UUID) store.Attempt {
	t.Helper()
	a := attempts(t, s, id)
	if len(a) == 0 {
		t.Fatalf("task %s has no attempt rows", id)
	}
	return a[len(a)-1]
}

// checkClosedAttempt checks the last attempt row of a task after an outcome.
func checkClosedAttempt(t *testing.T, s store.Store, task *store.Task, attempt int, outcome store.AttemptOutcome, errMsg string) {
	t.Helper()
	a := lastAttempt(t, s, task.ID)
	if a.Attempt != attempt || a.Outcome != outcome || a.Error != errMsg {
		t.Fatalf("last attempt of %s: attempt %d outcome %q error %q, want %d %q %q", task.ID, a.Attempt, a.Outcome, a.Error, attempt, outcome, errMsg)
	}
	nearNowPtr(t, "attempt FinishedAt", a.FinishedAt)
	if a.FinishedAt.Before(a.StartedAt) {
		t.Fatalf("attempt finished (%s) before it started (%s)", a.FinishedAt, a.StartedAt)
	}
}
