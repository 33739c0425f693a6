package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/history"
)

// stepService is the loopback service the `http` steps of TestFlowsFailReplayCancel
// call. Until it is fixed, /b fails permanently (a 400) once /c is running, and /c runs
// until its caller gives up (a cancel); once fixed both answer 204 at once. /hold always
// runs until its caller gives up, and counts the calls that did.
type stepService struct {
	fixed    atomic.Bool
	cStarted chan struct{}
	cOnce    sync.Once
	holding  atomic.Int32 // /hold calls running now
	released atomic.Int32 // /hold calls whose caller gave up
}

func (g *stepService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/hold":
		g.holding.Add(1)
		<-r.Context().Done()
		g.holding.Add(-1)
		g.released.Add(1)
	case g.fixed.Load():
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/b":
		select { // fail once c runs, so that the failure has a running step to cancel
		case <-g.cStarted:
		case <-time.After(10 * time.Second):
		}
		http.Error(w, "bad request, on purpose", http.StatusBadRequest)
	case r.URL.Path == "/c":
		g.cOnce.Do(func() { close(g.cStarted) })
		<-r.Context().Done()
	}
}

func httpStep(name, url string, dependsOn ...string) stepSpec {
	payload, _ := json.Marshal(map[string]any{"url": url, "method": "POST"})
	return stepSpec{Name: name, Kind: "http", Payload: payload, DependsOn: dependsOn, MaxAttempts: 3}
}

// flowReply is the flow JSON of DESIGN.md section 10, the parts the test reads.
type flowReply struct {
	ID     uuid.UUID `json:"id"`
	Status string    `json:"status"`
	Steps  []struct {
		Name    string          `json:"name"`
		Status  string          `json:"status"`
		TaskIDs []uuid.UUID     `json:"task_ids"`
		Output  json.RawMessage `json:"output"`
	} `json:"steps"`
}

func (f flowReply) stepStatuses() map[string]string {
	out := map[string]string{}
	for _, s := range f.Steps {
		out[s.Name] = s.Status
	}
	return out
}

func (f flowReply) step(name string) (tasks []uuid.UUID, output json.RawMessage) {
	for _, s := range f.Steps {
		if s.Name == name {
			return s.TaskIDs, s.Output
		}
	}
	return nil, nil
}

func decodeFlow(t *testing.T, r reply) flowReply {
	t.Helper()
	var f flowReply
	if err := json.Unmarshal([]byte(r.raw), &f); err != nil {
		t.Fatalf("flow JSON %s: %v", r.raw, err)
	}
	return f
}

// liveTasks counts the flow's tasks that may still run: PENDING, ENQUEUED or PROCESSING.
func liveTasks(t *testing.T, pool *pgxpool.Pool, flow uuid.UUID) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(), `
		SELECT count(*) FROM rota.tasks
		WHERE flow_id = $1 AND status IN ('PENDING', 'ENQUEUED', 'PROCESSING')`, flow).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFlow polls GET /api/flows/{id} until cond holds.
func waitFlow(t *testing.T, c apiClient, id uuid.UUID, what string, cond func(flowReply) bool) flowReply {
	t.Helper()
	var f flowReply
	waitFor(t, time.Minute, what, func() (bool, string) {
		r := c.call("GET", "/api/flows/"+id.String(), nil).expect(t, "get flow", http.StatusOK, "")
		f = decodeFlow(t, r)
		return cond(f), r.raw
	})
	return f
}

