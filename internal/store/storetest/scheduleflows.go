package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// Schedules of kind flow (DESIGN.md section 10; store/scheduleflow.go): each tick starts
// one flow keyed schedule:<name>:<unix of the tick>, with the catch-up policies of task
// schedules and every overlap policy (buffer_one and cancel_other:
// scheduleflowoverlap.go).

var scheduleFlowTests = []testCase{
	{"CreateGetUpdate", testScheduleFlowCRUD},
	{"CreateErrors", testScheduleFlowCreateErrors},
	{"ClaimStartsOneFlowPerTick", testScheduleFlowClaim},
	{"CatchUpOne", testScheduleFlowCatchUpOne},
	{"OverlapSkip", testScheduleFlowOverlapSkip},
	{"OverlapBufferOne", testScheduleFlowBufferOne},
	{"OverlapBufferOneHeldCanceled", testScheduleFlowBufferOneHeldCanceled},
	{"OverlapBufferOneRestore", testScheduleFlowBufferOneRestore},
	{"OverlapCancelOther", testScheduleFlowCancelOther},
	{"Trigger", testScheduleFlowTrigger},
	{"ConcurrentClaimers", testScheduleFlowConcurrentClaims},
}

// etlTemplate is a schedule's flow: extract -> transform (for_each) -> load.
func etlTemplate(name string) *store.FlowParams {
	return &store.FlowParams{Name: name, Queue: "etl", Steps: steps(
		store.StepParams{Name: "extract", Kind: "extract", Payload: json.RawMessage(`{"source":"s3"}`)},
		forEach("transform", "extract"),
		step("load", "transform"),
	)}
}

func mkFlowSchedule(t *testing.T, s store.Store, name string, mutate func(p *store.ScheduleParams)) *store.Schedule {
	t.Helper()
	p := store.ScheduleParams{Name: name, Kind: store.ScheduleKindFlow, CronSpec: everyMinute, Flow: etlTemplate(name + "-flow")}
	if mutate != nil {
		mutate(&p)
	}
	return mkSchedule(t, s, p)
}

