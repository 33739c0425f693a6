package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// Flows (store.FlowStore, DESIGN.md section 10): the store moves a flow forward in the
// transaction that ends a step task.
var flowTests = []testCase{
	{"InvalidFlowNamesTheStepAndWritesNothing", testFlowValidation},
	{"LinearFlowPassesOutputsAsInputs", testFlowLinear},
	{"DiamondStartsTheJoinOnceWithBothInputs", testFlowDiamond},
	{"FanOutOverTenElementsFansInInElementOrder", testFlowFanOut},
	{"FanOutOverEmptyArraySucceedsAtOnce", testFlowFanOutEmpty},
	{"FanOutOverNonArrayFailsTheStepAndFlow", testFlowFanOutNonArray},
	{"StepFailureFailsFlowCancelsTheRest", testFlowFailure},
	{"DeadStepTaskAfterRetriesFailsFlow", testFlowDeadAfterRetries},
	{"CanceledStepTaskFailsFlow", testFlowStepTaskCanceled},
	{"CancelFlow", testFlowCancel},
	{"ReplayFailedFlowToSucceeded", testFlowReplay},
	{"ReplayCanceledFlowToSucceeded", testFlowReplayCanceled},
	{"ReplayOnlyEndedFlows", testFlowReplayIllegal},
	{"IdempotencyKey", testFlowIdempotency},
	{"ListFlowsFiltersAndPages", testFlowList},
	{"StepTasksKeepTheAttemptLifecycle", testFlowStepLifecycle},
	{"ConcurrentFanOutCompletionsStartTheJoinOnce", testFlowConcurrentCompletions},
	{"PlainTasksHaveNoFlow", testFlowPlainTask},
	{"RetentionDeletesWholeFlows", testFlowRetention},
	{"StepTasksOfALimitedQueueClaimWithTheirStep", testFlowLimitedQueue},
	{"StepGroupKeyGoesToEveryTaskOfTheStep", testFlowStepGroupKey},
	{"InvalidStepGroupKeyNamesTheStepAndWritesNothing", testFlowStepGroupKeyInvalid},
}

// testFlowStepGroupKey: a step's group key goes to its task (a step without dependencies,
// started at create; one started when its dependency succeeds) and to each task of a
// for_each step, and the queue's group limit then holds for them.
func testFlowStepGroupKey(t *testing.T, s store.Store) {
	updateQueue(t, s, "grouped", store.QueuePatch{GroupConcurrency: setLimit(1)})
	a, b, c, d := step("a"), step("b", "a"), forEach("c", "a"), step("d", "a")
	a.GroupKey, b.GroupKey, c.GroupKey = "ga", "gb", "gc"
	f := createFlow(t, s, store.FlowParams{Queue: "grouped", Steps: steps(a, b, c, d)})
	if got := stepOf(t, f, "c").GroupKey; got != "gc" {
		t.Fatalf("step c reads group key %q, want gc", got)
	}
	if got := stepOf(t, f, "d").GroupKey; got != "" {
		t.Fatalf("step d reads group key %q, want none", got)
	}
	at := stepTask(t, s, f.ID, "a")
	if at.GroupKey != "ga" {
		t.Fatalf("a's task has group key %q, want ga", at.GroupKey)
	}
	succeedStep(t, s, at, `[1, 2, 3]`)
	if bt := stepTask(t, s, f.ID, "b"); bt.GroupKey != "gb" {
		t.Fatalf("b's task has group key %q, want gb", bt.GroupKey)
	}
	if dt := stepTask(t, s, f.ID, "d"); dt.GroupKey != "" {
		t.Fatalf("d's task has group key %q, want none", dt.GroupKey)
	}
	cs := stepTasks(t, s, f.ID, "c")
	if len(cs) != 3 {
		t.Fatalf("c has %d tasks, want 3", len(cs))
	}
	for i, ct := range cs {
		if ct.GroupKey != "gc" {
			t.Fatalf("c's task %d has group key %q, want gc", i, ct.GroupKey)
		}
	}
	// group_concurrency 1: one task of each group (gb, gc) and d's (no group) run at once.
	perGroup := map[string]int{}
	for _, ct := range claim(t, s, claimParams("grouped", 10)) {
		perGroup[ct.GroupKey]++
	}
	if want := map[string]int{"gb": 1, "gc": 1, "": 1}; !maps2Equal(perGroup, want) {
		t.Fatalf("claimed per group %v, want %v (group_concurrency 1)", perGroup, want)
	}
}

// testFlowStepGroupKeyInvalid: a step group key longer than a task's may be is
// ErrInvalid naming the step, and nothing is written.
func testFlowStepGroupKeyInvalid(t *testing.T, s store.Store) {
	bad := step("b", "a")
	bad.GroupKey = strings.Repeat("g", store.MaxGroupKeyLength+1)
	_, err := s.CreateFlow(ctx(t), store.FlowParams{Steps: steps(step("a"), bad)})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), `step "b"`) ||
		!strings.Contains(err.Error(), "group_key") {
		t.Fatalf("CreateFlow error %v, want ErrInvalid naming step \"b\" and group_key", err)
	}
	flows, _, err := s.ListFlows(ctx(t), store.FlowListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) != 0 || countTasks(t, s) != 0 {
		t.Fatalf("an invalid flow wrote %d flows and %d tasks", len(flows), countTasks(t, s))
	}
	ok := step("a")
	ok.GroupKey = strings.Repeat("é", store.MaxGroupKeyLength) // characters, not bytes
	f := createFlow(t, s, store.FlowParams{Steps: steps(ok)})
	if got := stepTask(t, s, f.ID, "a").GroupKey; got != ok.GroupKey {
		t.Fatalf("a's task has group key %q, want the 128 characters", got)
	}
}

