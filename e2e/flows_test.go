package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/history"
)

// The flow acceptance tests of issue 13 (DESIGN.md section 10) share the flows of this
// file: fan-out flows a -> for_each(b over a's 10-element output) -> c and diamonds
// a -> (b, c) -> d, all of the built-in kind echo, so that `rota worker` runs them and
// every output says where it came from. flowSet.check then proves, from the database
// alone, what the issue asks: every flow SUCCEEDED, every step task SUCCEEDED exactly
// once with one consistent attempt history, no step task row made twice or lost, and
// each fan-in holding its outputs in element order.

const fanWidth = 10 // a's output, the elements b fans out over

// stepSpec is one step, written as the HTTP create body takes it; params turns it into
// the store's form for tests that create flows through the store.
type stepSpec struct {
	Name        string          `json:"name"`
	Kind        string          `json:"kind"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	DependsOn   []string        `json:"depends_on,omitempty"`
	ForEach     string          `json:"for_each,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
}

type flowSpec struct {
	Name  string     `json:"name,omitempty"`
	Queue string     `json:"queue,omitempty"`
	Steps []stepSpec `json:"steps"`
}

func (f flowSpec) params() store.FlowParams {
	p := store.FlowParams{Name: f.Name, Queue: f.Queue}
	for _, s := range f.Steps {
		p.Steps = append(p.Steps, store.StepParams{Name: s.Name, Kind: s.Kind, Payload: s.Payload,
			DependsOn: s.DependsOn, ForEach: s.ForEach, MaxAttempts: s.MaxAttempts})
	}
	return p
}

// elements is what the fan-out flow tagged tag has a output: tag-0 ... tag-9, so that a
// fan-in in the wrong order, or with another flow's outputs, shows.
func elements(tag string) []string {
	out := make([]string, fanWidth)
	for i := range out {
		out[i] = tag + "-" + strconv.Itoa(i)
	}
	return out
}

func echoOutput(v any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"output": v})
	return b
}

// Many attempts: every SIGKILL costs the running tasks one (LEASE_EXPIRED).
const flowMaxAttempts = 25

func fanoutFlow(tag string) flowSpec {
	return flowSpec{Name: "fanout", Steps: []stepSpec{
		{Name: "a", Kind: "echo", Payload: echoOutput(elements(tag)), MaxAttempts: flowMaxAttempts},
		{Name: "b", Kind: "echo", DependsOn: []string{"a"}, ForEach: "a", MaxAttempts: flowMaxAttempts},
		{Name: "c", Kind: "echo", DependsOn: []string{"b"}, MaxAttempts: flowMaxAttempts},
	}}
}

func diamondFlow(tag string) flowSpec {
	return flowSpec{Name: "diamond", Steps: []stepSpec{
		// d is listed first: depends_on may name steps in any order.
		{Name: "d", Kind: "echo", DependsOn: []string{"c", "b"}, MaxAttempts: flowMaxAttempts},
		{Name: "a", Kind: "echo", Payload: echoOutput(tag), MaxAttempts: flowMaxAttempts},
		{Name: "b", Kind: "echo", Payload: json.RawMessage(`{"side": "b"}`), DependsOn: []string{"a"}, MaxAttempts: flowMaxAttempts},
		{Name: "c", Kind: "echo", Payload: json.RawMessage(`{"side": "c"}`), DependsOn: []string{"a"}, MaxAttempts: flowMaxAttempts},
	}}
}

// flowSet is the flows a test created, by id, with the tag each was made with.
type flowSet struct {
	fanouts  map[uuid.UUID]string
	diamonds map[uuid.UUID]string
}