// TestFlowsFailReplayCancel (issue 13's acceptance, with a `rota serve` and a `rota
// worker`, through the HTTP API):
//   - a -> (b, c) -> d where b fails permanently while c runs: the flow is FAILED, b
//     FAILED, c (running) asked to cancel and CANCELED, d (waiting) CANCELED with no task;
//     replay, once b's service is fixed, takes the flow to SUCCEEDED with one task row
//     per step;
//   - a -> for_each(b over 10 elements, each running until canceled) -> c, canceled
//     mid-flow: CANCELED, and no task of it is left running or waiting, no step WAITING,
//     PENDING or PROCESSING.
func TestFlowsFailReplayCancel(t *testing.T) {
	dbURL, pool := newDB(t)
	g := &stepService{cStarted: make(chan struct{})}
	svc := httptest.NewServer(g)
	defer svc.Close()
	base := startServer(t, "serve", "serve", "--database-url", dbURL, "--addr", "127.0.0.1:0",
		"--reap-interval", "250ms", "--log-level", "warn")
	startProc(t, "worker", nil, "worker", "--mode", "poll", "--database-url", dbURL, "--worker-id", "w1",
		"--concurrency", "4", "--lease", "2s", "--poll-interval", "100ms", "--shutdown-grace", "2s", "--log-level", "warn")
	c := apiClient{t: t, url: base}

	// A permanent failure fails the flow and cancels what cannot run any more.
	failing := flowSpec{Name: "failing", Steps: []stepSpec{
		{Name: "a", Kind: "echo", Payload: echoOutput("x")},
		httpStep("b", svc.URL+"/b", "a"),
		httpStep("c", svc.URL+"/c", "a"),
		{Name: "d", Kind: "echo", DependsOn: []string{"b", "c"}},
	}}
	id := decodeFlow(t, c.call("POST", "/api/flows", failing).expect(t, "create", http.StatusCreated, "")).ID
	f := waitFlow(t, c, id, "the flow to fail and c's task to end", func(f flowReply) bool {
		return f.Status == "FAILED" && f.stepStatuses()["c"] == "CANCELED"
	})
	want := map[string]string{"a": "SUCCEEDED", "b": "FAILED", "c": "CANCELED", "d": "CANCELED"}
	if got := f.stepStatuses(); !maps.Equal(got, want) {
		t.Errorf("failed flow's steps %v, want %v", got, want)
	}
	if tasks, _ := f.step("d"); len(tasks) != 0 {
		t.Errorf("d, which can no longer run, has tasks %v", tasks)
	}
	if n := liveTasks(t, pool, id); n != 0 {
		t.Errorf("%d tasks of the failed flow are still running or waiting", n)
	}
	c.call("POST", "/api/flows/"+id.String()+"/cancel", nil).expect(t, "cancel a FAILED flow", http.StatusConflict, "illegal_transition")

	// Replay once b's service is fixed: the failed and canceled steps' tasks run again
	// (the same rows), d is created when they succeed, and the flow SUCCEEDED.
	g.fixed.Store(true)
	r := c.call("POST", "/api/flows/"+id.String()+"/replay", nil).expect(t, "replay", http.StatusOK, "")
	if st := decodeFlow(t, r).Status; st != "RUNNING" {
		t.Errorf("replayed flow is %s, want RUNNING", st)
	}
	f = waitFlow(t, c, id, "the replayed flow to succeed", func(f flowReply) bool { return f.Status == "SUCCEEDED" })
	want = map[string]string{"a": "SUCCEEDED", "b": "SUCCEEDED", "c": "SUCCEEDED", "d": "SUCCEEDED"}
	if got := f.stepStatuses(); !maps.Equal(got, want) {
		t.Errorf("replayed flow's steps %v, want %v", got, want)
	}
	c.call("POST", "/api/flows/"+id.String()+"/replay", nil).expect(t, "replay a SUCCEEDED flow", http.StatusConflict, "illegal_transition")
	c.call("POST", "/api/flows/"+id.String()+"/cancel", nil).expect(t, "cancel a SUCCEEDED flow", http.StatusConflict, "illegal_transition")
	checkOneTaskPerStep(t, pool, id, 4)
	// b's and c's tasks: one run that failed or was canceled, a REPLAYED event, one success.
	bTasks, _ := f.step("b")
	cTasks, _ := f.step("c")
	history.Assert(t, pool, history.All(store.StatusSucceeded, bTasks, cTasks))

	// Cancel mid-flow: b's tasks are running (4, the worker's concurrency) or waiting.
	holding := flowSpec{Name: "holding", Steps: []stepSpec{
		{Name: "a", Kind: "echo", Payload: echoOutput(elements("h"))},
		httpStep("b", svc.URL+"/hold", "a"),
		{Name: "c", Kind: "echo", DependsOn: []string{"b"}},
	}}
	holding.Steps[1].ForEach = "a"
	id = decodeFlow(t, c.call("POST", "/api/flows", holding).expect(t, "create", http.StatusCreated, "")).ID
	waitFor(t, time.Minute, "b's tasks to run", func() (bool, string) {
		return g.holding.Load() == 4, fmt.Sprintf("%d running", g.holding.Load())
	})
	r = c.call("POST", "/api/flows/"+id.String()+"/cancel", nil).expect(t, "cancel", http.StatusOK, "")
	if st := decodeFlow(t, r).Status; st != "CANCELED" {
		t.Errorf("canceled flow is %s, want CANCELED", st)
	}
	waitFor(t, time.Minute, "the canceled flow's tasks to end", func() (bool, string) {
		n := liveTasks(t, pool, id)
		return n == 0, fmt.Sprintf("%d live tasks", n)
	})
	f = decodeFlow(t, c.call("POST", "/api/flows/"+id.String()+"/cancel", nil).expect(t, "cancel again", http.StatusOK, ""))
	want = map[string]string{"a": "SUCCEEDED", "b": "CANCELED", "c": "CANCELED"}
	if got := f.stepStatuses(); f.Status != "CANCELED" || !maps.Equal(got, want) {
		t.Errorf("canceled flow %s with steps %v, want CANCELED with %v", f.Status, got, want)
	}
	if tasks, _ := f.step("b"); len(tasks) != fanWidth {
		t.Errorf("b has %d tasks, want %d", len(tasks), fanWidth)
	}
	if tasks, _ := f.step("c"); len(tasks) != 0 {
		t.Errorf("c, which can no longer run, has tasks %v", tasks)
	}
	waitFor(t, 10*time.Second, "the 4 running calls to see the cancel", func() (bool, string) {
		return g.released.Load() == 4 && g.holding.Load() == 0, fmt.Sprintf("%d released, %d holding", g.released.Load(), g.holding.Load())
	})
	statuses := map[string]int{}
	rows, err := pool.Query(context.Background(), `SELECT status FROM rota.tasks WHERE flow_id = $1 AND flow_step = 'b'`, id)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var st string
		if err := rows.Scan(&st); err != nil {
			t.Fatal(err)
		}
		statuses[st]++
	}
	rows.Close()
	if statuses["CANCELED"] != fanWidth {
		t.Errorf("b's tasks end %v, want all %d CANCELED", statuses, fanWidth)
	}
}

// checkOneTaskPerStep: the flow has n task rows, one per step (no for_each).
func checkOneTaskPerStep(t *testing.T, pool *pgxpool.Pool, flow uuid.UUID, n int) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT flow_step FROM rota.tasks WHERE flow_id = $1 ORDER BY flow_step`, flow)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, s)
	}
	if len(steps) != n || len(slices.Compact(slices.Clone(steps))) != n {
		t.Errorf("flow %s has task rows for steps %v, want one for each of %d steps", flow, steps, n)
	}
}
