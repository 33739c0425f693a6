package memory

import (
	"context"
	"encoding/json"
	"testing"
	"time"
	"unsafe"

	"github.com/rotaqueue/rota/internal/store"
)

// TestFanOutKeepsInputsOnce: the element tasks of a for_each step share their step's
// inputs (one slice, as PostgreSQL keeps them once on the step's row) instead of each
// holding a copy of the array the step fans out over; a reader still gets its own copy.
func TestFanOutKeepsInputsOnce(t *testing.T) {
	s := New()
	ctx := context.Background()
	res, err := s.CreateFlow(ctx, store.FlowParams{Queue: "wide", Steps: []store.StepParams{
		{Name: "a", Kind: "emit"},
		{Name: "b", Kind: "each", DependsOn: []string{"a"}, ForEach: "a"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.ClaimTasks(ctx, store.ClaimParams{Queue: "wide", From: store.StatusPending, WorkerID: "w", Limit: 1, LeaseDuration: time.Minute})
	if err != nil || len(a) != 1 {
		t.Fatalf("claim a: %v, %d tasks", err, len(a))
	}
	if _, err := s.RecordOutcomes(ctx, []store.Outcome{{TaskID: a[0].ID, LeaseToken: a[0].LeaseToken,
		Kind: store.Succeed, Output: json.RawMessage(`[1, 2, 3]`)}}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	step := s.flows[res.Flow.ID].byName["b"]
	if len(step.tasks) != 3 {
		t.Fatalf("b has %d tasks, want 3", len(step.tasks))
	}
	for _, e := range step.tasks {
		if unsafe.SliceData(e.task.Inputs) != unsafe.SliceData(step.inputs) {
			t.Errorf("task %d holds its own copy of the inputs", *e.task.Index)
		}
	}
	s.mu.Unlock()

	got, err := s.GetTask(ctx, step.tasks[1].task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Inputs) != `{"a":[1,2,3]}` || string(got.Item) != `2` {
		t.Fatalf("GetTask: inputs %s, item %s", got.Inputs, got.Item)
	}
	if unsafe.SliceData(got.Inputs) == unsafe.SliceData(step.inputs) {
		t.Fatal("GetTask returned the step's own inputs slice, not a copy")
	}
}
