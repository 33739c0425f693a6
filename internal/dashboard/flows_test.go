package dashboard

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// createETLFlow starts extract -> transform (for_each over extract) -> load.
func createETLFlow(t *testing.T, st store.Store, name string) *store.Flow {
	t.Helper()
	res, err := st.CreateFlow(ctx(t), store.FlowParams{Name: name, Queue: "etl", Steps: []store.StepParams{
		{Name: "extract", Kind: "extract"},
		{Name: "transform", Kind: "transform", DependsOn: []string{"extract"}, ForEach: "extract"},
		{Name: "load", Kind: "load", DependsOn: []string{"transform"}},
	}})
	if err != nil {
		t.Fatalf("CreateFlow: %v", err)
	}
	return res.Flow
}

func getFlow(t *testing.T, st store.Store, id uuid.UUID) *store.Flow {
	t.Helper()
	f, err := st.GetFlow(ctx(t), id)
	if err != nil {
		t.Fatalf("GetFlow(%s): %v", id, err)
	}
	return f
}

func flowStep(t *testing.T, f *store.Flow, name string) store.FlowStep {
	t.Helper()
	for _, s := range f.Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("flow %s has no step %s", f.ID, name)
	return store.FlowStep{}
}

// endStepTask claims a step's task and records kind (Succeed with output, or Fail with
// errText).
func endStepTask(t *testing.T, st store.Store, taskID uuid.UUID, kind store.OutcomeKind, output, errText string) {
	t.Helper()
	c := claimTask(t, st, getTask(t, st, taskID), time.Minute)
	o := store.Outcome{TaskID: c.ID, LeaseToken: c.LeaseToken, Kind: kind, Error: errText}
	if output != "" {
		o.Output = json.RawMessage(output)
	}
	res, err := st.RecordOutcomes(ctx(t), []store.Outcome{o})
	if err != nil || res[0].Err != nil {
		t.Fatalf("RecordOutcomes: %v %+v", err, res)
	}
}

// nodeStatus is the data-status of the graph node of step.
func (p page) nodeStatus(step string) string {
	return regexpFind(`<g class="node [a-z-]+" data-step="`+step+`" data-status="([A-Z]+)">`, p.body)
}

func TestFlowListFiltersAndPages(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		var ids []string
		for range pageSize + 3 {
			ids = append(ids, createETLFlow(t, st, "nightly").ID.String())
		}
		other := createETLFlow(t, st, "hourly")
		if _, err := st.CancelFlow(ctx(t), other.ID); err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		p := b.get("/flows").want(t, http.StatusOK)
		p.contains(t, `data-nav="flows" href="/flows" aria-current="page"`, `<tr data-flow-id="`+other.ID.String()+`">`,
			`href="/flows/`+other.ID.String()+`"`, `id="next-page"`)

		p = b.get("/flows?name=nightly&status=running").want(t, http.StatusOK)
		p.lacks(t, other.ID.String()).contains(t, `<option value="RUNNING" selected>`)
		next := htmlUnescape(regexpFind(`id="next-page" href="([^"]+)"`, p.body))
		if !strings.Contains(next, "name=nightly") || !strings.Contains(next, "status=RUNNING") {
			t.Fatalf("next page %q loses the filter", next)
		}
		second := b.get(next).want(t, http.StatusOK)
		second.lacks(t, `id="next-page"`).contains(t, "← First page")
		// Newest first: the second page ends with the first flow made.
		second.contains(t, `<tr data-flow-id="`+ids[0]+`">`)
		if strings.Contains(p.body, `data-flow-id="`+ids[0]+`"`) {
			t.Fatal("the first page shows the oldest flow")
		}

		b.get("/flows?status=CANCELED").want(t, http.StatusOK).contains(t, other.ID.String()).lacks(t, ids[0])
		b.get("/flows?status=LOST").want(t, http.StatusBadRequest).wantFlash(t, "error", `Unknown flow status "LOST"`)
		b.get("/flows?name=bad%20name").want(t, http.StatusBadRequest)
		b.get("/flows?cursor=nope").want(t, http.StatusBadRequest).wantFlash(t, "error", "cursor")
		b.get("/").contains(t, `data-nav="flows" href="/flows"`)
	})
}

