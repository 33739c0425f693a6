package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// Task outputs (DESIGN.md section 10, "Results"): a SUCCEEDED outcome may carry any JSON
// of at most store.MaxOutputBytes, which the task keeps; no other outcome writes one.
var outputTests = []testCase{
	{"StoredAndRead", testOutputStored},
	{"AnyJSONValue", testOutputAnyJSON},
	{"NoneIsNil", testOutputNone},
	{"OnlyASuccessHasOne", testOutputOnlyOnSuccess},
	{"TooLargeRejectedNothingWritten", testOutputTooLarge},
	{"InvalidRejected", testOutputInvalid},
	{"CountsInListByteBudget", testOutputListByteBudget},
	{"MixedInOneBatch", testOutputMixedBatch},
}

// succeedWith records a Succeed outcome carrying output and returns the task after it.
func succeedWith(t *testing.T, s store.Store, task *store.Task, output string) *store.Task {
	t.Helper()
	o := outcome(task, store.Succeed, "")
	o.Output = json.RawMessage(output)
	return recordOK(t, s, o, store.StatusSucceeded)
}

// findTask returns the task with id among tasks, failing the test when it is absent.
func findTask(t *testing.T, tasks []*store.Task, task *store.Task) *store.Task {
	t.Helper()
	for _, got := range tasks {
		if got.ID == task.ID {
			return got
		}
	}
	t.Fatalf("task %s not listed", task.ID)
	return nil
}

func testOutputStored(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	const out = `{"rows": 3, "files": ["a.csv", "b.csv"], "nested": {"ok": true}}`
	done := succeedWith(t, s, task, out)
	jsonEqual(t, "GetTask Output", done.Output, json.RawMessage(out))
	// Every read shows it: the list without filters, the filtered list.
	jsonEqual(t, "ListTasks Output", findTask(t, listAll(t, s, store.ListParams{}), task).Output, json.RawMessage(out))
	filtered := listAll(t, s, store.ListParams{Statuses: []store.Status{store.StatusSucceeded}, Queue: task.Queue, Kind: "k"})
	jsonEqual(t, "filtered ListTasks Output", findTask(t, filtered, task).Output, json.RawMessage(out))
	if a := lastAttempt(t, s, task.ID); a.Outcome != store.OutcomeSucceeded {
		t.Fatalf("attempt outcome %s, want SUCCEEDED", a.Outcome)
	}
}

// testOutputMixedBatch: one RecordOutcomes call with outputs and without (the Postgres
// store sends a batch without any as a NULL array): each task gets its own.
func testOutputMixedBatch(t *testing.T, s store.Store) {
	with := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	without := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	retried := createAndClaim(t, s, store.CreateParams{Kind: "k", MaxAttempts: 5})
	o := outcome(with, store.Succeed, "")
	o.Output = json.RawMessage(`{"n": 1}`)
	res := record(t, s, o, outcome(without, store.Succeed, ""), outcome(retried, store.Retry, "again"))
	for i, want := range []store.Status{store.StatusSucceeded, store.StatusSucceeded, store.StatusPending} {
		if res[i].Err != nil || res[i].Status != want {
			t.Fatalf("outcome %d: %s, %v; want %s", i, res[i].Status, res[i].Err, want)
		}
	}
	jsonEqual(t, "Output of the task with one", get(t, s, with.ID).Output, o.Output)
	for _, task := range []*store.Task{without, retried} {
		if got := get(t, s, task.ID).Output; got != nil {
			t.Fatalf("task %s has Output %s, want none", task.ID, got)
		}
	}
	// A batch where no outcome has one.
	a, b := createAndClaim(t, s, store.CreateParams{Kind: "k"}), createAndClaim(t, s, store.CreateParams{Kind: "k"})
	for i, r := range record(t, s, outcome(a, store.Succeed, ""), outcome(b, store.Fail, "no")) {
		if r.Err != nil || r.Status != []store.Status{store.StatusSucceeded, store.StatusFailed}[i] {
			t.Fatalf("batch without outputs, outcome %d: %s, %v", i, r.Status, r.Err)
		}
	}
	if get(t, s, a.ID).Output != nil || get(t, s, b.ID).Output != nil {
		t.Fatal("a batch without outputs stored one")
	}
}

func testOutputAnyJSON(t *testing.T, s store.Store) {
	for _, out := range []string{`42`, `"done"`, `[1, "two", {"three": 3}]`, `true`, `{}`, `[]`, `-1.5e3`} {
		task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
		jsonEqual(t, "Output "+out, succeedWith(t, s, task, out).Output, json.RawMessage(out))
	}
}