// scheduledFlows lists the flows named flowName, oldest first.
func scheduledFlows(t *testing.T, s store.Store, flowName string) []*store.Flow {
	t.Helper()
	var out []*store.Flow
	p := store.FlowListParams{Name: flowName, Limit: store.MaxListLimit}
	for {
		flows, next, err := s.ListFlows(ctx(t), p)
		if err != nil {
			t.Fatalf("ListFlows(%q): %v", flowName, err)
		}
		out = append(flows, out...)
		if next == "" {
			break
		}
		p.Cursor = next
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// checkScheduledFlow checks a flow a claim started for tick: its key, its template, its
// first step's task.
func checkScheduledFlow(t *testing.T, s store.Store, f *store.Flow, sc *store.Schedule, wantKey string) {
	t.Helper()
	got := getFlow(t, s, f.ID)
	if got.IdempotencyKey != wantKey {
		t.Fatalf("flow %s key %q, want %q", f.ID, got.IdempotencyKey, wantKey)
	}
	if got.Name != sc.Flow.Name || got.Queue != "etl" || len(got.Steps) != 3 {
		t.Fatalf("flow %s: name %q queue %q %d steps, want the template's", f.ID, got.Name, got.Queue, len(got.Steps))
	}
	wantFlowStatus(t, got, store.FlowRunning)
	task := stepTask(t, s, f.ID, "extract")
	if task.Kind != "extract" || task.Queue != "etl" || task.Status != store.StatusPending {
		t.Fatalf("extract task: kind %q queue %q status %s", task.Kind, task.Queue, task.Status)
	}
	jsonEqual(t, "extract payload", task.Payload, json.RawMessage(`{"source":"s3"}`))
	wantStepStatus(t, got, "transform", store.StepWaiting)
}

func testScheduleFlowCRUD(t *testing.T, s store.Store) {
	sc := mkFlowSchedule(t, s, "nightly", nil)
	if sc.Kind != store.ScheduleKindFlow || sc.Flow == nil || sc.Flow.ID != uuid.Nil || sc.Flow.IdempotencyKey != "" {
		t.Fatalf("created: kind %q flow %+v", sc.Kind, sc.Flow)
	}
	if sc.Task.Kind != store.ScheduleKindFlow || sc.Task.Queue != "etl" {
		t.Fatalf("a flow schedule's task placeholder is %+v, want kind flow on the flow's queue", sc.Task)
	}
	got := getSchedule(t, s, "nightly")
	if got.Flow == nil || len(got.Flow.Steps) != 3 || got.Flow.Name != "nightly-flow" || got.Flow.Queue != "etl" {
		t.Fatalf("got flow template %+v", got.Flow)
	}
	tr := got.Flow.Steps[1]
	if tr.Name != "transform" || tr.ForEach != "extract" || strings.Join(tr.DependsOn, ",") != "extract" || tr.Queue != "etl" {
		t.Fatalf("template step transform: %+v", tr)
	}
	jsonEqual(t, "template payload", got.Flow.Steps[0].Payload, json.RawMessage(`{"source":"s3"}`))
	all, err := s.ListSchedules(ctx(t))
	if err != nil || len(all) != 1 || all[0].Flow == nil {
		t.Fatalf("ListSchedules: %v %+v", err, all)
	}

	// A new flow replaces the template (and the placeholder's queue).
	next := &store.FlowParams{Name: "nightly-v2", Queue: "etl2", Steps: steps(step("only"))}
	up, err := s.UpdateSchedule(ctx(t), "nightly", store.ScheduleUpdate{Flow: next})
	if err != nil {
		t.Fatalf("UpdateSchedule(flow): %v", err)
	}
	if up.Flow == nil || up.Flow.Name != "nightly-v2" || len(up.Flow.Steps) != 1 || up.Task.Queue != "etl2" {
		t.Fatalf("updated: flow %+v task %+v", up.Flow, up.Task)
	}
	// Every overlap policy (buffer_one and cancel_other were refused for kind flow before
	// migration 0029).
	for _, o := range []store.Overlap{store.OverlapBufferOne, store.OverlapCancelOther, store.OverlapSkip} {
		if up, err = s.UpdateSchedule(ctx(t), "nightly", store.ScheduleUpdate{Overlap: &o}); err != nil || up.Overlap != o {
			t.Fatalf("UpdateSchedule(overlap %s): %v", o, err)
		}
	}
	skip := store.OverlapSkip

	bad := []struct {
		what string
		name string
		u    store.ScheduleUpdate
	}{
		{"a task for a flow schedule", "nightly", store.ScheduleUpdate{Task: &store.TaskTemplate{Kind: "k"}}},
		{"a cyclic flow", "nightly", store.ScheduleUpdate{Flow: &store.FlowParams{Steps: steps(step("a", "b"), step("b", "a"))}}},
		{"a flow for a task schedule", "plain", store.ScheduleUpdate{Flow: etlTemplate("x")}},
	}
	mkSchedule(t, s, store.ScheduleParams{Name: "plain", CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "k"}})
	for _, c := range bad {
		_, err := s.UpdateSchedule(ctx(t), c.name, c.u)
		wantErr(t, err, store.ErrInvalid, "UpdateSchedule with "+c.what)
	}
	if got := getSchedule(t, s, "nightly"); got.Flow.Name != "nightly-v2" || got.Overlap != skip {
		t.Fatalf("after refused updates: flow %q overlap %s", got.Flow.Name, got.Overlap)
	}
}

func testScheduleFlowCreateErrors(t *testing.T, s store.Store) {
	cases := []struct {
		what   string
		mutate func(p *store.ScheduleParams)
		want   string // the error names it
	}{
		{"no flow", func(p *store.ScheduleParams) { p.Flow = nil }, "flow"},
		{"a task too", func(p *store.ScheduleParams) { p.Task = store.TaskTemplate{Kind: "k"} }, "task"},
		{"an idempotency key", func(p *store.ScheduleParams) { p.Flow.IdempotencyKey = "mine" }, "idempotency_key"},
		{"a cycle", func(p *store.ScheduleParams) { p.Flow.Steps = steps(step("a", "b"), step("b", "a")) }, `"a"`},
		{"an unknown dependency", func(p *store.ScheduleParams) { p.Flow.Steps = steps(step("a", "ghost")) }, "ghost"},
		{"no steps", func(p *store.ScheduleParams) { p.Flow.Steps = nil }, "step"},
		{"an unknown overlap", func(p *store.ScheduleParams) { p.Overlap = "buffer_two" }, "buffer_two"},
	}
	for i, c := range cases {
		p := store.ScheduleParams{Name: fmt.Sprintf("bad-%d", i), Kind: store.ScheduleKindFlow, CronSpec: everyMinute, Flow: etlTemplate("f")}
		c.mutate(&p)
		_, err := s.CreateSchedule(ctx(t), p)
		wantErr(t, err, store.ErrInvalid, "CreateSchedule of kind flow with "+c.what)
		if !strings.Contains(err.Error(), c.want) {
			t.Fatalf("CreateSchedule with %s: error %q does not name %q", c.what, err, c.want)
		}
	}
	_, err := s.CreateSchedule(ctx(t), store.ScheduleParams{Name: "task-with-flow", CronSpec: everyMinute,
		Task: store.TaskTemplate{Kind: "k"}, Flow: etlTemplate("f")})
	wantErr(t, err, store.ErrInvalid, "CreateSchedule of kind task with a flow")
	if all, err := s.ListSchedules(ctx(t)); err != nil || len(all) != 0 {
		t.Fatalf("after refused creates: %d schedules, %v", len(all), err)
	}
}

func testScheduleFlowClaim(t *testing.T, s store.Store) {
	sc := mkFlowSchedule(t, s, "etl", func(p *store.ScheduleParams) { p.CatchUp = store.CatchUpAll })
	first := lastMinute(2)
	reschedule(t, s, "etl", first)
	c := claimOf(t, claimSchedules(t, s, 10), "etl")
	ticks := minuteTicks(first, c.NextRunAt)
	if len(ticks) < 3 || len(c.Flows) != len(ticks) || len(c.Runs) != 0 {
		t.Fatalf("claim: %d flows, %d tasks for ticks %v", len(c.Flows), len(c.Runs), ticks)
	}
	for i, f := range c.Flows {
		checkScheduledFlow(t, s, f, sc, store.ScheduleRunKey("etl", ticks[i]))
	}
	got := getSchedule(t, s, "etl")
	if got.CurrentRunID == nil || *got.CurrentRunID != c.Flows[len(c.Flows)-1].ID {
		t.Fatalf("current run %v, want the newest flow %s", got.CurrentRunID, c.Flows[len(c.Flows)-1].ID)
	}
	if got.LastRunAt == nil || !got.LastRunAt.Equal(ticks[len(ticks)-1]) {
		t.Fatalf("last run %v, want %s", got.LastRunAt, ticks[len(ticks)-1])
	}
	if again := claimSchedules(t, s, 10); len(again) != 0 {
		t.Fatalf("a second claim took %v", claimNames(again))
	}
	// The same ticks again (a restore, a reschedule back): their flows exist, none starts.
	reschedule(t, s, "etl", first)
	c = claimOf(t, claimSchedules(t, s, 10), "etl")
	if len(c.Flows) != 0 {
		t.Fatalf("claiming the same ticks again started %d flows", len(c.Flows))
	}
	if flows := scheduledFlows(t, s, "etl-flow"); len(flows) != len(ticks) {
		t.Fatalf("%d flows named etl-flow, want %d (one per tick)", len(flows), len(ticks))
	}
	// The schedule's flows move on like any other: extract's output fans out.
	flow := scheduledFlows(t, s, "etl-flow")[0]
	succeedStep(t, s, stepTask(t, s, flow.ID, "extract"), `[1,2]`)
	if n := len(stepTasks(t, s, flow.ID, "transform")); n != 2 {
		t.Fatalf("transform has %d tasks, want 2", n)
	}
}

func testScheduleFlowCatchUpOne(t *testing.T, s store.Store) {
	mkFlowSchedule(t, s, "hourly", nil) // catch-up one, the default
	first := lastMinute(4)
	reschedule(t, s, "hourly", first)
	c := claimOf(t, claimSchedules(t, s, 10), "hourly")
	ticks := minuteTicks(first, c.NextRunAt)
	if len(c.Flows) != 1 || c.SkippedTicks != len(ticks)-1 {
		t.Fatalf("catch-up one: %d flows, %d skipped, for %d due ticks", len(c.Flows), c.SkippedTicks, len(ticks))
	}
	if got := getFlow(t, s, c.Flows[0].ID).IdempotencyKey; got != store.ScheduleRunKey("hourly", ticks[len(ticks)-1]) {
		t.Fatalf("the one flow's key %q, want the latest tick's", got)
	}
}

func testScheduleFlowOverlapSkip(t *testing.T, s store.Store) {
	mkFlowSchedule(t, s, "skipper", func(p *store.ScheduleParams) { p.Overlap = store.OverlapSkip })
	reschedule(t, s, "skipper", lastMinute(1))
	c := claimOf(t, claimSchedules(t, s, 10), "skipper")
	if len(c.Flows) != 1 {
		t.Fatalf("first claim: %d flows, want 1", len(c.Flows))
	}
	running := c.Flows[0]
	// Its flow still RUNNING: the next tick is skipped.
	reschedule(t, s, "skipper", lastMinute(0))
	c = claimOf(t, claimSchedules(t, s, 10), "skipper")
	if len(c.Flows) != 0 || c.SkippedTicks != 1 {
		t.Fatalf("while the flow runs: %d flows, %d skipped; want 0 and 1", len(c.Flows), c.SkippedTicks)
	}
	// Once the flow is not RUNNING (canceled here), the next tick starts one.
	if _, err := s.CancelFlow(ctx(t), running.ID); err != nil {
		t.Fatal(err)
	}
	reschedule(t, s, "skipper", lastMinute(0))
	c = claimOf(t, claimSchedules(t, s, 10), "skipper")
	if len(c.Flows) != 1 {
		t.Fatalf("after the flow ended: %d flows, want 1", len(c.Flows))
	}
	if got := getSchedule(t, s, "skipper"); got.CurrentRunID == nil || *got.CurrentRunID != c.Flows[0].ID {
		t.Fatalf("current run %v, want %s", got.CurrentRunID, c.Flows[0].ID)
	}
}

func testScheduleFlowTrigger(t *testing.T, s store.Store) {
	sc := mkFlowSchedule(t, s, "manual", nil)
	f, err := s.TriggerScheduleFlow(ctx(t), "manual")
	if err != nil {
		t.Fatalf("TriggerScheduleFlow: %v", err)
	}
	got := getFlow(t, s, f.ID)
	if !strings.HasPrefix(got.IdempotencyKey, "schedule:manual:trigger:") || got.Name != "manual-flow" {
		t.Fatalf("triggered flow: key %q name %q", got.IdempotencyKey, got.Name)
	}
	if after := getSchedule(t, s, "manual"); !after.NextRunAt.Equal(sc.NextRunAt) {
		t.Fatalf("trigger moved NextRunAt from %s to %s", sc.NextRunAt, after.NextRunAt)
	}
	_, err = s.TriggerSchedule(ctx(t), "manual")
	wantErr(t, err, store.ErrInvalid, "TriggerSchedule of a flow schedule")
	mkSchedule(t, s, store.ScheduleParams{Name: "plain", CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "k"}})
	_, err = s.TriggerScheduleFlow(ctx(t), "plain")
	wantErr(t, err, store.ErrInvalid, "TriggerScheduleFlow of a task schedule")
	_, err = s.TriggerScheduleFlow(ctx(t), "missing")
	wantErr(t, err, store.ErrNotFound, "TriggerScheduleFlow of no schedule")
	if n := len(scheduledFlows(t, s, "manual-flow")); n != 1 {
		t.Fatalf("%d flows, want the 1 triggered", n)
	}
}

