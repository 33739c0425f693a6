package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// TestScheduleOverlap: "overlap" on create, update and read (any case, allow by default,
// 400 naming the field and its values otherwise), and the skipped ticks on the schedule
// and on its runs page.
func TestScheduleOverlap(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		def := c.createSchedule(map[string]any{"name": "def", "cron_spec": "@daily", "task": map[string]any{"kind": "noop"}})
		if def.Overlap != store.OverlapAllow || def.SkippedTicks != 0 || def.CurrentRunID != nil || def.WaitingRunID != nil {
			t.Errorf("defaults: %+v", def)
		}
		raw := map[string]any{}
		if err := json.Unmarshal(c.do("GET", "/api/schedules/def", nil).body, &raw); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"overlap", "current_run_id", "waiting_run_id", "skipped_ticks", "last_skipped_at"} {
			if _, ok := raw[f]; !ok {
				t.Errorf("field %q missing from %v", f, raw)
			}
		}

		sk := c.createSchedule(map[string]any{"name": "sk", "cron_spec": "0 0 1 1 *", "overlap": "SKIP",
			"task": map[string]any{"kind": "noop", "queue": "sk"}})
		if sk.Overlap != store.OverlapSkip {
			t.Errorf("overlap SKIP read as %q", sk.Overlap)
		}
		for _, body := range []string{
			`{"name": "bad", "cron_spec": "@daily", "task": {"kind": "noop"}, "overlap": "queue"}`,
			`{"name": "bad", "cron_spec": "@daily", "task": {"kind": "noop"}, "overlap": 1}`,
			`{"name": "bad", "cron_spec": "@daily", "task": {"kind": "noop"}, "overlap": ""}`,
		} {
			e := c.do("POST", "/api/schedules", body).wantError(t, http.StatusBadRequest, codeInvalidRequest)
			if !strings.Contains(e.Message, "overlap") {
				t.Errorf("%s: message %q does not name overlap", body, e.Message)
			}
		}
		e := c.do("PATCH", "/api/schedules/def", `{"overlap": "cancel-other"}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		if !strings.Contains(e.Message, "buffer_one") {
			t.Errorf("message %q does not list the values", e.Message)
		}
		var upd scheduleJSON
		c.do("PATCH", "/api/schedules/def", map[string]any{"overlap": "buffer_one"}).want(t, http.StatusOK, &upd)
		if upd.Overlap != store.OverlapBufferOne || c.getSchedule("def").Overlap != store.OverlapBufferOne {
			t.Errorf("patched overlap: %+v", upd)
		}

		// Two ticks of sk while its first run waits: the second is skipped, and both the
		// schedule and its runs page show it.
		base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
		for i := range 2 {
			c.do("POST", "/api/schedules/sk/reschedule", map[string]any{"next_run_at": base.Add(time.Duration(i) * time.Second).Format(time.RFC3339)}).
				want(t, http.StatusOK, nil)
			if _, err := st.ClaimDueSchedules(t.Context(), store.ClaimSchedulesParams{Limit: 10}); err != nil {
				t.Fatal(err)
			}
		}
		got := c.getSchedule("sk")
		if got.SkippedTicks != 1 || got.LastSkippedAt == nil || got.CurrentRunID == nil {
			t.Errorf("after a skipped tick: %+v", got)
		}
		var runs scheduleRunsJSON
		c.do("GET", "/api/schedules/sk/runs", nil).want(t, http.StatusOK, &runs)
		if len(runs.Tasks) != 1 || runs.SkippedTicks == nil || *runs.SkippedTicks != 1 || runs.LastSkippedAt == nil ||
			runs.Tasks[0].ID != *got.CurrentRunID {
			t.Errorf("runs page: %d runs, skipped %v at %v", len(runs.Tasks), runs.SkippedTicks, runs.LastSkippedAt)
		}
		// A deleted schedule's runs stay listable, without counts.
		c.do("DELETE", "/api/schedules/sk", nil).want(t, http.StatusNoContent, nil)
		raw = map[string]any{}
		if err := json.Unmarshal(c.do("GET", "/api/schedules/sk/runs", nil).body, &raw); err != nil {
			t.Fatal(err)
		}
		if _, ok := raw["skipped_ticks"]; ok {
			t.Errorf("runs of a deleted schedule carry skipped_ticks: %v", raw)
		}
	})
}