func TestFlowPageGraphLiveAndActions(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		f := createETLFlow(t, st, "etl")
		path := "/flows/" + f.ID.String()
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		p := b.get(path).want(t, http.StatusOK)
		extract := flowStep(t, f, "extract").TaskIDs[0]
		p.contains(t, `<svg id="flow-graph"`, `<marker id="arrow"`, `data-live="flow"`, `<main id="content" data-poll="1000">`,
			`<path class="edge edge-for-each" data-from="extract" data-to="transform"`,
			`<path class="edge" data-from="transform" data-to="load"`,
			`<a href="/tasks/`+extract.String()+`" aria-label="Step extract (kind extract): PENDING">`,
			`id="cancel-flow"`, `<span id="flow-status" class="badge badge-running">RUNNING</span>`,
			`over extract: waiting`).lacks(t, `id="replay-flow"`)
		if got := p.nodeStatus("extract"); got != "PENDING" {
			t.Fatalf("extract node %q, want PENDING", got)
		}
		if got := p.nodeStatus("transform"); got != "WAITING" {
			t.Fatalf("transform node %q, want WAITING", got)
		}
		// Layered: extract, transform and load sit in three columns left to right.
		xs := make([]string, 0, 3)
		for _, s := range []string{"extract", "transform", "load"} {
			xs = append(xs, regexpFind(`data-step="`+s+`" data-status="[A-Z]+">(?:<a [^>]*>)?\s*<title>[^<]*</title>\s*<rect x="(\d+)"`, p.body))
		}
		if xs[0] != "12" || xs[1] != "276" || xs[2] != "540" {
			t.Fatalf("node columns at x %v, want [12 276 540]", xs)
		}

		// The step task's page links back to its flow.
		b.get("/tasks/"+extract.String()).want(t, http.StatusOK).contains(t, `<a id="task-flow" href="`+path+`">extract of flow`)

		// extract succeeds: the live fetch shows it, and transform's three tasks.
		endStepTask(t, st, extract, store.Succeed, `[1,2,3]`, "")
		live := b.partial(path).want(t, http.StatusOK)
		if got := live.nodeStatus("extract"); got != "SUCCEEDED" {
			t.Fatalf("live extract node %q, want SUCCEEDED", got)
		}
		live.contains(t, "0 of 3 succeeded", `#2</a>`).lacks(t, "<html")

		// A transform task fails: the flow FAILED, the error escaped, replay offered.
		f = getFlow(t, st, f.ID)
		tasks := flowStep(t, f, "transform").TaskIDs
		endStepTask(t, st, tasks[0], store.Succeed, `"one"`, "")
		endStepTask(t, st, tasks[1], store.Fail, "", `bad <script>alert(1)</script> row`)
		p = b.get(path).want(t, http.StatusOK)
		p.contains(t, `bad &lt;script&gt;alert(1)&lt;/script&gt; row`, `id="replay-flow"`, "1 of 3 succeeded",
			`class="badge badge-failed">FAILED</span>`).lacks(t, `<script>alert`, `id="cancel-flow"`)
		if got := p.nodeStatus("load"); got != "CANCELED" {
			t.Fatalf("load node %q, want CANCELED", got)
		}

		// Cancel is refused with the flow's status; replay works; cancel then works.
		_, shown := b.submit(path, path+"/cancel", nil)
		shown.wantFlash(t, "error", "Cannot cancel this flow: it is FAILED")
		_, shown = b.submit(path, path+"/replay", nil)
		shown.wantFlash(t, "ok", "Flow replayed").contains(t, `id="cancel-flow"`)
		if got := getFlow(t, st, f.ID).Status; got != store.FlowRunning {
			t.Fatalf("after replay the flow is %s", got)
		}
		_, shown = b.submit(path, path+"/cancel", nil)
		shown.wantFlash(t, "ok", "Flow canceled").contains(t, `id="replay-flow"`)

		// No csrf field: refused, nothing changed.
		b.post(path+"/replay", nil).want(t, http.StatusForbidden)
		if got := getFlow(t, st, f.ID).Status; got != store.FlowCanceled {
			t.Fatalf("after a refused replay the flow is %s", got)
		}
		b.get("/flows/nope").want(t, http.StatusBadRequest)
		b.get("/flows/"+uuid.New().String()).want(t, http.StatusNotFound).contains(t, "No flow has the id")
	})
}

