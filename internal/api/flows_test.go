package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// etlFlow is extract -> for_each transform over extract's output -> load.
func etlFlow(queue string) map[string]any {
	return map[string]any{
		"name": "etl", "queue": queue,
		"steps": []map[string]any{
			{"name": "extract", "kind": "extract", "payload": map[string]any{"source": "s3://in"}},
			{"name": "transform", "kind": "transform", "depends_on": []string{"extract"}, "for_each": "extract"},
			{"name": "load", "kind": "load", "depends_on": []string{"transform"}},
		},
	}
}

func (c *apiClient) getFlow(id uuid.UUID) flowJSON {
	c.t.Helper()
	var f flowJSON
	c.do("GET", "/api/flows/"+id.String(), nil).want(c.t, http.StatusOK, &f)
	return f
}

// complete finishes a claimed task over the worker protocol with output (JSON text).
func (c *apiClient) complete(task taskJSON, output string) {
	c.t.Helper()
	c.do("POST", "/api/tasks/"+task.ID.String()+"/complete",
		`{"lease_token": "`+task.LeaseToken.String()+`", "output": `+output+`}`).want(c.t, http.StatusOK, nil)
}

func stepOf(t *testing.T, f flowJSON, name string) flowStepJSON {
	t.Helper()
	for _, st := range f.Steps {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("flow has no step %q: %+v", name, f.Steps)
	return flowStepJSON{}
}

// TestFlowThroughHTTP runs an ETL flow with a fan-out entirely over HTTP: create (201,
// the flow JSON of DESIGN.md section 10), the claim answers carry flow_id, step, inputs,
// item and index, the outputs fan in in element order, the flow ends SUCCEEDED; a
// second create with the same key is 200 with the same flow.
func TestFlowThroughHTTP(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		body := etlFlow("etl")
		body["idempotency_key"] = "etl-1"
		res := c.do("POST", "/api/flows", body)
		var f flowJSON
		res.want(t, http.StatusCreated, &f)
		if got, want := res.header.Get("Location"), "/api/flows/"+f.ID.String(); got != want {
			t.Errorf("Location %q, want %q", got, want)
		}
		if f.Status != store.FlowRunning || f.Queue != "etl" || f.Name == nil || *f.Name != "etl" || f.CompletedAt != nil || len(f.Steps) != 3 {
			t.Fatalf("created flow %+v", f)
		}
		// Raw JSON: the documented fields, nulls explicit.
		var raw struct {
			Steps []map[string]any `json:"steps"`
		}
		if err := json.Unmarshal(res.body, &raw); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"name", "kind", "status", "depends_on", "for_each", "task_ids", "output", "error"} {
			if _, ok := raw.Steps[0][k]; !ok {
				t.Errorf("step JSON lacks %q: %v", k, raw.Steps[0])
			}
		}
		if s := stepOf(t, f, "transform"); s.Status != store.StepWaiting || len(s.TaskIDs) != 0 || s.ForEach == nil || *s.ForEach != "extract" {
			t.Fatalf("transform at create: %+v", s)
		}

		var again flowJSON
		c.do("POST", "/api/flows", body).want(t, http.StatusOK, &again)
		if again.ID != f.ID {
			t.Fatalf("idempotent create made flow %s, want %s", again.ID, f.ID)
		}

		extract := c.claimOne("etl")
		if extract.FlowID == nil || *extract.FlowID != f.ID || extract.Step != "extract" || !sameJSON(t, extract.Inputs, `{}`) || extract.Item != nil || extract.Index != nil {
			t.Fatalf("claimed extract: flow %v step %q inputs %s item %v index %v", extract.FlowID, extract.Step, extract.Inputs, extract.Item, extract.Index)
		}
		c.complete(extract, `["a", "b", "c"]`)

		elems := c.claim("etl", map[string]any{"worker_id": "w1", "limit": 10})
		if len(elems) != 3 {
			t.Fatalf("claimed %d transform tasks, want 3", len(elems))
		}
		for _, e := range elems {
			if e.Step != "transform" || e.Index == nil || e.Item == nil || !sameJSON(t, e.Inputs, `{"extract": ["a", "b", "c"]}`) {
				t.Fatalf("claimed transform: step %q index %v item %v inputs %s", e.Step, e.Index, e.Item, e.Inputs)
			}
			want, _ := json.Marshal([]string{"a", "b", "c"}[*e.Index])
			if !sameJSON(t, *e.Item, string(want)) {
				t.Fatalf("element %d has item %s, want %s", *e.Index, *e.Item, want)
			}
			// GET of a step task shows the same fields.
			got := c.getTask(e.ID.String())
			if got.FlowID == nil || *got.FlowID != f.ID || got.Step != "transform" || got.Index == nil || *got.Index != *e.Index {
				t.Fatalf("GET step task: %+v", got)
			}
		}
		for _, e := range elems {
			c.complete(e, `{"n": `+string(rune('0'+*e.Index))+`}`)
		}

		load := c.claimOne("etl")
		if load.Step != "load" || !sameJSON(t, load.Inputs, `{"transform": [{"n": 0}, {"n": 1}, {"n": 2}]}`) {
			t.Fatalf("claimed load: step %q inputs %s", load.Step, load.Inputs)
		}
		c.complete(load, `"loaded"`)

		// Lists leave the step fields out, on every store (docs/api.md).
		res = c.do("GET", "/api/tasks?queue=etl", nil)
		if res.status != http.StatusOK || strings.Contains(string(res.body), `"flow_id"`) || strings.Contains(string(res.body), `"inputs"`) {
			t.Fatalf("GET /api/tasks shows step fields: %d %s", res.status, res.body)
		}

		done := c.getFlow(f.ID)
		if done.Status != store.FlowSucceeded || done.CompletedAt == nil {
			t.Fatalf("flow after the last step: %s, completed_at %v", done.Status, done.CompletedAt)
		}
		tr := stepOf(t, done, "transform")
		if tr.Status != store.StepStatus(store.StatusSucceeded) || len(tr.TaskIDs) != 3 || !sameJSON(t, tr.Output, `[{"n": 0}, {"n": 1}, {"n": 2}]`) {
			t.Fatalf("transform step: %+v (output %s)", tr, tr.Output)
		}
		if l := stepOf(t, done, "load"); !sameJSON(t, l.Output, `"loaded"`) || l.Error != nil {
			t.Fatalf("load step: %+v", l)
		}
	})
}