// testFlowLimitedQueue: a flow's steps in a queue with limits are claimed through the
// limited claim (rota.claim_limited_* in PostgreSQL), which must answer a step task's
// flow, step, item, index and inputs as the plain claim does, and keep the limit.
func testFlowLimitedQueue(t *testing.T, s store.Store) {
	updateQueue(t, s, "limited", store.QueuePatch{Concurrency: setLimit(3)})
	f := createFlow(t, s, store.FlowParams{Queue: "limited", Steps: steps(step("a"), forEach("b", "a"))})
	a := claim(t, s, claimParams("limited", 10))
	if len(a) != 1 || a[0].FlowID != f.ID || a[0].Step != "a" {
		t.Fatalf("first claim = %d tasks (%+v), want a's task of flow %s", len(a), a, f.ID)
	}
	o := outcome(a[0], store.Succeed, "")
	o.Output = json.RawMessage(`[10, 11, 12, 13, 14]`)
	recordOK(t, s, o, store.StatusSucceeded)
	bs := claim(t, s, claimParams("limited", 10))
	if len(bs) != 3 {
		t.Fatalf("claimed %d of b's tasks, want 3 (concurrency 3)", len(bs))
	}
	for _, b := range bs {
		if b.FlowID != f.ID || b.Step != "b" || b.Index == nil {
			t.Fatalf("claimed b task has flow %s step %q index %v", b.FlowID, b.Step, b.Index)
		}
		jsonEqual(t, "b's item", b.Item, json.RawMessage(fmt.Sprint(10+*b.Index)))
		jsonEqual(t, "b's inputs", b.Inputs, json.RawMessage(`{"a": [10, 11, 12, 13, 14]}`))
	}
}

// --- helpers ---------------------------------------------------------------------------

func createFlow(t *testing.T, s store.Store, p store.FlowParams) *store.Flow {
	t.Helper()
	res, err := s.CreateFlow(ctx(t), p)
	if err != nil {
		t.Fatalf("CreateFlow: %v", err)
	}
	if res.Existing {
		t.Fatalf("CreateFlow: Existing = true for a new flow")
	}
	return res.Flow
}

func getFlow(t *testing.T, s store.Store, id uuid.UUID) *store.Flow {
	t.Helper()
	f, err := s.GetFlow(ctx(t), id)
	if err != nil {
		t.Fatalf("GetFlow(%s): %v", id, err)
	}
	return f
}

func stepOf(t *testing.T, f *store.Flow, name string) store.FlowStep {
	t.Helper()
	for _, st := range f.Steps {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("flow %s has no step %q", f.ID, name)
	return store.FlowStep{}
}

// stepTasks returns the tasks of a step, in element order.
func stepTasks(t *testing.T, s store.Store, flowID uuid.UUID, step string) []*store.Task {
	t.Helper()
	var out []*store.Task
	for _, id := range stepOf(t, getFlow(t, s, flowID), step).TaskIDs {
		out = append(out, get(t, s, id))
	}
	return out
}

// stepTask returns the one task of a single-task step.
func stepTask(t *testing.T, s store.Store, flowID uuid.UUID, step string) *store.Task {
	t.Helper()
	tasks := stepTasks(t, s, flowID, step)
	if len(tasks) != 1 {
		t.Fatalf("step %q has %d tasks, want 1", step, len(tasks))
	}
	return tasks[0]
}

// succeedStep claims task and records its success with output.
func succeedStep(t *testing.T, s store.Store, task *store.Task, output string) *store.Task {
	t.Helper()
	c := claimID(t, s, task, store.StatusPending, 30*time.Second)
	o := outcome(c, store.Succeed, "")
	if output != "" {
		o.Output = json.RawMessage(output)
	}
	return recordOK(t, s, o, store.StatusSucceeded)
}

func wantFlowStatus(t *testing.T, f *store.Flow, want store.FlowStatus) {
	t.Helper()
	if f.Status != want {
		t.Fatalf("flow status %s, want %s", f.Status, want)
	}
	if (f.CompletedAt != nil) != want.Ended() {
		t.Fatalf("flow %s: completed_at %v", f.Status, f.CompletedAt)
	}
}

func wantStepStatus(t *testing.T, f *store.Flow, step string, want store.StepStatus) {
	t.Helper()
	if got := stepOf(t, f, step).Status; got != want {
		t.Fatalf("step %q status %s, want %s", step, got, want)
	}
}

func steps(specs ...store.StepParams) []store.StepParams { return specs }

func step(name string, deps ...string) store.StepParams {
	return store.StepParams{Name: name, Kind: "k_" + name, DependsOn: deps}
}

func forEach(name, over string, deps ...string) store.StepParams {
	st := step(name, append([]string{over}, deps...)...)
	st.ForEach = over
	return st
}

// flowTaskCount counts the flow's task rows per step (a step must never have two rows for
// one element), through GetFlow.
func flowTaskCount(t *testing.T, s store.Store, flowID uuid.UUID) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, st := range getFlow(t, s, flowID).Steps {
		out[st.Name] = len(st.TaskIDs)
	}
	return out
}

// --- validation ------------------------------------------------------------------------

func testFlowValidation(t *testing.T, s store.Store) {
	many := make([]store.StepParams, store.MaxFlowSteps+1)
	for i := range many {
		many[i] = step(fmt.Sprintf("s%d", i))
	}
	badKind := step("b")
	badKind.Kind = "no spaces"
	badForEach := step("b", "a")
	badForEach.ForEach = "c"
	badAttempts := step("b")
	badAttempts.MaxAttempts = -1
	badPayload := step("b")
	badPayload.Payload = json.RawMessage(`{"x": "\u0000"}`)
	cases := []struct {
		name  string
		steps []store.StepParams
		want  string // in the error message
	}{
		{"no steps", nil, "at least one step"},
		{"too many steps", many, "at most 1000"},
		{"bad step name", steps(step("a"), step("no spaces")), "no spaces"},
		{"duplicate name", steps(step("a"), step("a")), `step "a"`},
		{"bad kind", steps(step("a"), badKind), `step "b"`},
		{"bad max attempts", steps(step("a"), badAttempts), `step "b"`},
		{"bad payload", steps(step("a"), badPayload), `step "b"`},
		{"self dependency", steps(step("a", "a")), `step "a" depends on itself`},
		{"unknown dependency", steps(step("a"), step("b", "zz")), `step "b" depends on "zz"`},
		{"for_each outside depends_on", steps(step("a"), step("c"), badForEach), `step "b"`},
		{"cycle", steps(step("a", "c"), step("b", "a"), step("c", "b"), step("d")), "cycle"},
		{"repeated dependency", steps(step("a"), step("b", "a", "a")), `step "b"`},
	}
	for _, c := range cases {
		_, err := s.CreateFlow(ctx(t), store.FlowParams{Steps: c.steps})
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: CreateFlow error %v, want ErrInvalid", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.want)
		}
	}
	flows, _, err := s.ListFlows(ctx(t), store.FlowListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) != 0 || countTasks(t, s) != 0 {
		t.Fatalf("invalid flows wrote %d flows and %d tasks", len(flows), countTasks(t, s))
	}
	// Dependencies in any order are fine.
	f := createFlow(t, s, store.FlowParams{Steps: steps(step("c", "b"), step("b", "a"), step("a"))})
	if got := flowTaskCount(t, s, f.ID); got["a"] != 1 || got["b"] != 0 || got["c"] != 0 {
		t.Fatalf("tasks per step %v, want only a's", got)
	}
}

