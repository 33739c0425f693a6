package rota_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota"
)

// etlParams is extract -> for_each transform over extract's output -> load, all in the
// default queue.
func etlParams(key string) rota.FlowParams {
	return rota.FlowParams{Name: "etl", IdempotencyKey: key, Steps: []rota.StepParams{
		{Name: "extract", Kind: "etl.extract", Payload: map[string]string{"source": "s3://in"}},
		{Name: "transform", Kind: "etl.transform", DependsOn: []string{"extract"}, ForEach: "extract"},
		{Name: "load", Kind: "etl.load", DependsOn: []string{"transform"}},
	}}
}

// etlMux: the handlers read their step's inputs, item and index through the Job helpers
// and return outputs with SetOutput.
func etlMux(t *testing.T) *rota.Mux {
	mux := rota.NewMux()
	mux.HandleFunc("etl.extract", func(ctx context.Context, job *rota.Job) error {
		if _, ok := job.Index(); ok || job.Step() != "extract" || job.FlowID() == uuid.Nil {
			return rota.Permanent(errors.New("extract: wrong step fields"))
		}
		if err := job.Item(new(any)); !errors.Is(err, rota.ErrNotInFlow) {
			return rota.Permanent(errors.New("extract: Item of a step without for_each did not say ErrNotInFlow"))
		}
		return job.SetOutput([]string{"a", "b", "c"})
	})
	mux.HandleFunc("etl.transform", func(ctx context.Context, job *rota.Job) error {
		var item string
		if err := job.Item(&item); err != nil {
			return rota.Permanent(err)
		}
		index, ok := job.Index()
		var rows []string
		if !ok || job.Input("extract", &rows) != nil || len(rows) != 3 || rows[index] != item {
			return rota.Permanent(errors.New("transform: item and inputs disagree"))
		}
		return job.SetOutput(strings.ToUpper(item))
	})
	mux.HandleFunc("etl.load", func(ctx context.Context, job *rota.Job) error {
		var in struct {
			Transform []string `json:"transform"`
		}
		if err := job.Inputs(&in); err != nil {
			return rota.Permanent(err)
		}
		return job.SetOutput(map[string]any{"loaded": in.Transform})
	})
	return mux
}

func waitFlow(t *testing.T, ctx context.Context, c testClient, id uuid.UUID) *rota.Flow {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		f, err := c.GetFlow(ctx, id)
		if err != nil {
			t.Fatalf("GetFlow: %v", err)
		}
		if f.Status != rota.FlowRunning || time.Now().After(deadline) {
			return f
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStartFlowRunsThroughWorkers: a Go worker runs an ETL flow with a fan-out; the
// handlers see their inputs, item and index; the fan-in is in element order; the flow
// SUCCEEDED. Also: an idempotent start, GetFlow, ListFlows, invalid params.
func TestStartFlowRunsThroughWorkers(t *testing.T) {
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		startWorker(t, c, etlMux(t))
		res, err := c.StartFlowWithResult(ctx, etlParams("etl-1"))
		if err != nil || res.Existing || res.Flow.Status != rota.FlowRunning || len(res.Flow.Steps) != 3 {
			t.Fatalf("StartFlowWithResult: %+v, %v", res, err)
		}
		again, err := c.StartFlowWithResult(ctx, etlParams("etl-1"))
		if err != nil || !again.Existing || again.Flow.ID != res.Flow.ID {
			t.Fatalf("second start with the key: %+v, %v", again, err)
		}
		f := waitFlow(t, ctx, c, res.Flow.ID)
		if f.Status != rota.FlowSucceeded {
			t.Fatalf("flow ended %s: %+v", f.Status, f.Steps)
		}
		assertJSON(t, f.Steps[1].Output, `["A", "B", "C"]`)
		assertJSON(t, f.Steps[2].Output, `{"loaded": ["A", "B", "C"]}`)
		if len(f.Steps[1].TaskIDs) != 3 {
			t.Fatalf("transform has %d tasks, want 3", len(f.Steps[1].TaskIDs))
		}
		task, err := c.Get(ctx, f.Steps[1].TaskIDs[2])
		if err != nil || task.FlowID != f.ID || task.Step != "transform" || task.Index == nil || *task.Index != 2 {
			t.Fatalf("third transform task: %+v, %v", task, err)
		}

		flows, next, err := c.ListFlows(ctx, rota.FlowListParams{Name: "etl"})
		if err != nil || len(flows) != 1 || flows[0].ID != f.ID || next != "" {
			t.Fatalf("ListFlows: %d flows, %q, %v", len(flows), next, err)
		}

		// Invalid: an error naming the step, wrapping ErrInvalid; nothing written.
		_, err = c.StartFlow(ctx, rota.FlowParams{Steps: []rota.StepParams{
			{Name: "a", Kind: "noop", DependsOn: []string{"b"}}, {Name: "b", Kind: "noop", DependsOn: []string{"a"}}}})
		if !errors.Is(err, rota.ErrInvalid) || !strings.Contains(err.Error(), `"a"`) {
			t.Fatalf("a cycle: %v", err)
		}
		_, err = c.StartFlow(ctx, rota.FlowParams{Steps: []rota.StepParams{{Name: "x", Kind: "noop", Timeout: 1500 * time.Millisecond}}})
		if !errors.Is(err, rota.ErrInvalid) || !strings.Contains(err.Error(), `step "x"`) {
			t.Fatalf("a bad timeout: %v", err)
		}
		if flows, _, _ := c.ListFlows(ctx, rota.FlowListParams{}); len(flows) != 1 {
			t.Fatalf("invalid starts wrote flows: %d", len(flows))
		}
	})
}