func TestFlowGraphLayout(t *testing.T) {
	// A diamond: a in column 0, b and c in column 1, d in column 2 centred between them.
	steps := []store.FlowStep{
		{Name: "a", Kind: "k", Status: store.StepWaiting},
		{Name: "b", Kind: "k", DependsOn: []string{"a"}, Status: store.StepWaiting},
		{Name: "c", Kind: "k", DependsOn: []string{"a"}, Status: store.StepWaiting},
		{Name: "d", Kind: "k", DependsOn: []string{"c", "b"}, Status: store.StepWaiting},
		{Name: "e", Kind: "k", DependsOn: []string{"a", "d"}, Status: store.StepWaiting},
	}
	g := newFlowGraph(steps)
	pos := map[string][2]int{}
	for _, n := range g.Nodes {
		pos[n.Name] = [2]int{n.X, n.Y}
	}
	col := graphNodeW + graphColGap
	if pos["a"][0] != graphMargin || pos["b"][0] != graphMargin+col || pos["c"][0] != graphMargin+col ||
		pos["d"][0] != graphMargin+2*col || pos["e"][0] != graphMargin+3*col {
		t.Fatalf("columns: %v", pos)
	}
	if pos["b"][1] >= pos["c"][1] || pos["d"][1] <= pos["b"][1] || pos["d"][1] >= pos["c"][1] {
		t.Fatalf("rows: %v", pos)
	}
	if len(g.Edges) != 6 || g.Width != 2*graphMargin+4*graphNodeW+3*graphColGap {
		t.Fatalf("%d edges, width %d", len(g.Edges), g.Width)
	}
}

// TestFlowSchedulePage: a schedule of kind flow shows its flow (linked to the flow list)
// instead of a task template, and Trigger now starts a flow.
func TestFlowSchedulePage(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		_, err := st.CreateSchedule(ctx(t), store.ScheduleParams{Name: "nightly", Kind: store.ScheduleKindFlow, CronSpec: "@daily",
			Flow: &store.FlowParams{Name: "etl", Queue: "etl", Steps: []store.StepParams{{Name: "extract", Kind: "extract"}}}})
		if err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, newDashboard(t, Config{Store: st}))
		p := b.get("/schedules/nightly").want(t, http.StatusOK)
		p.contains(t, `<a href="/flows?name=etl">etl</a> (1 steps)`, `id="schedule-flow-runs"`).lacks(t, "Task kind")
		_, shown := b.submit("/schedules/nightly", "/schedules/nightly/trigger", nil)
		shown.wantFlash(t, "ok", "flow")
		flows, _, err := st.ListFlows(ctx(t), store.FlowListParams{Name: "etl"})
		if err != nil || len(flows) != 1 || !strings.HasPrefix(flows[0].IdempotencyKey, "schedule:nightly:trigger:") {
			t.Fatalf("flows after trigger: %v %+v", err, flows)
		}
		b.get("/schedules").want(t, http.StatusOK).contains(t, "flow <span class=\"muted\">on</span> etl")
	})
}
