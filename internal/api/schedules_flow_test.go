package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// TestScheduleOfKindFlow: a schedule carries "flow" in place of "task" (kind flow, given
// or implied by the flow), reads back with "task": null, takes a new flow by PATCH, is
// triggered into a flow (201 with the flow, its Location under /api/flows), and every
// wrong combination is a 400 naming what is wrong that writes nothing.
func TestScheduleOfKindFlow(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		flow := map[string]any{"name": "etl", "queue": "etl", "steps": []any{
			map[string]any{"name": "extract", "kind": "extract", "payload": map[string]any{"src": "s3"}},
			map[string]any{"name": "transform", "kind": "transform", "depends_on": []string{"extract"}, "for_each": "extract"},
		}}
		sc := c.createSchedule(map[string]any{"name": "nightly", "kind": "flow", "cron_spec": "@daily", "flow": flow})
		if sc.Kind != "flow" || sc.Task != nil || sc.Flow == nil || len(sc.Flow.Steps) != 2 || sc.Flow.Steps[1].ForEach != "extract" ||
			sc.Flow.Steps[0].Queue != "etl" || sc.Flow.Steps[0].MaxAttempts != store.DefaultMaxAttempts {
			t.Fatalf("created: %+v flow %+v", sc, sc.Flow)
		}
		raw := string(c.do("GET", "/api/schedules/nightly", nil).body)
		if !strings.Contains(raw, `"task":null`) || !strings.Contains(raw, `"flow":{"name":"etl"`) {
			t.Fatalf("schedule JSON: %s", raw)
		}
		implied := c.createSchedule(map[string]any{"name": "implied", "cron_spec": "@daily", "flow": flow})
		if implied.Kind != "flow" {
			t.Fatalf("a flow without kind made kind %q", implied.Kind)
		}

		var upd scheduleJSON
		c.do("PATCH", "/api/schedules/nightly", map[string]any{"flow": map[string]any{"steps": []any{
			map[string]any{"name": "only", "kind": "k"}}}}).want(t, http.StatusOK, &upd)
		if upd.Flow == nil || len(upd.Flow.Steps) != 1 || upd.Flow.Queue != "default" {
			t.Fatalf("patched flow: %+v", upd.Flow)
		}

		res := c.do("POST", "/api/schedules/nightly/trigger", nil)
		var started flowJSON
		res.want(t, http.StatusCreated, &started)
		if started.Status != store.FlowRunning || len(started.Steps) != 1 || len(started.Steps[0].TaskIDs) != 1 ||
			res.header.Get("Location") != "/api/flows/"+started.ID.String() {
			t.Fatalf("trigger: %+v, Location %q", started, res.header.Get("Location"))
		}

		for _, bad := range []struct{ body, names string }{
			{`{"name": "b1", "kind": "flow", "cron_spec": "@daily"}`, "flow is required"},
			{`{"name": "b2", "kind": "flow", "cron_spec": "@daily", "task": {"kind": "k"}, "flow": {"steps": [{"name": "a", "kind": "k"}]}}`, "leave task out"},
			{`{"name": "b3", "kind": "task", "cron_spec": "@daily", "task": {"kind": "k"}, "flow": {"steps": [{"name": "a", "kind": "k"}]}}`, "not a flow"},
			{`{"name": "b4", "cron_spec": "@daily", "flow": {"idempotency_key": "x", "steps": [{"name": "a", "kind": "k"}]}}`, "idempotency_key"},
			{`{"name": "b5", "cron_spec": "@daily", "flow": {"steps": [{"name": "a", "kind": "k", "depends_on": ["a"]}]}}`, `"a"`},
			{`{"name": "b6", "cron_spec": "@daily", "flow": {"steps": [{"name": "a", "kind": "k", "depends_on": ["ghost"]}]}}`, "ghost"},
			{`{"name": "b7", "cron_spec": "@daily", "overlap": "buffer_two", "flow": {"steps": [{"name": "a", "kind": "k"}]}}`, "buffer_two"},
			{`{"name": "b8", "cron_spec": "@daily", "flow": {"steps": [{"name": "a", "kind": "k", "bogus": 1}]}}`, "bogus"},
			{`{"name": "b9", "kind": "workflow", "cron_spec": "@daily", "task": {"kind": "k"}}`, `"flow"`},
		} {
			e := c.do("POST", "/api/schedules", bad.body).wantError(t, http.StatusBadRequest, codeInvalidRequest)
			if !strings.Contains(e.Message, bad.names) {
				t.Errorf("%s: message %q does not say %q", bad.body, e.Message, bad.names)
			}
		}
		for _, bad := range []struct{ path, body, names string }{
			{"/api/schedules/nightly", `{"task": {"kind": "k"}}`, "flow"},
			{"/api/schedules/nightly", `{"flow": {"idempotency_key": "x", "steps": [{"name": "a", "kind": "k"}]}}`, "idempotency_key"},
		} {
			e := c.do("PATCH", bad.path, bad.body).wantError(t, http.StatusBadRequest, codeInvalidRequest)
			if !strings.Contains(e.Message, bad.names) {
				t.Errorf("PATCH %s: message %q does not say %q", bad.body, e.Message, bad.names)
			}
		}
		var list schedulesJSON
		c.do("GET", "/api/schedules", nil).want(t, http.StatusOK, &list)
		if len(list.Schedules) != 2 {
			t.Fatalf("%d schedules after refused creates, want 2", len(list.Schedules))
		}

		// Every overlap policy for kind flow (buffer_one and cancel_other were a 400 before
		// migration 0029).
		var made scheduleJSON
		c.do("POST", "/api/schedules", `{"name": "held", "cron_spec": "@daily", "overlap": "buffer_one", "flow": {"steps": [{"name": "a", "kind": "k"}]}}`).
			want(t, http.StatusCreated, &made)
		if made.Kind != store.ScheduleKindFlow || made.Overlap != store.OverlapBufferOne {
			t.Fatalf("created with buffer_one: %+v", made)
		}
		var patched scheduleJSON
		c.do("PATCH", "/api/schedules/nightly", `{"overlap": "cancel_other"}`).want(t, http.StatusOK, &patched)
		if patched.Overlap != store.OverlapCancelOther {
			t.Fatalf("patched to cancel_other: %+v", patched)
		}
	})
}