// TestCancelAndReplayFlowGo: a permanently failing step fails the flow; ReplayFlow
// takes it to SUCCEEDED once the handler works; CancelFlow of a SUCCEEDED flow is
// ErrIllegalTransition; a plain task's Job has no inputs (ErrNotInFlow).
func TestCancelAndReplayFlowGo(t *testing.T) {
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		broken := make(chan bool, 1)
		broken <- true
		plainInputs := make(chan error, 1)
		mux := rota.NewMux()
		mux.HandleFunc("flaky", func(ctx context.Context, job *rota.Job) error {
			if b := <-broken; b {
				broken <- false
				return rota.Permanent(errors.New("broken"))
			}
			broken <- false
			return job.SetOutput(1)
		})
		mux.HandleFunc("after", func(ctx context.Context, job *rota.Job) error { return nil })
		mux.HandleFunc("plain", func(ctx context.Context, job *rota.Job) error {
			plainInputs <- job.Inputs(new(map[string]any))
			return nil
		})
		startWorker(t, c, mux)
		f, err := c.StartFlow(ctx, rota.FlowParams{Steps: []rota.StepParams{
			{Name: "a", Kind: "flaky"}, {Name: "b", Kind: "after", DependsOn: []string{"a"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if f = waitFlow(t, ctx, c, f.ID); f.Status != rota.FlowFailed || f.Steps[1].Status != rota.StepStatus(rota.StatusCanceled) {
			t.Fatalf("after a permanent failure: %s, steps %+v", f.Status, f.Steps)
		}
		if _, err := c.ReplayFlow(ctx, f.ID); err != nil {
			t.Fatalf("ReplayFlow: %v", err)
		}
		if f = waitFlow(t, ctx, c, f.ID); f.Status != rota.FlowSucceeded {
			t.Fatalf("after replay: %s", f.Status)
		}
		if _, err := c.CancelFlow(ctx, f.ID); !errors.Is(err, rota.ErrIllegalTransition) {
			t.Fatalf("CancelFlow of a SUCCEEDED flow: %v", err)
		}
		if _, err := c.GetFlow(ctx, uuid.New()); !errors.Is(err, rota.ErrNotFound) {
			t.Fatalf("GetFlow of no flow: %v", err)
		}
		if _, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "plain"}); err != nil {
			t.Fatal(err)
		}
		if err := <-plainInputs; !errors.Is(err, rota.ErrNotInFlow) {
			t.Fatalf("Inputs of a plain task: %v", err)
		}
	})
}

// TestStartFlowTx: a flow started inside the caller's transaction exists only once it
// commits; a memory client says ErrTxNotSupported.
func TestStartFlowTx(t *testing.T) {
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		if c.pool == nil {
			if _, err := c.StartFlowTx(ctx, nil, etlParams("")); !errors.Is(err, rota.ErrTxNotSupported) {
				t.Fatalf("memory StartFlowTx: %v", err)
			}
			return
		}
		tx, err := c.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rolledBack, err := c.StartFlowTx(ctx, tx, etlParams(""))
		if err != nil {
			t.Fatalf("StartFlowTx: %v", err)
		}
		if _, err := c.GetFlow(ctx, rolledBack.Flow.ID); !errors.Is(err, rota.ErrNotFound) {
			t.Fatalf("GetFlow before commit: %v", err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetFlow(ctx, rolledBack.Flow.ID); !errors.Is(err, rota.ErrNotFound) {
			t.Fatalf("GetFlow after rollback: %v", err)
		}
		assertNoTasks(t, ctx, c)

		tx, err = c.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := c.StartFlowTx(ctx, tx, etlParams(""))
		if err != nil {
			t.Fatalf("StartFlowTx: %v", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		f, err := c.GetFlow(ctx, committed.Flow.ID)
		if err != nil || f.Status != rota.FlowRunning || len(f.Steps[0].TaskIDs) != 1 {
			t.Fatalf("GetFlow after commit: %+v, %v", f, err)
		}
	})
}

// TestStartFlowStepGroupKey: StepParams.GroupKey goes to the step's task and shows on
// the step; one too long is ErrInvalid naming the step.
func TestStartFlowStepGroupKey(t *testing.T) {
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		f, err := c.StartFlow(ctx, rota.FlowParams{Steps: []rota.StepParams{{Name: "a", Kind: "k", GroupKey: "tenant-1"}}})
		if err != nil {
			t.Fatal(err)
		}
		if f.Steps[0].GroupKey != "tenant-1" || len(f.Steps[0].TaskIDs) != 1 {
			t.Fatalf("step a: %+v", f.Steps[0])
		}
		if task, err := c.Get(ctx, f.Steps[0].TaskIDs[0]); err != nil || task.GroupKey != "tenant-1" {
			t.Fatalf("a's task: %+v, %v", task, err)
		}
		long := strings.Repeat("g", rota.MaxGroupKeyLength+1)
		_, err = c.StartFlow(ctx, rota.FlowParams{Steps: []rota.StepParams{{Name: "b", Kind: "k", GroupKey: long}}})
		if !errors.Is(err, rota.ErrInvalid) || !strings.Contains(err.Error(), `step "b"`) {
			t.Fatalf("a too long step group key: %v", err)
		}
	})
}