// --- moving forward --------------------------------------------------------------------

func testFlowLinear(t *testing.T, s store.Store) {
	b := step("b", "a")
	b.Payload = json.RawMessage(`{"p": 2}`)
	b.Queue = "other"
	b.Priority, b.MaxAttempts, b.TimeoutSeconds = 5, 3, 60
	f := createFlow(t, s, store.FlowParams{Name: "etl", Queue: "flows", Steps: steps(step("a"), b)})
	wantFlowStatus(t, f, store.FlowRunning)
	if f.Name != "etl" || f.Queue != "flows" || len(f.Steps) != 2 {
		t.Fatalf("created flow %+v", f)
	}
	wantStepStatus(t, f, "a", store.StepStatus(store.StatusPending))
	wantStepStatus(t, f, "b", store.StepWaiting)
	if st := stepOf(t, f, "b"); len(st.TaskIDs) != 0 || !slices.Equal(st.DependsOn, []string{"a"}) || st.Kind != "k_b" {
		t.Fatalf("step b %+v", st)
	}

	a := stepTask(t, s, f.ID, "a")
	if a.FlowID != f.ID || a.Step != "a" || a.Queue != "flows" || a.Kind != "k_a" || a.Item != nil || a.Index != nil {
		t.Fatalf("task of a: flow %s step %q queue %q kind %q item %s index %v", a.FlowID, a.Step, a.Queue, a.Kind, a.Item, a.Index)
	}
	jsonEqual(t, "a's inputs", a.Inputs, json.RawMessage(`{}`))
	claimed := claimID(t, s, a, store.StatusPending, 30*time.Second)
	if claimed.FlowID != f.ID || claimed.Step != "a" {
		t.Fatalf("claimed task of a: flow %s step %q", claimed.FlowID, claimed.Step)
	}
	jsonEqual(t, "claimed a's inputs", claimed.Inputs, json.RawMessage(`{}`))
	o := outcome(claimed, store.Succeed, "")
	o.Output = json.RawMessage(`{"rows": 3}`)
	recordOK(t, s, o, store.StatusSucceeded)

	f = getFlow(t, s, f.ID)
	wantFlowStatus(t, f, store.FlowRunning)
	wantStepStatus(t, f, "a", store.StepStatus(store.StatusSucceeded))
	jsonEqual(t, "a's output", stepOf(t, f, "a").Output, json.RawMessage(`{"rows": 3}`))
	bt := stepTask(t, s, f.ID, "b")
	if bt.Queue != "other" || bt.Priority != 5 || bt.MaxAttempts != 3 || bt.TimeoutSeconds != 60 || bt.Status != store.StatusPending {
		t.Fatalf("task of b %+v", bt)
	}
	jsonEqual(t, "b's payload", bt.Payload, json.RawMessage(`{"p": 2}`))
	jsonEqual(t, "b's inputs", bt.Inputs, json.RawMessage(`{"a": {"rows": 3}}`))
	claimedB := claim(t, s, store.ClaimParams{Queue: "other", From: store.StatusPending, WorkerID: "w", Limit: 5, LeaseDuration: time.Minute})
	if len(claimedB) != 1 || claimedB[0].ID != bt.ID {
		t.Fatalf("claim of queue other: %v, want b's task", ids(claimedB))
	}
	jsonEqual(t, "claimed b's inputs", claimedB[0].Inputs, json.RawMessage(`{"a": {"rows": 3}}`))
	recordOK(t, s, outcome(claimedB[0], store.Succeed, ""), store.StatusSucceeded)

	f = getFlow(t, s, f.ID)
	wantFlowStatus(t, f, store.FlowSucceeded)
	wantStepStatus(t, f, "b", store.StepStatus(store.StatusSucceeded))
	if out := stepOf(t, f, "b").Output; out != nil && string(out) != "null" {
		t.Fatalf("b returned no output, step output %s", out)
	}
}

func testFlowDiamond(t *testing.T, s store.Store) {
	f := createFlow(t, s, store.FlowParams{Steps: steps(step("d", "b", "c"), step("b", "a"), step("c", "a"), step("a"))})
	succeedStep(t, s, stepTask(t, s, f.ID, "a"), `1`)
	b, c := stepTask(t, s, f.ID, "b"), stepTask(t, s, f.ID, "c")
	jsonEqual(t, "b's inputs", b.Inputs, json.RawMessage(`{"a": 1}`))
	succeedStep(t, s, b, `"from b"`)
	if n := flowTaskCount(t, s, f.ID)["d"]; n != 0 {
		t.Fatalf("d has %d tasks with c still running", n)
	}
	wantStepStatus(t, getFlow(t, s, f.ID), "d", store.StepWaiting)
	succeedStep(t, s, c, `"from c"`)
	d := stepTask(t, s, f.ID, "d")
	jsonEqual(t, "d's inputs", d.Inputs, json.RawMessage(`{"b": "from b", "c": "from c"}`))
	succeedStep(t, s, d, `{"done": true}`)
	f = getFlow(t, s, f.ID)
	wantFlowStatus(t, f, store.FlowSucceeded)
	if got := flowTaskCount(t, s, f.ID); got["a"] != 1 || got["b"] != 1 || got["c"] != 1 || got["d"] != 1 {
		t.Fatalf("tasks per step %v, want one each", got)
	}
}

