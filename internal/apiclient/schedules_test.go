package apiclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/api"
	"github.com/rotaqueue/rota/internal/apiclient"
	"github.com/rotaqueue/rota/internal/store/memory"
)

const scheduleJSON = `{"name":"nightly","kind":"task","cron_spec":"0 3 * * *","timezone":"Europe/Berlin",
"task":{"kind":"report","queue":"default","payload":{"a":1},"max_attempts":25},"enabled":true,"catch_up":"one",
"next_run_at":"2030-01-02T02:00:00Z","last_run_at":null,"last_enqueued_at":null,
"created_at":"2030-01-01T00:00:00Z","updated_at":"2030-01-01T00:00:00Z","future_field":1}`

// TestScheduleRoutes pins each schedule method's request: method, path, query, body.
func TestScheduleRoutes(t *testing.T) {
	ctx := context.Background()
	checkSchedule := func(s *apiclient.Schedule) {
		t.Helper()
		if s.Name != "nightly" || s.Task.Kind != "report" || string(s.Task.Payload) != `{"a":1}` || s.LastRunAt != nil ||
			!s.NextRunAt.Equal(time.Date(2030, 1, 2, 2, 0, 0, 0, time.UTC)) || !strings.Contains(string(s.Raw()), "future_field") {
			t.Errorf("decoded schedule: %+v", s)
		}
	}
	spec, tz, catchUp, off := "@daily", "UTC", "all", false
	cases := []struct {
		name        string
		status      int
		answer      string
		call        func(c *apiclient.Client) error
		method      string
		path, query string
		body        map[string]any
	}{
		{"list", 200, `{"schedules":[` + scheduleJSON + `]}`, func(c *apiclient.Client) error {
			l, err := c.ListSchedules(ctx)
			if err == nil {
				if len(l) != 1 {
					t.Fatalf("list: %+v", l)
				}
				checkSchedule(&l[0])
			}
			return err
		}, "GET", "/api/schedules", "", nil},
		{"empty list", 200, `{"schedules":[]}`, func(c *apiclient.Client) error {
			l, err := c.ListSchedules(ctx)
			if err == nil && (l == nil || len(l) != 0) {
				t.Errorf("empty list: %#v", l)
			}
			return err
		}, "GET", "/api/schedules", "", nil},
		{"create with defaults left out", 201, scheduleJSON, func(c *apiclient.Client) error {
			s, err := c.CreateSchedule(ctx, apiclient.CreateSchedule{Name: "nightly", CronSpec: "0 3 * * *",
				Task: apiclient.ScheduleTask{Kind: "report"}})
			if err == nil {
				checkSchedule(s)
			}
			return err
		}, "POST", "/api/schedules", "", map[string]any{"name": "nightly", "cron_spec": "0 3 * * *", "task": map[string]any{"kind": "report"}}},
		{"create with every field", 201, scheduleJSON, func(c *apiclient.Client) error {
			_, err := c.CreateSchedule(ctx, apiclient.CreateSchedule{Name: "nightly", CronSpec: "0 3 * * *", Timezone: "Europe/Berlin",
				Task:    apiclient.ScheduleTask{Kind: "report", Queue: "q", Payload: json.RawMessage(`{"a":1}`), MaxAttempts: 3},
				Enabled: &off, CatchUp: "skip"})
			return err
		}, "POST", "/api/schedules", "", map[string]any{"name": "nightly", "cron_spec": "0 3 * * *", "timezone": "Europe/Berlin",
			"task":    map[string]any{"kind": "report", "queue": "q", "payload": map[string]any{"a": 1.0}, "max_attempts": 3.0},
			"enabled": false, "catch_up": "skip"}},
		{"get", 200, scheduleJSON, func(c *apiclient.Client) error {
			s, err := c.GetSchedule(ctx, "nightly")
			if err == nil {
				checkSchedule(s)
			}
			return err
		}, "GET", "/api/schedules/nightly", "", nil},
		{"get escapes the name", 200, scheduleJSON, func(c *apiclient.Client) error {
			_, err := c.GetSchedule(ctx, "../tasks")
			return err
		}, "GET", "/api/schedules/..%2Ftasks", "", nil},
		{"update sends only what is set", 200, scheduleJSON, func(c *apiclient.Client) error {
			_, err := c.UpdateSchedule(ctx, "nightly", apiclient.UpdateSchedule{CronSpec: &spec, Timezone: &tz,
				Task: &apiclient.ScheduleTask{Kind: "k"}, Enabled: &off, CatchUp: &catchUp})
			return err
		}, "PATCH", "/api/schedules/nightly", "", map[string]any{"cron_spec": "@daily", "timezone": "UTC",
			"task": map[string]any{"kind": "k"}, "enabled": false, "catch_up": "all"}},
		{"update one field", 200, scheduleJSON, func(c *apiclient.Client) error {
			_, err := c.UpdateSchedule(ctx, "nightly", apiclient.UpdateSchedule{Enabled: &off})
			return err
		}, "PATCH", "/api/schedules/nightly", "", map[string]any{"enabled": false}},
		{"delete", 204, ``, func(c *apiclient.Client) error {
			return c.DeleteSchedule(ctx, "nightly")
		}, "DELETE", "/api/schedules/nightly", "", nil},
		{"pause", 200, scheduleJSON, func(c *apiclient.Client) error {
			_, err := c.PauseSchedule(ctx, "nightly")
			return err
		}, "POST", "/api/schedules/nightly/pause", "", nil},
		{"resume", 200, scheduleJSON, func(c *apiclient.Client) error {
			_, err := c.ResumeSchedule(ctx, "nightly")
			return err
		}, "POST", "/api/schedules/nightly/resume", "", nil},
		{"reschedule sends UTC", 200, scheduleJSON, func(c *apiclient.Client) error {
			_, err := c.RescheduleSchedule(ctx, "nightly", time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)))
			return err
		}, "POST", "/api/schedules/nightly/reschedule", "", map[string]any{"next_run_at": "2030-01-02T02:04:05Z"}},
		{"trigger", 201, taskJSON, func(c *apiclient.Client) error {
			tk, err := c.TriggerSchedule(ctx, "nightly")
			if err == nil && tk.ID != taskID {
				t.Errorf("trigger: %+v", tk)
			}
			return err
		}, "POST", "/api/schedules/nightly/trigger", "", nil},
		{"runs", 200, `{"tasks":[` + taskJSON + `],"next_cursor":"n"}`, func(c *apiclient.Client) error {
			p, err := c.ListScheduleRuns(ctx, "nightly", apiclient.ListScheduleRunsParams{Limit: 5, Cursor: "c"})
			if err == nil && (len(p.Tasks) != 1 || p.NextCursor != "n") {
				t.Errorf("runs: %+v", p)
			}
			return err
		}, "GET", "/api/schedules/nightly/runs", "cursor=c&limit=5", nil},
		{"runs without paging", 200, `{"tasks":[],"next_cursor":""}`, func(c *apiclient.Client) error {
			p, err := c.ListScheduleRuns(ctx, "nightly", apiclient.ListScheduleRunsParams{})
			if err == nil && p.Tasks == nil {
				t.Errorf("runs: %+v", p)
			}
			return err
		}, "GET", "/api/schedules/nightly/runs", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, rec := fake(t, tc.status, tc.answer)
			if err := tc.call(apiclient.New(srv.URL, "", nil)); err != nil {
				t.Fatal(err)
			}
			if rec.method != tc.method || rec.path != tc.path || rec.query != tc.query {
				t.Errorf("sent %s %s?%s, want %s %s?%s", rec.method, rec.path, rec.query, tc.method, tc.path, tc.query)
			}
			if tc.body != nil {
				assertJSONEqual(t, rec.body, tc.body)
			} else if rec.body != nil {
				t.Errorf("unexpected body %v", rec.body)
			}
		})
	}
}