// newFlowSet creates fanouts fan-out flows and diamonds diamonds with create, which
// returns the new flow's id (through the store or the HTTP API).
func newFlowSet(t *testing.T, fanouts, diamonds int, create func(flowSpec) uuid.UUID) *flowSet {
	t.Helper()
	s := &flowSet{fanouts: map[uuid.UUID]string{}, diamonds: map[uuid.UUID]string{}}
	for i := range max(fanouts, diamonds) {
		if i < fanouts {
			tag := fmt.Sprintf("f%d", i)
			s.fanouts[create(fanoutFlow(tag))] = tag
		}
		if i < diamonds {
			tag := fmt.Sprintf("d%d", i)
			s.diamonds[create(diamondFlow(tag))] = tag
		}
	}
	return s
}

func (s *flowSet) size() int { return len(s.fanouts) + len(s.diamonds) }

// stepKeys is the (step, element) of every task a flow must end with.
func (s *flowSet) stepKeys(id uuid.UUID) []string {
	if _, ok := s.diamonds[id]; ok {
		return []string{"a/0", "b/0", "c/0", "d/0"}
	}
	keys := []string{"a/0", "c/0"}
	for i := range fanWidth {
		keys = append(keys, "b/"+strconv.Itoa(i))
	}
	slices.Sort(keys)
	return keys
}