// testScheduleFlowConcurrentClaims: claimers racing over flow schedules start one flow
// per tick, never two.
func testScheduleFlowConcurrentClaims(t *testing.T, s store.Store) {
	const schedules = 6
	first := lastMinute(3)
	for i := range schedules {
		name := fmt.Sprintf("race-%d", i)
		mkFlowSchedule(t, s, name, func(p *store.ScheduleParams) {
			p.CatchUp = store.CatchUpAll
			p.Flow = etlTemplate("race-flow")
		})
		reschedule(t, s, name, first)
	}
	var (
		mu      sync.Mutex
		started = map[string]int{} // flow key -> times reported started
		wg      sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for range 5 {
				claims, err := s.ClaimDueSchedules(ctx(t), store.ClaimSchedulesParams{Limit: 2})
				if err != nil {
					t.Errorf("ClaimDueSchedules: %v", err)
					return
				}
				mu.Lock()
				for _, c := range claims {
					for _, f := range c.Flows {
						started[f.IdempotencyKey]++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	flows := scheduledFlows(t, s, "race-flow")
	keys := map[string]int{}
	for _, f := range flows {
		keys[f.IdempotencyKey]++
	}
	for key, n := range keys {
		if n != 1 || started[key] != 1 {
			t.Fatalf("key %s: %d flows, reported started %d times", key, n, started[key])
		}
	}
	if len(started) != len(keys) || len(keys) < schedules*3 {
		t.Fatalf("%d keys reported, %d flows; want one per tick (at least %d)", len(started), len(keys), schedules*3)
	}
}
