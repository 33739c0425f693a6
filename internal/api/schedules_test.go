package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

func (c *apiClient) createSchedule(body any) scheduleJSON {
	c.t.Helper()
	var out scheduleJSON
	c.do("POST", "/api/schedules", body).want(c.t, http.StatusCreated, &out)
	return out
}

func (c *apiClient) getSchedule(name string) scheduleJSON {
	c.t.Helper()
	var out scheduleJSON
	c.do("GET", "/api/schedules/"+name, nil).want(c.t, http.StatusOK, &out)
	return out
}

func (c *apiClient) scheduleNames() []string {
	c.t.Helper()
	var out schedulesJSON
	c.do("GET", "/api/schedules", nil).want(c.t, http.StatusOK, &out)
	names := []string{}
	for _, s := range out.Schedules {
		names = append(names, s.Name)
	}
	return names
}

func TestScheduleLifecycle(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}

		// Create with every field.
		before := time.Now()
		res := c.do("POST", "/api/schedules", map[string]any{
			"name": "nightly-report", "cron_spec": "30 3 * * *", "timezone": "Europe/Berlin",
			"task":    map[string]any{"kind": "report.build", "queue": "reports", "payload": map[string]any{"full": true, "html": "<b>"}, "max_attempts": 3},
			"enabled": true, "catch_up": "all",
		})
		var nightly scheduleJSON
		res.want(t, http.StatusCreated, &nightly)
		if got := res.header.Get("Location"); got != "/api/schedules/nightly-report" {
			t.Errorf("Location %q", got)
		}
		if nightly.Name != "nightly-report" || nightly.Kind != store.ScheduleKindTask || nightly.CronSpec != "30 3 * * *" ||
			nightly.Timezone != "Europe/Berlin" || !nightly.Enabled || nightly.CatchUp != store.CatchUpAll ||
			nightly.Task.Kind != "report.build" || nightly.Task.Queue != "reports" || nightly.Task.MaxAttempts != 3 ||
			nightly.LastRunAt != nil || nightly.LastEnqueuedAt != nil {
			t.Errorf("created %+v", nightly)
		}
		if !sameJSON(t, nightly.Task.Payload, `{"full":true,"html":"<b>"}`) {
			t.Errorf("payload %s", nightly.Task.Payload)
		}
		// next_run_at: the first 03:30 Berlin time after now, sent in UTC.
		local := nightly.NextRunAt.In(berlin)
		if nightly.NextRunAt.Location() != time.UTC || local.Hour() != 3 || local.Minute() != 30 || local.Second() != 0 ||
			!nightly.NextRunAt.After(before) || nightly.NextRunAt.Sub(before) > 25*time.Hour {
			t.Errorf("next_run_at %s (%s in Berlin)", nightly.NextRunAt, local)
		}
		within(t, nightly.CreatedAt, before, 5*time.Second)

		// Defaults.
		every := c.createSchedule(map[string]any{"name": "every5", "cron_spec": "*/5 * * * *", "task": map[string]any{"kind": "noop"}})
		if every.Timezone != "UTC" || !every.Enabled || every.CatchUp != store.CatchUpOne || every.Kind != "task" ||
			every.Task.Queue != store.DefaultQueue || string(every.Task.Payload) != "{}" || every.Task.MaxAttempts != store.DefaultMaxAttempts {
			t.Errorf("defaults: %+v", every)
		}
		if m := every.NextRunAt.Minute(); m%5 != 0 || every.NextRunAt.Second() != 0 || every.NextRunAt.Sub(time.Now()) > 5*time.Minute {
			t.Errorf("*/5 next_run_at %s", every.NextRunAt)
		}
		paused := c.createSchedule(map[string]any{"name": "a.paused", "cron_spec": "@hourly", "kind": "task",
			"task": map[string]any{"kind": "noop", "payload": nil}, "enabled": false, "catch_up": "SKIP"})
		if paused.Enabled || paused.CatchUp != store.CatchUpSkip || string(paused.Task.Payload) != "{}" {
			t.Errorf("paused: %+v", paused)
		}

		// Raw JSON: every documented field, times in UTC, nulls explicit.
		raw := map[string]any{}
		if err := json.Unmarshal(c.do("GET", "/api/schedules/every5", nil).body, &raw); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"name", "kind", "cron_spec", "timezone", "task", "enabled", "catch_up", "next_run_at",
			"last_run_at", "last_enqueued_at", "created_at", "updated_at"} {
			if _, ok := raw[f]; !ok {
				t.Errorf("field %q missing from %v", f, raw)
			}
		}
		if raw["last_run_at"] != nil || raw["last_enqueued_at"] != nil {
			t.Errorf("last_run_at/last_enqueued_at must be null before the first run: %v", raw)
		}
		if s, _ := raw["next_run_at"].(string); !strings.HasSuffix(s, "Z") {
			t.Errorf("next_run_at %q is not RFC 3339 UTC", s)
		}

		// A duplicate name is 409 conflict and changes nothing.
		e := c.do("POST", "/api/schedules", map[string]any{"name": "every5", "cron_spec": "@daily", "task": map[string]any{"kind": "other"}}).
			wantError(t, http.StatusConflict, codeConflict)
		if !strings.Contains(e.Message, "every5") {
			t.Errorf("conflict message %q", e.Message)
		}
		if got := c.getSchedule("every5"); got.CronSpec != "*/5 * * * *" || got.Task.Kind != "noop" {
			t.Errorf("the duplicate changed the schedule: %+v", got)
		}

		// List: ordered by name.
		if got := c.scheduleNames(); !slices.Equal(got, []string{"a.paused", "every5", "nightly-report"}) {
			t.Errorf("list: %v", got)
		}

		// Get: unknown, and names that cannot exist, are 404.
		if got := c.getSchedule("nightly-report"); got.Name != "nightly-report" || !got.NextRunAt.Equal(nightly.NextRunAt) {
			t.Errorf("get: %+v", got)
		}
		for _, name := range []string{"missing", "a:b", "-x", "%20x", strings.Repeat("n", 129)} {
			e := c.do("GET", "/api/schedules/"+name, nil).wantError(t, http.StatusNotFound, codeNotFound)
			if !strings.Contains(e.Message, "no schedule") {
				t.Errorf("404 message %q", e.Message)
			}
		}

		// PATCH: a new spec recomputes next_run_at; the task replaces the whole template.
		var upd scheduleJSON
		c.do("PATCH", "/api/schedules/every5", map[string]any{"cron_spec": "0 12 * * *"}).want(t, http.StatusOK, &upd)
		if upd.CronSpec != "0 12 * * *" || upd.NextRunAt.Hour() != 12 || upd.NextRunAt.Minute() != 0 || !upd.NextRunAt.After(time.Now()) {
			t.Errorf("patched spec: %+v", upd)
		}
		c.do("PATCH", "/api/schedules/every5", map[string]any{"timezone": "America/New_York"}).want(t, http.StatusOK, &upd)
		ny, _ := time.LoadLocation("America/New_York")
		if upd.Timezone != "America/New_York" || upd.NextRunAt.In(ny).Hour() != 12 {
			t.Errorf("patched zone: %+v (%s in New York)", upd, upd.NextRunAt.In(ny))
		}
		c.do("PATCH", "/api/schedules/every5", map[string]any{"task": map[string]any{"kind": "sleep", "payload": map[string]any{"ms": 5}}}).
			want(t, http.StatusOK, &upd)
		if upd.Task.Kind != "sleep" || upd.Task.Queue != "default" || !sameJSON(t, upd.Task.Payload, `{"ms":5}`) ||
			upd.Task.MaxAttempts != store.DefaultMaxAttempts || upd.CronSpec != "0 12 * * *" {
			t.Errorf("patched task: %+v", upd)
		}
		c.do("PATCH", "/api/schedules/every5", map[string]any{"catch_up": "skip", "enabled": false}).want(t, http.StatusOK, &upd)
		if upd.CatchUp != store.CatchUpSkip || upd.Enabled {
			t.Errorf("patched catch_up/enabled: %+v", upd)
		}
		c.do("PATCH", "/api/schedules/every5", map[string]any{"enabled": true}).want(t, http.StatusOK, &upd)
		if !upd.Enabled {
			t.Errorf("patched enabled: %+v", upd)
		}
		c.do("PATCH", "/api/schedules/missing", map[string]any{"enabled": true}).wantError(t, http.StatusNotFound, codeNotFound)
		c.do("PATCH", "/api/schedules/every5", `{}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("PATCH", "/api/schedules/every5", `{"enabled": null}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("PATCH", "/api/schedules/every5", `{"name": "renamed"}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("PATCH", "/api/schedules/every5", `{"cron_spec": "61 * * * *"}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("PATCH", "/api/schedules/every5", `{"timezone": "Mars/Olympus"}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("PATCH", "/api/schedules/every5", `{"task": {"queue": "q"}}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("PATCH", "/api/schedules/every5", `{"catch_up": "most"}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		if got := c.getSchedule("every5"); got.CronSpec != "0 12 * * *" || got.Timezone != "America/New_York" || got.CatchUp != store.CatchUpSkip {
			t.Errorf("rejected patches changed the schedule: %+v", got)
		}

		// Pause and resume.
		var sc scheduleJSON
		c.do("POST", "/api/schedules/nightly-report/pause", nil).want(t, http.StatusOK, &sc)
		if sc.Enabled {
			t.Errorf("paused: %+v", sc)
		}
		c.do("POST", "/api/schedules/nightly-report/resume", nil).want(t, http.StatusOK, &sc)
		if !sc.Enabled || !sc.NextRunAt.After(before) || sc.NextRunAt.In(berlin).Hour() != 3 {
			t.Errorf("resumed: %+v", sc)
		}
		for _, action := range []string{"pause", "resume", "trigger", "reschedule"} {
			c.do("POST", "/api/schedules/missing/"+action, map[string]any{"next_run_at": "2030-01-01T00:00:00Z"}).
				wantError(t, http.StatusNotFound, codeNotFound)
		}

		// Reschedule sets next_run_at exactly.
		at := time.Date(2031, 2, 3, 4, 5, 0, 0, time.UTC)
		c.do("POST", "/api/schedules/nightly-report/reschedule", map[string]any{"next_run_at": at.In(berlin).Format(time.RFC3339)}).
			want(t, http.StatusOK, &sc)
		if !sc.NextRunAt.Equal(at) || sc.NextRunAt.Location() != time.UTC {
			t.Errorf("rescheduled to %s, want %s", sc.NextRunAt, at)
		}
		for _, body := range []string{`{}`, `{"next_run_at": ""}`, `{"next_run_at": "tomorrow"}`, `{"next_run_at": 5}`, `{"at": "2030-01-01T00:00:00Z"}`} {
			c.do("POST", "/api/schedules/nightly-report/reschedule", body).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		}
		// A zero time is given, not missing: the answer names it rather than asking for it.
		for _, at := range []string{"0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z"} {
			e := c.do("POST", "/api/schedules/nightly-report/reschedule", map[string]any{"next_run_at": at}).wantError(t, http.StatusBadRequest, codeInvalidRequest)
			if !strings.Contains(e.Message, "next_run_at \""+at+"\" is before 1970") {
				t.Errorf("next_run_at %s: message %q", at, e.Message)
			}
		}
		c.do("POST", "/api/schedules/nightly-report/reschedule", `{"next_run_at": `).wantError(t, http.StatusBadRequest, codeInvalidJSON)
		c.do("POST", "/api/schedules/nightly-report/reschedule", nil).wantError(t, http.StatusBadRequest, codeInvalidJSON)

		// Trigger: a task from the template now; next_run_at does not move. It works on a
		// paused schedule too.
		res = c.do("POST", "/api/schedules/nightly-report/trigger", nil)
		var run taskJSON
		res.want(t, http.StatusCreated, &run)
		if res.header.Get("Location") != "/api/tasks/"+run.ID.String() {
			t.Errorf("trigger Location %q", res.header.Get("Location"))
		}
		if run.Kind != "report.build" || run.Queue != "reports" || run.MaxAttempts != 3 || run.Status != store.StatusPending ||
			!sameJSON(t, run.Payload, `{"full":true,"html":"<b>"}`) || run.IdempotencyKey == nil ||
			!strings.HasPrefix(*run.IdempotencyKey, store.ScheduleRunKeyPrefix("nightly-report")) {
			t.Errorf("triggered run: %+v", run)
		}
		within(t, run.ScheduledFor, time.Now(), 5*time.Second)
		if got := c.getSchedule("nightly-report"); !got.NextRunAt.Equal(at) {
			t.Errorf("trigger moved next_run_at to %s", got.NextRunAt)
		}
		var pausedRun taskJSON
		c.do("POST", "/api/schedules/a.paused/trigger", nil).want(t, http.StatusCreated, &pausedRun)
		if pausedRun.Kind != "noop" {
			t.Errorf("run of the paused schedule: %+v", pausedRun)
		}

		// A claimed tick: make the schedule due, claim it as the scheduler does, and see
		// the run in the history and last_run_at.
		c.do("POST", "/api/schedules/nightly-report/reschedule", map[string]any{"next_run_at": time.Now().Add(-time.Minute).Format(time.RFC3339)}).
			want(t, http.StatusOK, &sc)
		claims, err := st.ClaimDueSchedules(context.Background(), store.ClaimSchedulesParams{Limit: 10})
		if err != nil || len(claims) != 1 || len(claims[0].Runs) != 1 {
			t.Fatalf("claim: %v %+v", err, claims)
		}
		tick := claims[0].Runs[0]
		sc = c.getSchedule("nightly-report")
		if sc.LastRunAt == nil || sc.LastEnqueuedAt == nil || !sc.NextRunAt.After(time.Now()) {
			t.Errorf("after a claimed tick: %+v", sc)
		}

		// Runs: newest first, paged.
		var runs scheduleRunsJSON
		c.do("GET", "/api/schedules/nightly-report/runs", nil).want(t, http.StatusOK, &runs)
		if len(runs.Tasks) != 2 || runs.Tasks[0].ID != tick.ID || runs.Tasks[1].ID != run.ID || runs.NextCursor != "" {
			t.Fatalf("runs: %+v", runs)
		}
		c.do("GET", "/api/schedules/nightly-report/runs?limit=1", nil).want(t, http.StatusOK, &runs)
		if len(runs.Tasks) != 1 || runs.Tasks[0].ID != tick.ID || runs.NextCursor == "" {
			t.Fatalf("runs page 1: %+v", runs)
		}
		c.do("GET", "/api/schedules/nightly-report/runs?limit=1&cursor="+runs.NextCursor, nil).want(t, http.StatusOK, &runs)
		if len(runs.Tasks) != 1 || runs.Tasks[0].ID != run.ID || runs.NextCursor != "" {
			t.Fatalf("runs page 2: %+v", runs)
		}
		c.do("GET", "/api/schedules/every5/runs", nil).want(t, http.StatusOK, &runs)
		if len(runs.Tasks) != 0 || runs.Tasks == nil {
			t.Errorf("runs of a schedule that never ran: %+v", runs)
		}
		for _, bad := range []string{"?limit=0", "?limit=1001", "?limit=x", "?cursor=%21%21", "?status=PENDING", "?limit=1&limit=2"} {
			c.do("GET", "/api/schedules/nightly-report/runs"+bad, nil).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		}
		c.do("GET", "/api/schedules?name=x", nil).wantError(t, http.StatusBadRequest, codeInvalidRequest)

		// A name no schedule and no run has is 404.
		c.do("GET", "/api/schedules/missing/runs", nil).wantError(t, http.StatusNotFound, codeNotFound)
		c.do("GET", "/api/schedules/a:b/runs", nil).wantError(t, http.StatusNotFound, codeNotFound)

		// Delete: 204, then 404; the runs stay, as tasks and as the schedule's history.
		res = c.do("DELETE", "/api/schedules/nightly-report", nil)
		if res.status != http.StatusNoContent || len(res.body) != 0 {
			t.Fatalf("delete: %d %s", res.status, res.body)
		}
		c.do("GET", "/api/schedules/nightly-report", nil).wantError(t, http.StatusNotFound, codeNotFound)
		c.do("DELETE", "/api/schedules/nightly-report", nil).wantError(t, http.StatusNotFound, codeNotFound)
		if got := c.getTask(run.ID.String()); got.ID != run.ID {
			t.Errorf("the run is gone with its schedule")
		}
		c.do("GET", "/api/schedules/nightly-report/runs", nil).want(t, http.StatusOK, &runs)
		if len(runs.Tasks) != 2 {
			t.Errorf("runs of the deleted schedule: %+v", runs)
		}
		if got := c.scheduleNames(); !slices.Equal(got, []string{"a.paused", "every5"}) {
			t.Errorf("list after delete: %v", got)
		}
		// The name is free again.
		c.createSchedule(map[string]any{"name": "nightly-report", "cron_spec": "@daily", "task": map[string]any{"kind": "noop"}})
	})
}

// TestScheduleValidation: every bad create is a 4xx naming what is wrong, checked before
// the store is touched, and writes nothing.
func TestScheduleValidation(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		body := func(mod func(m map[string]any)) map[string]any {
			m := map[string]any{"name": "s1", "cron_spec": "* * * * *", "task": map[string]any{"kind": "noop"}}
			mod(m)
			return m
		}
		spec := func(s any) map[string]any { return body(func(m map[string]any) { m["cron_spec"] = s }) }
		task := func(t any) map[string]any { return body(func(m map[string]any) { m["task"] = t }) }

		// Invalid cron specs: the message names the field at fault.
		for _, tc := range []struct{ spec, field string }{
			{"61 * * * *", "minute"},
			{"* * * *", "spec"},
			{"* * * * * *", "spec"},
			{"@reboot", "spec"},
			{"*/0 * * * *", "minute"},
			{"", "spec"},
			{"   ", "spec"},
			{"* 24 * * *", "hour"},
			{"* * 0 * *", "day-of-month"},
			{"* * 32 * *", "day-of-month"},
			{"* * * 13 *", "month"},
			{"* * * foo *", "month"},
			{"* * * * 8", "day-of-week"},
			{"* * * * mon-", "day-of-week"},
			{"5-1 * * * *", "minute"},
			{"0 0 30 2 *", "day-of-month"}, // never fires
		} {
			e := c.do("POST", "/api/schedules", spec(tc.spec)).wantError(t, http.StatusBadRequest, codeInvalidRequest)
			if !strings.Contains(e.Message, tc.field) || !strings.Contains(e.Message, "cron_spec") {
				t.Errorf("spec %q: message %q does not name the field %q", tc.spec, e.Message, tc.field)
			}
		}

		cases := []struct {
			name   string
			body   any
			status int
			code   string
			says   string
		}{
			{"no name", body(func(m map[string]any) { delete(m, "name") }), 400, codeInvalidRequest, "name"},
			{"bad name", body(func(m map[string]any) { m["name"] = "a b" }), 400, codeInvalidRequest, "name"},
			{"colon in name", body(func(m map[string]any) { m["name"] = "a:b" }), 400, codeInvalidRequest, "name"},
			{"long name", body(func(m map[string]any) { m["name"] = strings.Repeat("n", 129) }), 400, codeInvalidRequest, "name"},
			{"flow kind with a task", body(func(m map[string]any) { m["kind"] = "flow" }), 400, codeInvalidRequest, "leave task out"},
			{"unknown kind", body(func(m map[string]any) { m["kind"] = "workflow" }), 400, codeInvalidRequest, "task.kind"},
			{"no spec", body(func(m map[string]any) { delete(m, "cron_spec") }), 400, codeInvalidRequest, "cron_spec"},
			{"spec not a string", spec(5), 400, codeInvalidRequest, "cron_spec"},
			{"long spec", spec(strings.Repeat("0,", 150) + "0 * * * *"), 400, codeInvalidRequest, "cron_spec"},
			{"unknown zone", body(func(m map[string]any) { m["timezone"] = "Mars/Olympus" }), 400, codeInvalidRequest, "timezone"},
			{"empty zone", body(func(m map[string]any) { m["timezone"] = "" }), 400, codeInvalidRequest, "timezone"},
			{"Local zone", body(func(m map[string]any) { m["timezone"] = "Local" }), 400, codeInvalidRequest, "timezone"},
			{"abbreviation as zone", body(func(m map[string]any) { m["timezone"] = "CET" }), 400, codeInvalidRequest, "timezone"},
			{"path as zone", body(func(m map[string]any) { m["timezone"] = "../../etc/passwd" }), 400, codeInvalidRequest, "timezone"},
			{"no task", body(func(m map[string]any) { delete(m, "task") }), 400, codeInvalidRequest, "task"},
			{"task null", task(nil), 400, codeInvalidRequest, "task"},
			{"task not an object", task("noop"), 400, codeInvalidRequest, "task"},
			{"no task kind", task(map[string]any{"queue": "q"}), 400, codeInvalidRequest, "task: "},
			{"bad task kind", task(map[string]any{"kind": "a b"}), 400, codeInvalidRequest, "task: "},
			{"bad queue", task(map[string]any{"kind": "noop", "queue": "a/b"}), 400, codeInvalidRequest, "task: "},
			{"max_attempts 0", task(map[string]any{"kind": "noop", "max_attempts": 0}), 400, codeInvalidRequest, "max_attempts"},
			{"unknown task field", task(map[string]any{"kind": "noop", "priority": 1}), 400, codeInvalidRequest, "priority"},
			{"NUL in payload", task(map[string]any{"kind": "noop", "payload": "\u0000"}), 400, codeInvalidRequest, "payload"},
			{"payload over 1 MiB", task(map[string]any{"kind": "noop", "payload": strings.Repeat("x", store.MaxPayloadBytes)}), 413, codePayloadTooLarge, "payload"},
			{"bad catch_up", body(func(m map[string]any) { m["catch_up"] = "sometimes" }), 400, codeInvalidRequest, "catch_up"},
			{"enabled not a bool", body(func(m map[string]any) { m["enabled"] = "yes" }), 400, codeInvalidRequest, "enabled"},
			{"unknown field", body(func(m map[string]any) { m["cron"] = "x" }), 400, codeInvalidRequest, "cron"},
			{"malformed JSON", `{"name": "s1"`, 400, codeInvalidJSON, "JSON"},
			{"empty body", ``, 400, codeInvalidJSON, "empty"},
			{"array", `[]`, 400, codeInvalidJSON, "object"},
		}
		for _, tc := range cases {
			e := c.do("POST", "/api/schedules", tc.body).wantError(t, tc.status, tc.code)
			if !strings.Contains(e.Message, tc.says) {
				t.Errorf("%s: message %q does not say %q", tc.name, e.Message, tc.says)
			}
		}
		req, _ := http.NewRequest("POST", c.url+"/api/schedules", strings.NewReader(`{"name":"s1","cron_spec":"@daily","task":{"kind":"noop"}}`))
		req.Header.Set("Content-Type", "text/plain")
		c.send(req).wantError(t, http.StatusUnsupportedMediaType, codeUnsupportedMediaType)

		if got := c.scheduleNames(); len(got) != 0 {
			t.Fatalf("rejected creates wrote schedules %v", got)
		}

		// What the rules allow: names with digits and dots, keywords in any case, names
		// of months and weekdays, a zone other than UTC.
		for i, s := range []string{"@DAILY", "@Weekly", "0 9 * JAN-mar Mon-FRI", "5/10 1-23/5 * * 5-7", "0 0 1,15 * *"} {
			c.createSchedule(map[string]any{"name": "ok." + string(rune('a'+i)), "cron_spec": s, "timezone": "Asia/Kolkata",
				"task": map[string]any{"kind": "noop"}})
		}
		c.createSchedule(map[string]any{"name": "9lives", "cron_spec": "@yearly", "task": map[string]any{"kind": "noop"}})

		// A wrong method on a schedule path is 405 with Allow.
		res := c.do("PUT", "/api/schedules/9lives", `{}`)
		res.wantError(t, http.StatusMethodNotAllowed, codeMethodNotAllowed)
		if got := res.header.Get("Allow"); got != "DELETE, GET, HEAD, PATCH" {
			t.Errorf("Allow %q", got)
		}
	})
}

// failingScheduleStore fails every ListSchedules and TriggerSchedule call with err.
type failingScheduleStore struct {
	store.Store
	err error
}

func (f failingScheduleStore) ListSchedules(ctx context.Context) ([]*store.Schedule, error) {
	return nil, f.err
}

func (f failingScheduleStore) TriggerSchedule(ctx context.Context, name string) (*store.Task, error) {
	return nil, f.err
}

func TestScheduleStoreErrors(t *testing.T) {
	st := memoryStore(t)
	c := newClient(t, Config{Store: failingScheduleStore{Store: st, err: errors.New("connection refused to db.internal:5432")}, Logger: discardLogger()})
	e := c.do("GET", "/api/schedules", nil).wantError(t, http.StatusInternalServerError, codeInternal)
	if strings.Contains(e.Message, "db.internal") {
		t.Errorf("internal error leaks its cause: %q", e.Message)
	}
	c.do("POST", "/api/schedules/x/trigger", nil).wantError(t, http.StatusInternalServerError, codeInternal)

	// A store error of its own kind keeps its meaning.
	c = newClient(t, Config{Store: failingScheduleStore{Store: st, err: store.ErrConflict}, Logger: discardLogger()})
	c.do("POST", "/api/schedules/x/trigger", nil).wantError(t, http.StatusConflict, codeConflict)
}

// TestScheduleSchemaMatchesAnswer holds the Schedule schema of openapi.json to the fields
// the server sends.
func TestScheduleSchemaMatchesAnswer(t *testing.T) {
	c := newClient(t, Config{Store: memoryStore(t)})
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	c.createSchedule(map[string]any{"name": "s", "cron_spec": "@daily", "task": map[string]any{"kind": "noop"}})
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(c.do("GET", "/api/schedules/s", nil).body, &raw); err != nil {
		t.Fatal(err)
	}
	var task map[string]json.RawMessage
	if err := json.Unmarshal(raw["task"], &task); err != nil {
		t.Fatal(err)
	}
	for schema, fields := range map[string]map[string]json.RawMessage{"Schedule": raw, "ScheduleTask": task} {
		s := doc.Components.Schemas[schema]
		var sent, documented []string
		for f := range fields {
			sent = append(sent, f)
		}
		for f := range s.Properties {
			documented = append(documented, f)
		}
		slices.Sort(sent)
		slices.Sort(documented)
		required := slices.Clone(s.Required)
		slices.Sort(required)
		if !slices.Equal(sent, documented) || !slices.Equal(sent, required) {
			t.Errorf("%s: the server sends %v; the schema documents %v and requires %v", schema, sent, documented, required)
		}
	}
	// The request schemas list what the decoder takes.
	for schema, want := range map[string][]string{
		"CreateSchedule":       {"catch_up", "cron_spec", "enabled", "flow", "kind", "name", "overlap", "task", "timezone"},
		"UpdateSchedule":       {"catch_up", "cron_spec", "enabled", "flow", "overlap", "task", "timezone"},
		"ScheduleTaskTemplate": {"kind", "max_attempts", "payload", "queue"},
		"Reschedule":           {"next_run_at"},
	} {
		var got []string
		for f := range doc.Components.Schemas[schema].Properties {
			got = append(got, f)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s documents %v, want %v", schema, got, want)
		}
	}
}

// sameJSON reports whether raw holds the same JSON value as want (the memory store keeps
// the bytes sent, PostgreSQL's jsonb its own spelling: "\u003c" comes back as "<").
func sameJSON(t *testing.T, raw json.RawMessage, want string) bool {
	t.Helper()
	var got, w any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(got, w)
}