func testFlowFanOut(t *testing.T, s store.Store) {
	f := createFlow(t, s, store.FlowParams{Steps: steps(step("a"), forEach("b", "a"), step("c", "b"))})
	var items []string
	for i := range 10 {
		items = append(items, fmt.Sprintf(`{"n": %d}`, i))
	}
	succeedStep(t, s, stepTask(t, s, f.ID, "a"), "["+strings.Join(items, ",")+"]")
	bs := stepTasks(t, s, f.ID, "b")
	if len(bs) != 10 {
		t.Fatalf("b has %d tasks, want 10", len(bs))
	}
	for i, b := range bs {
		if b.Index == nil || *b.Index != i {
			t.Fatalf("b's task %d has index %v", i, b.Index)
		}
		jsonEqual(t, fmt.Sprintf("b's item %d", i), b.Item, json.RawMessage(items[i]))
		jsonEqual(t, fmt.Sprintf("b's task %d inputs", i), b.Inputs, json.RawMessage("{\"a\": ["+strings.Join(items, ",")+"]}"))
	}
	wantStepStatus(t, getFlow(t, s, f.ID), "b", store.StepStatus(store.StatusPending))
	// Finish them in reverse order: the fan-in is in element order all the same.
	claimed := claimID(t, s, bs[9], store.StatusPending, 30*time.Second)
	wantStepStatus(t, getFlow(t, s, f.ID), "b", store.StepStatus(store.StatusProcessing))
	o := outcome(claimed, store.Succeed, "")
	o.Output = json.RawMessage(`"out 9"`)
	recordOK(t, s, o, store.StatusSucceeded)
	for i := 8; i >= 0; i-- {
		if n := flowTaskCount(t, s, f.ID)["c"]; n != 0 {
			t.Fatalf("c started with %d of b's tasks left", i+1)
		}
		succeedStep(t, s, bs[i], fmt.Sprintf(`"out %d"`, i))
	}
	var outs []string
	for i := range 10 {
		outs = append(outs, fmt.Sprintf(`"out %d"`, i))
	}
	fanIn := "[" + strings.Join(outs, ",") + "]"
	f = getFlow(t, s, f.ID)
	wantStepStatus(t, f, "b", store.StepStatus(store.StatusSucceeded))
	jsonEqual(t, "b's output", stepOf(t, f, "b").Output, json.RawMessage(fanIn))
	if got := stepOf(t, f, "b").TaskIDs; !slices.Equal(got, ids(bs)) {
		t.Fatalf("b's task ids %v, want %v (element order)", got, ids(bs))
	}
	c := stepTask(t, s, f.ID, "c")
	jsonEqual(t, "c's inputs", c.Inputs, json.RawMessage(`{"b": `+fanIn+`}`))
	if c.Item != nil || c.Index != nil {
		t.Fatalf("c (no for_each) has item %s index %v", c.Item, c.Index)
	}
	succeedStep(t, s, c, "")
	wantFlowStatus(t, getFlow(t, s, f.ID), store.FlowSucceeded)
}

func testFlowFanOutEmpty(t *testing.T, s store.Store) {
	f := createFlow(t, s, store.FlowParams{Steps: steps(step("a"), forEach("b", "a"), step("c", "b"))})
	succeedStep(t, s, stepTask(t, s, f.ID, "a"), `[]`)
	f = getFlow(t, s, f.ID)
	wantStepStatus(t, f, "b", store.StepStatus(store.StatusSucceeded))
	jsonEqual(t, "b's output", stepOf(t, f, "b").Output, json.RawMessage(`[]`))
	if n := len(stepOf(t, f, "b").TaskIDs); n != 0 {
		t.Fatalf("b has %d tasks for an empty array", n)
	}
	c := stepTask(t, s, f.ID, "c")
	jsonEqual(t, "c's inputs", c.Inputs, json.RawMessage(`{"b": []}`))
	succeedStep(t, s, c, "")
	wantFlowStatus(t, getFlow(t, s, f.ID), store.FlowSucceeded)

	// An empty array as the last step's input ends the flow in the same transaction.
	f = createFlow(t, s, store.FlowParams{Steps: steps(step("a"), forEach("b", "a"))})
	succeedStep(t, s, stepTask(t, s, f.ID, "a"), `[]`)
	wantFlowStatus(t, getFlow(t, s, f.ID), store.FlowSucceeded)
}

func testFlowFanOutNonArray(t *testing.T, s store.Store) {
	f := createFlow(t, s, store.FlowParams{Steps: steps(step("a"), forEach("b", "a"), step("c", "b"), step("x"))})
	x := claimID(t, s, stepTask(t, s, f.ID, "x"), store.StatusPending, 30*time.Second)
	succeedStep(t, s, stepTask(t, s, f.ID, "a"), `{"not": "an array"}`)
	f = getFlow(t, s, f.ID)
	wantFlowStatus(t, f, store.FlowFailed)
	b := stepOf(t, f, "b")
	if b.Status != store.StepStatus(store.StatusFailed) || len(b.TaskIDs) != 0 || !strings.Contains(b.Error, "not an array") {
		t.Fatalf("step b: status %s, %d tasks, error %q; want FAILED, none, saying why", b.Status, len(b.TaskIDs), b.Error)
	}
	wantStepStatus(t, f, "c", store.StepStatus(store.StatusCanceled))
	// The running step is asked to stop.
	if got := get(t, s, x.ID); got.CancelRequestedAt == nil || got.Status != store.StatusProcessing {
		t.Fatalf("running task of x: status %s, cancel requested %v", got.Status, got.CancelRequestedAt)
	}
	// A missing output (null) is no array either.
	f = createFlow(t, s, store.FlowParams{Steps: steps(step("a"), forEach("b", "a"))})
	succeedStep(t, s, stepTask(t, s, f.ID, "a"), "")
	f = getFlow(t, s, f.ID)
	wantFlowStatus(t, f, store.FlowFailed)
	wantStepStatus(t, f, "b", store.StepStatus(store.StatusFailed))
}