// TestSchedulesRealServer runs every schedule method against the real API on the
// in-memory store.
func TestSchedulesRealServer(t *testing.T) {
	st := memory.New()
	defer st.Close()
	srv, err := api.New(api.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx := context.Background()
	c := apiclient.New(hs.URL, "", nil)

	s, err := c.CreateSchedule(ctx, apiclient.CreateSchedule{Name: "hourly", CronSpec: "15 * * * *", Timezone: "Asia/Kolkata",
		Task: apiclient.ScheduleTask{Kind: "noop", Queue: "cron", Payload: json.RawMessage(`{"x":1}`), MaxAttempts: 2}, CatchUp: "skip"})
	if err != nil {
		t.Fatal(err)
	}
	// Kolkata is UTC+5:30, so :15 local is :45 UTC.
	if s.Name != "hourly" || s.Kind != "task" || s.Timezone != "Asia/Kolkata" || !s.Enabled || s.CatchUp != "skip" ||
		s.Task.Queue != "cron" || s.Task.MaxAttempts != 2 || s.NextRunAt.Minute() != 45 || !s.NextRunAt.After(time.Now()) {
		t.Errorf("created: %+v", s)
	}
	_, err = c.CreateSchedule(ctx, apiclient.CreateSchedule{Name: "hourly", CronSpec: "@daily", Task: apiclient.ScheduleTask{Kind: "noop"}})
	var apiErr *apiclient.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 409 || apiErr.Code != "conflict" {
		t.Errorf("duplicate: %v", err)
	}
	_, err = c.CreateSchedule(ctx, apiclient.CreateSchedule{Name: "bad", CronSpec: "61 * * * *", Task: apiclient.ScheduleTask{Kind: "noop"}})
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || !strings.Contains(apiErr.Message, "minute") {
		t.Errorf("invalid spec: %v", err)
	}

	off := false
	if _, err := c.CreateSchedule(ctx, apiclient.CreateSchedule{Name: "daily", CronSpec: "@daily", Enabled: &off,
		Task: apiclient.ScheduleTask{Kind: "noop"}}); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListSchedules(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "daily" || list[0].Enabled || list[1].Name != "hourly" {
		t.Errorf("list: %v %+v", err, list)
	}
	if got, err := c.GetSchedule(ctx, "hourly"); err != nil || !got.NextRunAt.Equal(s.NextRunAt) || len(got.Raw()) == 0 {
		t.Errorf("get: %v %+v", err, got)
	}
	if _, err := c.GetSchedule(ctx, "nope"); !apiclient.IsNotFound(err) {
		t.Errorf("get unknown: %v", err)
	}

	spec := "0 0 * * *"
	u, err := c.UpdateSchedule(ctx, "hourly", apiclient.UpdateSchedule{CronSpec: &spec})
	if err != nil || u.CronSpec != spec || u.Task.Queue != "cron" {
		t.Errorf("update: %v %+v", err, u)
	}
	if p, err := c.PauseSchedule(ctx, "hourly"); err != nil || p.Enabled {
		t.Errorf("pause: %v %+v", err, p)
	}
	if r, err := c.ResumeSchedule(ctx, "hourly"); err != nil || !r.Enabled {
		t.Errorf("resume: %v %+v", err, r)
	}
	at := time.Date(2032, 1, 1, 0, 0, 0, 0, time.UTC)
	if r, err := c.RescheduleSchedule(ctx, "hourly", at); err != nil || !r.NextRunAt.Equal(at) {
		t.Errorf("reschedule: %v %+v", err, r)
	}
	run, err := c.TriggerSchedule(ctx, "hourly")
	if err != nil || run.Kind != "noop" || run.Queue != "cron" || run.MaxAttempts != 2 || string(run.Payload) != `{"x":1}` {
		t.Fatalf("trigger: %v %+v", err, run)
	}
	if _, err := c.TriggerSchedule(ctx, "hourly"); err != nil {
		t.Fatal(err)
	}
	page, err := c.ListScheduleRuns(ctx, "hourly", apiclient.ListScheduleRunsParams{Limit: 1})
	if err != nil || len(page.Tasks) != 1 || page.NextCursor == "" {
		t.Fatalf("runs page 1: %v %+v", err, page)
	}
	page, err = c.ListScheduleRuns(ctx, "hourly", apiclient.ListScheduleRunsParams{Limit: 1, Cursor: page.NextCursor})
	if err != nil || len(page.Tasks) != 1 || page.Tasks[0].ID != run.ID || page.NextCursor != "" {
		t.Errorf("runs page 2: %v %+v", err, page)
	}

	if err := c.DeleteSchedule(ctx, "hourly"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSchedule(ctx, "hourly"); !apiclient.IsNotFound(err) {
		t.Errorf("second delete: %v", err)
	}
	if _, err := c.GetTask(ctx, run.ID); err != nil {
		t.Errorf("the run must outlive its schedule: %v", err)
	}
}