// TestFlowStepGroupKey: a step's group_key round-trips on the step JSON (null when
// none), every task of the step carries it (each for_each element's too), and a step
// group_key too long is 400 naming the step.
func TestFlowStepGroupKey(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		body := etlFlow("etl")
		steps := body["steps"].([]map[string]any)
		steps[0]["group_key"], steps[1]["group_key"] = "tenant-a", "tenant-b"
		var f flowJSON
		c.do("POST", "/api/flows", body).want(t, http.StatusCreated, &f)
		if g := stepOf(t, f, "transform").GroupKey; g == nil || *g != "tenant-b" {
			t.Fatalf("transform's group_key %v, want tenant-b", g)
		}
		if g := stepOf(t, c.getFlow(f.ID), "load").GroupKey; g != nil {
			t.Fatalf("load's group_key %q, want null", *g)
		}
		extract := c.claimOne("etl")
		if extract.GroupKey == nil || *extract.GroupKey != "tenant-a" {
			t.Fatalf("extract's task has group_key %v, want tenant-a", extract.GroupKey)
		}
		c.complete(extract, `["a", "b"]`)
		for _, id := range stepOf(t, c.getFlow(f.ID), "transform").TaskIDs {
			if g := c.getTask(id.String()).GroupKey; g == nil || *g != "tenant-b" {
				t.Fatalf("transform task %s has group_key %v, want tenant-b", id, g)
			}
		}

		bad := etlFlow("etl")
		bad["steps"].([]map[string]any)[2]["group_key"] = strings.Repeat("g", store.MaxGroupKeyLength+1)
		res := c.do("POST", "/api/flows", bad)
		if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "load") || !strings.Contains(string(res.body), "group_key") {
			t.Fatalf("too long step group_key: %d %s, want 400 naming step load", res.status, res.body)
		}
	})
}