func testOutputNone(t *testing.T, s store.Store) {
	for _, out := range []string{"", "null", " null "} {
		task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
		if done := succeedWith(t, s, task, out); done.Output != nil {
			t.Fatalf("a success with output %q: Output = %s, want nil (none)", out, done.Output)
		}
	}
	// A task that never ran has none either.
	if task := createOne(t, s, store.CreateParams{Kind: "k"}); task.Output != nil {
		t.Fatalf("a new task has Output %s", task.Output)
	}
}

func testOutputOnlyOnSuccess(t *testing.T, s store.Store) {
	const out = `{"would": "be ignored"}`
	cases := []struct {
		kind store.OutcomeKind
		want store.Status
		max  int
	}{
		{store.Retry, store.StatusPending, 5},
		{store.Retry, store.StatusDead, 1},
		{store.Release, store.StatusPending, 5},
		{store.Fail, store.StatusFailed, 5},
		{store.Cancel, store.StatusCanceled, 5},
	}
	for _, tc := range cases {
		task := createAndClaim(t, s, store.CreateParams{Kind: "k", MaxAttempts: tc.max})
		o := outcome(task, tc.kind, "no")
		o.Output = json.RawMessage(out)
		after := recordOK(t, s, o, tc.want)
		if after.Output != nil {
			t.Fatalf("%s outcome (task %s) stored output %s; only a success has one", tc.kind, tc.want, after.Output)
		}
	}
	// A retried task that then succeeds has the output of the attempt that succeeded.
	task := createAndClaim(t, s, store.CreateParams{Kind: "k", MaxAttempts: 5})
	recordOK(t, s, outcome(task, store.Retry, "once"), store.StatusPending)
	again := claimID(t, s, task, store.StatusPending, 30*time.Second)
	jsonEqual(t, "Output after a retry and a success", succeedWith(t, s, again, `"second"`).Output, json.RawMessage(`"second"`))
}

// bigOutput is a JSON string of exactly n bytes of JSON text.
func bigOutput(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
}

func testOutputTooLarge(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	other := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	before := attempts(t, s, task.ID)

	tooBig := outcome(task, store.Succeed, "")
	tooBig.Output = bigOutput(store.MaxOutputBytes + 1)
	fine := outcome(other, store.Succeed, "")
	fine.Output = json.RawMessage(`{"n": 1}`)
	res := record(t, s, tooBig, fine)
	// Rejected alone: the task keeps running under its lease, nothing is written for it,
	// and the rest of the batch is written.
	wantErr(t, res[0].Err, store.ErrInvalid, "an output over MaxOutputBytes")
	sameTask(t, "task after an oversized output", get(t, s, task.ID), task)
	if got := attempts(t, s, task.ID); len(got) != len(before) {
		t.Fatalf("an oversized output wrote attempt rows: %d, had %d", len(got), len(before))
	}
	if res[1].Err != nil || res[1].Status != store.StatusSucceeded {
		t.Fatalf("the valid outcome beside an oversized one: %s, %v", res[1].Status, res[1].Err)
	}
	jsonEqual(t, "Output beside an oversized one", get(t, s, other.ID).Output, fine.Output)

	// The lease still holds: the same attempt completes with an output of exactly the limit.
	hb, err := s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: task.ID, LeaseToken: task.LeaseToken, LeaseDuration: 30 * time.Second})
	if err != nil || hb.Status != store.StatusProcessing {
		t.Fatalf("heartbeat after an oversized output: %v", err)
	}
	limit := bigOutput(store.MaxOutputBytes)
	done := succeedWith(t, s, task, string(limit))
	jsonEqual(t, "Output of exactly MaxOutputBytes", done.Output, limit)
}

func testOutputInvalid(t *testing.T, s store.Store) {
	for _, out := range []string{`{"unclosed": `, `nope`, `"\u0000"`, `{"a": 1} {"b": 2}`} {
		task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
		o := outcome(task, store.Succeed, "")
		o.Output = json.RawMessage(out)
		wantErr(t, record(t, s, o)[0].Err, store.ErrInvalid, "output "+out)
		sameTask(t, "task after output "+out, get(t, s, task.ID), task)
	}
}

func testOutputListByteBudget(t *testing.T, s store.Store) {
	// Small payloads, large outputs: a page stops once the outputs reach the budget.
	for range 3 {
		task := createAndClaim(t, s, store.CreateParams{Queue: "outs", Kind: "k"})
		succeedWith(t, s, task, string(bigOutput(4000)))
	}
	page, next, err := s.ListTasks(ctx(t), store.ListParams{Queue: "outs", MaxBytes: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || next == "" {
		t.Fatalf("a 5000-byte budget over 4000-byte outputs: a page of %d tasks (next %q), want 2 and more to follow", len(page), next)
	}
}