// flowCounts is the number of flows per status.
func flowCounts(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT status, count(*) FROM rota.flows GROUP BY status`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			t.Fatal(err)
		}
		out[st] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// done reports whether every flow ended, and fails the test at once if one ended other
// than SUCCEEDED (nothing in these tests may fail a flow).
func (s *flowSet) done(t *testing.T, pool *pgxpool.Pool) (bool, string) {
	t.Helper()
	c := flowCounts(t, pool)
	if c["FAILED"]+c["CANCELED"] > 0 {
		t.Fatalf("flows ended other than SUCCEEDED: %v (tasks: %v)", c, statusCounts(t, pool))
	}
	return c["SUCCEEDED"] == s.size(), fmt.Sprintf("flows %v, tasks %v", c, statusCounts(t, pool))
}

// check proves the flows' end from the database: see the top of the file.
func (s *flowSet) check(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	// Every flow SUCCEEDED, and no other flow exists.
	if c := flowCounts(t, pool); c["SUCCEEDED"] != s.size() || len(c) != 1 {
		t.Errorf("flow statuses %v, want %d SUCCEEDED", c, s.size())
	}

	// Task rows per flow, step and element: exactly the ones of the flow's shape, once
	// each (the unique index makes a second row impossible; a lost step shows here).
	rows, err := pool.Query(ctx, `
		SELECT flow_id, flow_step, coalesce(flow_index, -1), count(*) FROM rota.tasks
		GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[uuid.UUID][]string{}
	for rows.Next() {
		var flow *uuid.UUID
		var step *string
		var index, n int
		if err := rows.Scan(&flow, &step, &index, &n); err != nil {
			t.Fatal(err)
		}
		if flow == nil || step == nil {
			t.Errorf("%d tasks belong to no flow step", n)
			continue
		}
		if n != 1 {
			t.Errorf("flow %s step %s element %d has %d task rows, want 1", flow, *step, index, n)
		}
		keys[*flow] = append(keys[*flow], fmt.Sprintf("%s/%d", *step, index))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(keys) != s.size() {
		t.Errorf("tasks of %d flows, want %d", len(keys), s.size())
	}
	ids := []uuid.UUID{}
	for id := range s.fanouts {
		ids = append(ids, id)
	}
	for id := range s.diamonds {
		ids = append(ids, id)
	}
	for _, id := range ids {
		got := keys[id]
		slices.Sort(got)
		if want := s.stepKeys(id); !slices.Equal(got, want) {
			t.Errorf("flow %s has step tasks %v, want %v", id, got, want)
		}
	}

	// Every task SUCCEEDED exactly once, with one consistent story of attempts (the task
	// count is pinned above, so taking the ids from the database hides nothing).
	want := map[uuid.UUID]store.Status{}
	idRows, err := pool.Query(ctx, `SELECT id FROM rota.tasks`)
	if err != nil {
		t.Fatal(err)
	}
	for idRows.Next() {
		var id uuid.UUID
		if err := idRows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		want[id] = store.StatusSucceeded
	}
	idRows.Close()
	history.AssertAll(t, pool, want)

	s.checkFanIns(t, pool)
}

// checkFanIns: each fan-out flow's c got b's 10 outputs in element order (each an echo
// of its own element of that flow), and each diamond's d got both sides.
func (s *flowSet) checkFanIns(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT t.flow_id, t.flow_step, s.inputs
		FROM rota.tasks t JOIN rota.flow_steps s ON s.flow_id = t.flow_id AND s.name = t.flow_step
		WHERE t.flow_step IN ('c', 'd')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var flow uuid.UUID
		var step string
		var inputs json.RawMessage
		if err := rows.Scan(&flow, &step, &inputs); err != nil {
			t.Fatal(err)
		}
		if tag, ok := s.fanouts[flow]; ok && step == "c" {
			seen++
			checkFanIn(t, flow, tag, inputs)
		}
		if tag, ok := s.diamonds[flow]; ok && step == "d" {
			seen++
			checkDiamond(t, flow, tag, inputs)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen != s.size() {
		t.Errorf("checked the fan-in of %d flows, want %d", seen, s.size())
	}
}

// echoed is what echo outputs for a task that has no payload.output.
type echoed struct {
	Payload json.RawMessage            `json:"payload"`
	Inputs  map[string]json.RawMessage `json:"inputs"`
	Item    *string                    `json:"item"`
	Index   *int                       `json:"index"`
}

func checkFanIn(t *testing.T, flow uuid.UUID, tag string, raw json.RawMessage) {
	t.Helper()
	var inputs struct {
		B []echoed `json:"b"`
	}
	if err := json.Unmarshal(raw, &inputs); err != nil || len(inputs.B) != fanWidth {
		t.Errorf("flow %s: c's inputs %s: want b's %d outputs (%v)", flow, raw, fanWidth, err)
		return
	}
	wantA := elements(tag)
	for i, out := range inputs.B {
		want := tag + "-" + strconv.Itoa(i)
		if out.Item == nil || *out.Item != want || out.Index == nil || *out.Index != i {
			t.Errorf("flow %s: c's inputs.b[%d] = %+v, want item %q, index %d (element order)", flow, i, out, want, i)
		}
		var a []string
		if err := json.Unmarshal(out.Inputs["a"], &a); err != nil || !slices.Equal(a, wantA) {
			t.Errorf("flow %s: b[%d] got inputs.a %s, want %q", flow, i, out.Inputs["a"], wantA)
		}
	}
}

func checkDiamond(t *testing.T, flow uuid.UUID, tag string, raw json.RawMessage) {
	t.Helper()
	var inputs map[string]echoed
	if err := json.Unmarshal(raw, &inputs); err != nil || len(inputs) != 2 {
		t.Errorf("flow %s: d's inputs %s: want b's and c's outputs (%v)", flow, raw, err)
		return
	}
	for _, side := range []string{"b", "c"} {
		out := inputs[side]
		var payload struct{ Side string }
		var a string
		_ = json.Unmarshal(out.Payload, &payload)
		_ = json.Unmarshal(out.Inputs["a"], &a)
		if payload.Side != side || a != tag || out.Item != nil {
			t.Errorf("flow %s: d's inputs.%s = %s, want the echo of step %s given a's %q", flow, side, raw, side, tag)
		}
	}
}

// waitFlows waits until every flow of s SUCCEEDED, calling between each look (the
// chaos of the test: kills, duplicates).
func (s *flowSet) wait(t *testing.T, pool *pgxpool.Pool, timeout time.Duration, between func()) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := s.done(t, pool)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every flow succeeded within %v: %s", timeout, state)
		}
		between()
	}
}