// TestCreateFlowInvalid: an invalid flow is 400 naming the step at fault, and nothing is
// written (no flow, no task).
func TestCreateFlowInvalid(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		step := func(name string, extra map[string]any) map[string]any {
			s := map[string]any{"name": name, "kind": "noop"}
			for k, v := range extra {
				s[k] = v
			}
			return s
		}
		for _, tc := range []struct {
			why   string
			steps []map[string]any
			names string // what the message must name
		}{
			{"cycle", []map[string]any{step("a", nil), step("b", map[string]any{"depends_on": []string{"c"}}), step("c", map[string]any{"depends_on": []string{"b"}})}, `"b"`},
			{"self", []map[string]any{step("a", map[string]any{"depends_on": []string{"a"}})}, `"a"`},
			{"unknown dependency", []map[string]any{step("a", nil), step("b", map[string]any{"depends_on": []string{"nope"}})}, `"b"`},
			{"for_each outside depends_on", []map[string]any{step("a", nil), step("b", map[string]any{"for_each": "a"})}, `"b"`},
			{"bad kind", []map[string]any{step("a", nil), {"name": "b", "kind": "no spaces"}}, `"b"`},
			{"bad max_attempts", []map[string]any{step("a", nil), step("b", map[string]any{"max_attempts": 0})}, `"b"`},
			{"duplicate name", []map[string]any{step("a", nil), step("a", nil)}, `"a"`},
		} {
			e := c.do("POST", "/api/flows", map[string]any{"queue": "bad", "steps": tc.steps}).wantError(t, http.StatusBadRequest, codeInvalidRequest)
			if !strings.Contains(e.Message, tc.names) {
				t.Errorf("%s: message %q does not name step %s", tc.why, e.Message, tc.names)
			}
		}
		c.do("POST", "/api/flows", map[string]any{"steps": []any{}}).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		tooMany := make([]map[string]any, store.MaxFlowSteps+1)
		for i := range tooMany {
			tooMany[i] = step(fmt.Sprintf("s%d", i), nil)
		}
		c.do("POST", "/api/flows", map[string]any{"steps": tooMany}).wantError(t, http.StatusRequestEntityTooLarge, codePayloadTooLarge)
		c.do("POST", "/api/flows", map[string]any{"steps": []any{step("a", nil)}, "bogus": 1}).wantError(t, http.StatusBadRequest, codeInvalidRequest)

		var list flowListJSON
		c.do("GET", "/api/flows", nil).want(t, http.StatusOK, &list)
		var tasks taskListJSON
		c.do("GET", "/api/tasks?queue=bad", nil).want(t, http.StatusOK, &tasks)
		if len(list.Flows) != 0 || len(tasks.Tasks) != 0 {
			t.Fatalf("invalid creates wrote %d flows and %d tasks", len(list.Flows), len(tasks.Tasks))
		}
	})
}

// TestListFlows: filters by status and name, pages by cursor, newest first; list items
// carry no steps; unknown statuses and parameters are 400.
func TestListFlows(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		var ids []uuid.UUID
		for i := range 3 {
			var f flowJSON
			name := "nightly"
			if i == 2 {
				name = "hourly"
			}
			c.do("POST", "/api/flows", map[string]any{"name": name, "queue": "lf",
				"steps": []any{map[string]any{"name": "only", "kind": "noop"}}}).want(t, http.StatusCreated, &f)
			ids = append(ids, f.ID)
		}
		c.do("POST", "/api/flows/"+ids[0].String()+"/cancel", nil).want(t, http.StatusOK, nil)

		var page flowListJSON
		c.do("GET", "/api/flows?limit=2", nil).want(t, http.StatusOK, &page)
		if len(page.Flows) != 2 || page.Flows[0].ID != ids[2] || page.NextCursor == "" || page.Flows[0].Steps != nil {
			t.Fatalf("first page: %+v", page)
		}
		var rest flowListJSON
		c.do("GET", "/api/flows?limit=2&cursor="+page.NextCursor, nil).want(t, http.StatusOK, &rest)
		if len(rest.Flows) != 1 || rest.Flows[0].ID != ids[0] || rest.NextCursor != "" {
			t.Fatalf("second page: %+v", rest)
		}
		var byName flowListJSON
		c.do("GET", "/api/flows?name=nightly&status=running", nil).want(t, http.StatusOK, &byName)
		if len(byName.Flows) != 1 || byName.Flows[0].ID != ids[1] {
			t.Fatalf("name=nightly&status=running: %+v", byName.Flows)
		}
		var canceled flowListJSON
		c.do("GET", "/api/flows?status=CANCELED,SUCCEEDED", nil).want(t, http.StatusOK, &canceled)
		if len(canceled.Flows) != 1 || canceled.Flows[0].ID != ids[0] || canceled.Flows[0].Status != store.FlowCanceled {
			t.Fatalf("status=CANCELED,SUCCEEDED: %+v", canceled.Flows)
		}
		c.do("GET", "/api/flows?status=DONE", nil).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("GET", "/api/flows?queue=x", nil).wantError(t, http.StatusBadRequest, codeInvalidRequest)
	})
}