// failureFlow is a -> (b, c, e); c -> d: after a succeeds, b fails while c runs and e
// waits to be claimed.
func failureFlow(t *testing.T, s store.Store) (f *store.Flow, c *store.Task) {
	t.Helper()
	f = createFlow(t, s, store.FlowParams{Steps: steps(step("a"), step("b", "a"), step("c", "a"), step("d", "c"), step("e", "a"))})
	succeedStep(t, s, stepTask(t, s, f.ID, "a"), `1`)
	b := claimID(t, s, stepTask(t, s, f.ID, "b"), store.StatusPending, 30*time.Second)
	c = claimID(t, s, stepTask(t, s, f.ID, "c"), store.StatusPending, 30*time.Second)
	recordOK(t, s, outcome(b, store.Fail, "permanent boom"), store.StatusFailed)
	return getFlow(t, s, f.ID), c
}

func testFlowFailure(t *testing.T, s store.Store) {
	listen, err := s.Listen(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	f, c := failureFlow(t, s)
	wantFlowStatus(t, f, store.FlowFailed)
	wantStepStatus(t, f, "a", store.StepStatus(store.StatusSucceeded))
	wantStepStatus(t, f, "b", store.StepStatus(store.StatusFailed))
	if e := stepOf(t, f, "b").Error; !strings.Contains(e, "permanent boom") {
		t.Fatalf("step b's error %q, want the task's", e)
	}
	wantStepStatus(t, f, "c", store.StepStatus(store.StatusProcessing))
	wantStepStatus(t, f, "d", store.StepStatus(store.StatusCanceled))
	wantStepStatus(t, f, "e", store.StepStatus(store.StatusCanceled))
	if e := stepTask(t, s, f.ID, "e"); e.Status != store.StatusCanceled {
		t.Fatalf("waiting task of e is %s, want CANCELED", e.Status)
	}
	running := get(t, s, c.ID)
	if running.Status != store.StatusProcessing || running.CancelRequestedAt == nil {
		t.Fatalf("running task of c: %s, cancel requested %v", running.Status, running.CancelRequestedAt)
	}
	// Its worker hears of it, as after CancelTask.
	waitFor(t, "the cancel notification of c's task", func() bool {
		for {
			select {
			case n := <-listen:
				if n.Kind == store.CancelRequested && n.TaskID == c.ID {
					return true
				}
			default:
				return false
			}
		}
	})
	// The worker records the cancel: nothing more changes.
	recordOK(t, s, outcome(c, store.Retry, "stopped"), store.StatusCanceled)
	f = getFlow(t, s, f.ID)
	wantFlowStatus(t, f, store.FlowFailed)
	wantStepStatus(t, f, "c", store.StepStatus(store.StatusCanceled))
	if got := flowTaskCount(t, s, f.ID); got["d"] != 0 {
		t.Fatalf("d got %d tasks in a failed flow", got["d"])
	}
}

func testFlowDeadAfterRetries(t *testing.T, s store.Store) {
	a := step("a")
	a.MaxAttempts = 2
	f := createFlow(t, s, store.FlowParams{Steps: steps(a, step("b", "a"))})
	task := stepTask(t, s, f.ID, "a")
	c := claimID(t, s, task, store.StatusPending, 30*time.Second)
	recordOK(t, s, outcome(c, store.Retry, "try again"), store.StatusPending)
	wantFlowStatus(t, getFlow(t, s, f.ID), store.FlowRunning)
	c = claimID(t, s, task, store.StatusPending, 30*time.Second)
	recordOK(t, s, outcome(c, store.Retry, "still broken"), store.StatusDead)
	f = getFlow(t, s, f.ID)
	wantFlowStatus(t, f, store.FlowFailed)
	wantStepStatus(t, f, "a", store.StepStatus(store.StatusDead))
	wantStepStatus(t, f, "b", store.StepStatus(store.StatusCanceled))
}

func testFlowStepTaskCanceled(t *testing.T, s store.Store) {
	f := createFlow(t, s, store.FlowParams{Steps: steps(step("a"), step("b", "a"))})
	if _, err := s.CancelTask(ctx(t), stepTask(t, s, f.ID, "a").ID); err != nil {
		t.Fatal(err)
	}
	f = getFlow(t, s, f.ID)
	wantFlowStatus(t, f, store.FlowFailed)
	wantStepStatus(t, f, "a", store.StepStatus(store.StatusCanceled))
	wantStepStatus(t, f, "b", store.StepStatus(store.StatusCanceled))
}

func testFlowCancel(t *testing.T, s store.Store) {
	f := createFlow(t, s, store.FlowParams{Steps: steps(step("a"), step("b"), step("c", "a", "b"))})
	a := claimID(t, s, stepTask(t, s, f.ID, "a"), store.StatusPending, 30*time.Second)
	b := stepTask(t, s, f.ID, "b")
	got, err := s.CancelFlow(ctx(t), f.ID)
	if err != nil {
		t.Fatalf("CancelFlow: %v", err)
	}
	wantCanceledMidway(t, s, got, a.ID, b.ID)
	// The running task finishes as canceled (or even succeeds): the flow stays CANCELED
	// and starts nothing.
	recordOK(t, s, outcome(a, store.Succeed, ""), store.StatusSucceeded)
	f = getFlow(t, s, f.ID)
	wantFlowStatus(t, f, store.FlowCanceled)
	if n := len(stepOf(t, f, "c").TaskIDs); n != 0 {
		t.Fatalf("c got %d tasks in a canceled flow", n)
	}
	// Canceling again changes nothing; a flow that ended otherwise cannot be canceled.
	again, err := s.CancelFlow(ctx(t), f.ID)
	if err != nil || again.Status != store.FlowCanceled {
		t.Fatalf("second CancelFlow: %v, %v", again, err)
	}
	done := createFlow(t, s, store.FlowParams{Steps: steps(step("a"))})
	succeedStep(t, s, stepTask(t, s, done.ID, "a"), "")
	_, err = s.CancelFlow(ctx(t), done.ID)
	wantErr(t, err, store.ErrIllegalTransition, "CancelFlow of a SUCCEEDED flow")
	_, err = s.CancelFlow(ctx(t), uuid.New())
	wantErr(t, err, store.ErrNotFound, "CancelFlow of no flow")
	_, err = s.GetFlow(ctx(t), uuid.New())
	wantErr(t, err, store.ErrNotFound, "GetFlow of no flow")
	if !strings.Contains(err.Error(), "flow not found") {
		t.Fatalf("GetFlow of no flow: %q does not say the flow is not found", err)
	}
}

func testFlowReplay(t *testing.T, s store.Store) {
	f, c := failureFlow(t, s)
	b := stepTask(t, s, f.ID, "b")
	// c's task still runs (its cancel request unanswered): its CANCELED would fail the
	// replayed flow at once, so the replay waits for it.
	_, err := s.ReplayFlow(ctx(t), f.ID)
	wantErr(t, err, store.ErrConflict, "ReplayFlow with a task still running")
	recordOK(t, s, outcome(c, store.Cancel, ""), store.StatusCanceled)
	before := flowTaskCount(t, s, f.ID)

	got, err := s.ReplayFlow(ctx(t), f.ID)
	if err != nil {
		t.Fatalf("ReplayFlow: %v", err)
	}
	wantFlowStatus(t, got, store.FlowRunning)
	wantStepStatus(t, got, "a", store.StepStatus(store.StatusSucceeded))
	wantStepStatus(t, got, "b", store.StepStatus(store.StatusPending))
	wantStepStatus(t, got, "c", store.StepStatus(store.StatusPending))
	wantStepStatus(t, got, "d", store.StepWaiting)
	wantStepStatus(t, got, "e", store.StepStatus(store.StatusPending))
	if after := flowTaskCount(t, s, f.ID); !maps2Equal(before, after) {
		t.Fatalf("replay made task rows: before %v, after %v", before, after)
	}
	rb := get(t, s, b.ID)
	if rb.Status != store.StatusPending || rb.AttemptCount != 0 {
		t.Fatalf("b's replayed task: %s, %d attempts", rb.Status, rb.AttemptCount)
	}
	if last := lastAttempt(t, s, b.ID); last.Outcome != store.OutcomeReplayed {
		t.Fatalf("b's last attempt %s, want a REPLAYED event", last.Outcome)
	}
	for _, name := range []string{"b", "c", "e"} {
		succeedStep(t, s, stepTask(t, s, f.ID, name), `"`+name+`"`)
	}
	d := stepTask(t, s, f.ID, "d")
	jsonEqual(t, "d's inputs", d.Inputs, json.RawMessage(`{"c": "c"}`))
	succeedStep(t, s, d, "")
	f = getFlow(t, s, f.ID)
	wantFlowStatus(t, f, store.FlowSucceeded)
	if got := flowTaskCount(t, s, f.ID); got["a"] != 1 || got["b"] != 1 || got["c"] != 1 || got["d"] != 1 || got["e"] != 1 {
		t.Fatalf("tasks per step %v, want one each", got)
	}

	// A non-array for_each failure is replayed too: the step is tried again.
	f = createFlow(t, s, store.FlowParams{Steps: steps(step("a"), forEach("b", "a"))})
	succeedStep(t, s, stepTask(t, s, f.ID, "a"), `{}`)
	got, err = s.ReplayFlow(ctx(t), f.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantFlowStatus(t, got, store.FlowFailed)
	wantStepStatus(t, got, "b", store.StepStatus(store.StatusFailed))
}

func maps2Equal(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func testFlowReplayCanceled(t *testing.T, s store.Store) {
	f := createFlow(t, s, store.FlowParams{Steps: steps(step("a"), forEach("b", "a"), step("c", "b"))})
	succeedStep(t, s, stepTask(t, s, f.ID, "a"), `[1, 2, 3]`)
	bs := stepTasks(t, s, f.ID, "b")
	succeedStep(t, s, bs[0], `10`)
	if _, err := s.CancelFlow(ctx(t), f.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReplayFlow(ctx(t), f.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantFlowStatus(t, got, store.FlowRunning)
	if n := len(stepOf(t, got, "b").TaskIDs); n != 3 {
		t.Fatalf("b has %d tasks after the replay, want 3", n)
	}
	if st := get(t, s, bs[0].ID).Status; st != store.StatusSucceeded {
		t.Fatalf("b's succeeded element is %s after the replay", st)
	}
	succeedStep(t, s, bs[1], `20`)
	succeedStep(t, s, bs[2], `30`)
	c := stepTask(t, s, f.ID, "c")
	jsonEqual(t, "c's inputs", c.Inputs, json.RawMessage(`{"b": [10, 20, 30]}`))
	succeedStep(t, s, c, "")
	wantFlowStatus(t, getFlow(t, s, f.ID), store.FlowSucceeded)
}

func testFlowReplayIllegal(t *testing.T, s store.Store) {
	f := createFlow(t, s, store.FlowParams{Steps: steps(step("a"))})
	_, err := s.ReplayFlow(ctx(t), f.ID)
	wantErr(t, err, store.ErrIllegalTransition, "ReplayFlow of a RUNNING flow")
	succeedStep(t, s, stepTask(t, s, f.ID, "a"), "")
	_, err = s.ReplayFlow(ctx(t), f.ID)
	wantErr(t, err, store.ErrIllegalTransition, "ReplayFlow of a SUCCEEDED flow")
	_, err = s.ReplayFlow(ctx(t), uuid.New())
	wantErr(t, err, store.ErrNotFound, "ReplayFlow of no flow")
}

func testFlowIdempotency(t *testing.T, s store.Store) {
	p := store.FlowParams{IdempotencyKey: "nightly", Steps: steps(step("a"))}
	first := createFlow(t, s, p)
	if first.IdempotencyKey != "nightly" {
		t.Fatalf("idempotency key %q", first.IdempotencyKey)
	}
	res, err := s.CreateFlow(ctx(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Existing || res.Flow.ID != first.ID {
		t.Fatalf("second create: existing %v, id %s; want the first flow %s", res.Existing, res.Flow.ID, first.ID)
	}
	if len(res.Flow.Steps) != 1 || countTasks(t, s) != 1 {
		t.Fatalf("second create: %d steps, %d tasks in the store", len(res.Flow.Steps), countTasks(t, s))
	}
	// A SUCCEEDED flow keeps its key.
	succeedStep(t, s, stepTask(t, s, first.ID, "a"), "")
	res, err = s.CreateFlow(ctx(t), p)
	if err != nil || !res.Existing || res.Flow.ID != first.ID {
		t.Fatalf("create after success: %v, %+v", err, res)
	}
	// A CANCELED (or FAILED) flow frees it.
	p.IdempotencyKey = "hourly"
	canceled := createFlow(t, s, p)
	if _, err := s.CancelFlow(ctx(t), canceled.ID); err != nil {
		t.Fatal(err)
	}
	fresh := createFlow(t, s, p)
	if fresh.ID == canceled.ID {
		t.Fatal("a canceled flow's key still returned it")
	}
	// ... and replaying the canceled flow now would break the key: it is refused.
	_, err = s.ReplayFlow(ctx(t), canceled.ID)
	wantErr(t, err, store.ErrConflict, "ReplayFlow of a flow whose key a live flow holds")
}

func testFlowList(t *testing.T, s store.Store) {
	var made []*store.Flow
	for i := range 5 {
		name := "even"
		if i%2 == 1 {
			name = "odd"
		}
		made = append(made, createFlow(t, s, store.FlowParams{Name: name, Steps: steps(step("a"))}))
	}
	if _, err := s.CancelFlow(ctx(t), made[1].ID); err != nil {
		t.Fatal(err)
	}
	succeedStep(t, s, stepTask(t, s, made[2].ID, "a"), "")
	list := func(p store.FlowListParams) []uuid.UUID {
		t.Helper()
		var out []uuid.UUID
		for range 20 {
			page, next, err := s.ListFlows(ctx(t), p)
			if err != nil {
				t.Fatalf("ListFlows(%+v): %v", p, err)
			}
			for _, f := range page {
				if f.Steps != nil {
					t.Fatalf("ListFlows returned steps")
				}
				out = append(out, f.ID)
			}
			if next == "" {
				return out
			}
			p.Cursor = next
		}
		t.Fatal("ListFlows never ended")
		return nil
	}
	rev := func(fs ...*store.Flow) []uuid.UUID {
		var out []uuid.UUID
		for i := len(fs) - 1; i >= 0; i-- {
			out = append(out, fs[i].ID)
		}
		return out
	}
	check := func(what string, got, want []uuid.UUID) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	check("all, by 2", list(store.FlowListParams{Limit: 2}), rev(made...))
	check("running", list(store.FlowListParams{Statuses: []store.FlowStatus{store.FlowRunning}, Limit: 1}), rev(made[0], made[3], made[4]))
	check("odd", list(store.FlowListParams{Name: "odd"}), rev(made[1], made[3]))
	check("even, ended", list(store.FlowListParams{Name: "even", Statuses: []store.FlowStatus{store.FlowSucceeded, store.FlowCanceled}}), rev(made[2]))
	_, _, err := s.ListFlows(ctx(t), store.FlowListParams{Statuses: []store.FlowStatus{"DONE"}})
	wantErr(t, err, store.ErrInvalid, "ListFlows with an unknown status")
	_, _, err = s.ListFlows(ctx(t), store.FlowListParams{Cursor: "!!"})
	wantErr(t, err, store.ErrInvalid, "ListFlows with a bad cursor")
}

// testFlowStepLifecycle: a step task's attempts are a task's: leases expire and are
// reaped back to PENDING, retries wait their backoff, heartbeats extend the lease.
func testFlowStepLifecycle(t *testing.T, s store.Store) {
	f := createFlow(t, s, store.FlowParams{Queue: "life", Steps: steps(step("a"), step("b", "a"))})
	task := stepTask(t, s, f.ID, "a")
	c := claimID(t, s, task, store.StatusPending, 50*time.Millisecond)
	if c.AttemptCount != 1 || c.LeaseToken == uuid.Nil {
		t.Fatalf("claimed step task: attempt %d, token %s", c.AttemptCount, c.LeaseToken)
	}
	reapUntil(t, s, store.ReapParams{Limit: 10}, 1)
	reaped := get(t, s, task.ID)
	if reaped.Status != store.StatusPending {
		t.Fatalf("reaped step task is %s, want PENDING", reaped.Status)
	}
	wantFlowStatus(t, getFlow(t, s, f.ID), store.FlowRunning)
	waitFor(t, "the reaped task to be due", func() bool { return !get(t, s, task.ID).ScheduledFor.After(get(t, s, task.ID).ReadAt) })
	c = claimID(t, s, task, store.StatusPending, 30*time.Second)
	if c.AttemptCount != 2 {
		t.Fatalf("second claim: attempt %d", c.AttemptCount)
	}
	if _, err := s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: c.ID, LeaseToken: c.LeaseToken, LeaseDuration: time.Minute}); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	o := outcome(c, store.Retry, "again")
	recordOK(t, s, o, store.StatusPending)
	c = claimID(t, s, task, store.StatusPending, 30*time.Second)
	o = outcome(c, store.Succeed, "")
	o.Output = json.RawMessage(`"third time"`)
	recordOK(t, s, o, store.StatusSucceeded)
	b := stepTask(t, s, f.ID, "b")
	jsonEqual(t, "b's inputs", b.Inputs, json.RawMessage(`{"a": "third time"}`))
	if got := attempts(t, s, task.ID); len(got) != 3 || got[0].Outcome != store.OutcomeLeaseExpired || got[1].Outcome != store.OutcomeRetried || got[2].Outcome != store.OutcomeSucceeded {
		t.Fatalf("attempts of a's task: %+v", got)
	}
	// A stale outcome of the first lease changes nothing.
	res := record(t, s, outcome(c, store.Succeed, ""))[0]
	wantErr(t, res.Err, store.ErrLeaseLost, "a repeated outcome")
	if n := flowTaskCount(t, s, f.ID)["b"]; n != 1 {
		t.Fatalf("b has %d tasks", n)
	}
}

// testFlowConcurrentCompletions: the ten elements of a fan-out finish at once, each in
// its own call; the join starts exactly once, with every output.
func testFlowConcurrentCompletions(t *testing.T, s store.Store) {
	for round := range 3 {
		f := createFlow(t, s, store.FlowParams{Steps: steps(step("a"), forEach("b", "a"), step("c", "a"), step("d", "b", "c"))})
		succeedStep(t, s, stepTask(t, s, f.ID, "a"), `[0,1,2,3,4,5,6,7,8,9]`)
		var claimed []*store.Task
		for _, b := range stepTasks(t, s, f.ID, "b") {
			claimed = append(claimed, claimID(t, s, b, store.StatusPending, time.Minute))
		}
		claimed = append(claimed, claimID(t, s, stepTask(t, s, f.ID, "c"), store.StatusPending, time.Minute))
		var wg sync.WaitGroup
		errs := make(chan error, len(claimed))
		for i, c := range claimed {
			wg.Go(func() {
				o := outcome(c, store.Succeed, "")
				o.Output = json.RawMessage(fmt.Sprint(i))
				res, err := s.RecordOutcomes(ctx(t), []store.Outcome{o})
				if err == nil {
					err = res[0].Err
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: concurrent outcome: %v", round, err)
			}
		}
		d := stepTask(t, s, f.ID, "d")
		jsonEqual(t, "d's inputs", d.Inputs, json.RawMessage(`{"b": [0,1,2,3,4,5,6,7,8,9], "c": 10}`))
	}
}

func testFlowPlainTask(t *testing.T, s store.Store) {
	task := createOne(t, s, store.CreateParams{Kind: "plain"})
	if task.FlowID != uuid.Nil || task.Step != "" || task.Inputs != nil || task.Item != nil || task.Index != nil {
		t.Fatalf("plain task has flow fields: %+v", task)
	}
	c := claimID(t, s, task, store.StatusPending, time.Minute)
	if c.FlowID != uuid.Nil || c.Inputs != nil {
		t.Fatalf("claimed plain task has flow fields: %+v", c)
	}
}

// testFlowRetention: a flow's tasks are deleted only with their flow, and a flow goes
// with all of its tasks: never half a flow. Plain tasks are deleted as before.
func testFlowRetention(t *testing.T, s store.Store) {
	plain := driveTo(t, s, store.CreateParams{Kind: "plain"}, store.StatusSucceeded)
	done := createFlow(t, s, store.FlowParams{Steps: steps(step("a"), step("b", "a"))})
	succeedStep(t, s, stepTask(t, s, done.ID, "a"), `1`)
	succeedStep(t, s, stepTask(t, s, done.ID, "b"), "")
	failed, _ := failureFlow(t, s) // c still runs, with a cancel request
	running := createFlow(t, s, store.FlowParams{Steps: steps(step("a"), step("b", "a"))})
	runningA := succeedStep(t, s, stepTask(t, s, running.ID, "a"), "")
	doneIDs := stepOf(t, getFlow(t, s, done.ID), "a").TaskIDs
	doneIDs = append(doneIDs, stepOf(t, getFlow(t, s, done.ID), "b").TaskIDs...)

	later := time.Now().Add(time.Hour)
	n, err := s.DeleteFinishedTasks(ctx(t), store.RetentionParams{SucceededBefore: later, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("deleted %d tasks, want the plain one and the succeeded flow's two", n)
	}
	for _, id := range append(doneIDs, plain.ID) {
		if _, err := s.GetTask(ctx(t), id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("task %s after retention: %v, want ErrNotFound", id, err)
		}
	}
	_, err = s.GetFlow(ctx(t), done.ID)
	wantErr(t, err, store.ErrNotFound, "GetFlow of a deleted flow")
	// The failed flow is kept (failed cut-off: keep) with all its tasks, its succeeded
	// step's included; so is the running flow's finished step.
	for _, st := range getFlow(t, s, failed.ID).Steps {
		for _, id := range st.TaskIDs {
			get(t, s, id)
		}
	}
	get(t, s, runningA.ID)

	// With the failed cut-off, the failed flow goes once its last task ended.
	params := store.RetentionParams{SucceededBefore: later, FailedBefore: later, Limit: 100}
	if n, err := s.DeleteFinishedTasks(ctx(t), params); err != nil || n != 0 {
		t.Fatalf("retention with a task of the failed flow running: %d, %v; want 0", n, err)
	}
	c := stepTask(t, s, failed.ID, "c")
	claimedC := &store.Task{ID: c.ID, LeaseToken: c.LeaseToken}
	recordOK(t, s, outcome(claimedC, store.Cancel, ""), store.StatusCanceled)
	var total int
	for _, st := range getFlow(t, s, failed.ID).Steps {
		total += len(st.TaskIDs)
	}
	if n, err := s.DeleteFinishedTasks(ctx(t), params); err != nil || n != total {
		t.Fatalf("retention of the failed flow: %d, %v; want its %d tasks", n, err, total)
	}
	_, err = s.GetFlow(ctx(t), failed.ID)
	wantErr(t, err, store.ErrNotFound, "GetFlow of the deleted failed flow")
	if f := getFlow(t, s, running.ID); f.Status != store.FlowRunning {
		t.Fatalf("running flow is %s", f.Status)
	}
	flows, _, err := s.ListFlows(ctx(t), store.FlowListParams{})
	if err != nil || len(flows) != 1 || flows[0].ID != running.ID {
		t.Fatalf("flows left: %v, %v; want the running one", flows, err)
	}
}

// wantCanceledMidway checks flow f (a -> b -> c, a's task running, b's pending) after a
// cancel: the flow and its unstarted steps CANCELED, the pending task canceled, the
// running one asked to stop.
func wantCanceledMidway(t *testing.T, s store.Store, f *store.Flow, running, pending uuid.UUID) {
	t.Helper()
	wantFlowStatus(t, f, store.FlowCanceled)
	wantStepStatus(t, f, "b", store.StepStatus(store.StatusCanceled))
	wantStepStatus(t, f, "c", store.StepStatus(store.StatusCanceled))
	if bt := get(t, s, pending); bt.Status != store.StatusCanceled {
		t.Fatalf("pending task of the canceled flow is %s", bt.Status)
	}
	if at := get(t, s, running); at.Status != store.StatusProcessing || at.CancelRequestedAt == nil {
		t.Fatalf("running task of the canceled flow: %s, cancel requested %v", at.Status, at.CancelRequestedAt)
	}
}