// TestCancelAndReplayFlow: a failing step fails the flow (its later steps CANCELED);
// cancel of an ended flow is 409; replay takes it to SUCCEEDED; replay of a RUNNING or
// SUCCEEDED flow is 409; unknown or malformed ids are 404.
func TestCancelAndReplayFlow(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		var f flowJSON
		c.do("POST", "/api/flows", map[string]any{"queue": "cr", "steps": []any{
			map[string]any{"name": "a", "kind": "noop", "max_attempts": 1},
			map[string]any{"name": "b", "kind": "noop", "depends_on": []string{"a"}},
		}}).want(t, http.StatusCreated, &f)
		id := f.ID.String()
		c.do("POST", "/api/flows/"+id+"/replay", nil).wantError(t, http.StatusConflict, codeIllegalTransition)

		a := c.claimOne("cr")
		c.do("POST", "/api/tasks/"+a.ID.String()+"/fail", map[string]any{"lease_token": a.LeaseToken.String(), "error": "boom"}).want(t, http.StatusOK, nil)
		failed := c.getFlow(f.ID)
		if failed.Status != store.FlowFailed || stepOf(t, failed, "b").Status != store.StepStatus(store.StatusCanceled) {
			t.Fatalf("after a's last attempt failed: %+v", failed)
		}
		c.do("POST", "/api/flows/"+id+"/cancel", nil).wantError(t, http.StatusConflict, codeIllegalTransition)

		var replayed flowJSON
		c.do("POST", "/api/flows/"+id+"/replay", nil).want(t, http.StatusOK, &replayed)
		if replayed.Status != store.FlowRunning {
			t.Fatalf("replayed flow is %s", replayed.Status)
		}
		c.complete(c.claimOne("cr"), `1`)
		c.complete(c.claimOne("cr"), `2`)
		if done := c.getFlow(f.ID); done.Status != store.FlowSucceeded {
			t.Fatalf("after replay the flow is %s", done.Status)
		}
		c.do("POST", "/api/flows/"+id+"/replay", nil).wantError(t, http.StatusConflict, codeIllegalTransition)

		// Cancel mid-flow: CANCELED, no step left waiting; again is 200 (as for tasks).
		var g flowJSON
		c.do("POST", "/api/flows", map[string]any{"queue": "cr2", "steps": []any{
			map[string]any{"name": "a", "kind": "noop"},
			map[string]any{"name": "b", "kind": "noop", "depends_on": []string{"a"}},
		}}).want(t, http.StatusCreated, &g)
		var canceled flowJSON
		c.do("POST", "/api/flows/"+g.ID.String()+"/cancel", nil).want(t, http.StatusOK, &canceled)
		if canceled.Status != store.FlowCanceled || canceled.CompletedAt == nil {
			t.Fatalf("canceled flow: %+v", canceled)
		}
		for _, s := range canceled.Steps {
			if s.Status != store.StepStatus(store.StatusCanceled) {
				t.Fatalf("step %s is %s after cancel", s.Name, s.Status)
			}
		}
		c.do("POST", "/api/flows/"+g.ID.String()+"/cancel", nil).want(t, http.StatusOK, nil)

		c.do("GET", "/api/flows/"+uuid.New().String(), nil).wantError(t, http.StatusNotFound, codeNotFound)
		c.do("GET", "/api/flows/not-a-uuid", nil).wantError(t, http.StatusNotFound, codeNotFound)
		c.do("POST", "/api/flows/"+uuid.New().String()+"/cancel", nil).wantError(t, http.StatusNotFound, codeNotFound)
	})
}
