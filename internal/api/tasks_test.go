package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

func TestCreateAndGetTask(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		before := time.Now()
		res := c.do("POST", "/api/tasks", map[string]any{
			"kind": "email.send", "queue": "mail", "payload": map[string]any{"to": "a@b.c", "html": "<b>&</b>"},
			"max_attempts": 3, "priority": 7, "timeout_seconds": 60,
		})
		var task taskJSON
		res.want(t, http.StatusCreated, &task)
		if got, want := res.header.Get("Location"), "/api/tasks/"+task.ID.String(); got != want {
			t.Errorf("Location %q, want %q", got, want)
		}
		if task.Kind != "email.send" || task.Queue != "mail" || task.Status != store.StatusPending ||
			task.MaxAttempts != 3 || task.Priority != 7 || task.TimeoutSeconds != 60 || task.AttemptCount != 0 {
			t.Errorf("task = %+v", task)
		}
		var payload map[string]string
		if err := json.Unmarshal(task.Payload, &payload); err != nil || payload["to"] != "a@b.c" || payload["html"] != "<b>&</b>" || len(payload) != 2 {
			t.Errorf("payload %s", task.Payload)
		}
		if task.IdempotencyKey != nil || task.WorkerID != nil || task.LastError != nil || task.LeaseToken != nil ||
			task.LeaseExpiresAt != nil || task.CompletedAt != nil {
			t.Errorf("absent fields must be null: %+v", task)
		}
		within(t, task.ScheduledFor, before, 5*time.Second)
		if task.ScheduledFor.Location() != time.UTC {
			t.Errorf("scheduled_for %s is not UTC", task.ScheduledFor)
		}

		// Raw JSON: every documented field is present, times in UTC ("Z"), nulls explicit.
		raw := map[string]any{}
		if err := json.Unmarshal(c.do("GET", "/api/tasks/"+task.ID.String(), nil).body, &raw); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"id", "queue", "kind", "payload", "status", "priority", "scheduled_for",
			"attempt_count", "max_attempts", "idempotency_key", "timeout_seconds", "worker_id",
			"lease_expires_at", "cancel_requested_at", "enqueued_at", "processing_started_at",
			"completed_at", "last_error", "created_at", "updated_at"} {
			if _, ok := raw[f]; !ok {
				t.Errorf("field %q missing from %v", f, raw)
			}
		}
		if _, ok := raw["lease_token"]; ok {
			t.Error("lease_token shown outside a claim answer")
		}
		if s, _ := raw["created_at"].(string); !strings.HasSuffix(s, "Z") {
			t.Errorf("created_at %q is not RFC 3339 UTC", s)
		}

		// Defaults.
		d := c.createTask(map[string]any{"kind": "noop"})
		if d.Queue != "default" || d.MaxAttempts != store.DefaultMaxAttempts || string(d.Payload) != "{}" {
			t.Errorf("defaults: %+v", d)
		}
		n := c.createTask(map[string]any{"kind": "noop", "payload": nil})
		if string(n.Payload) != "{}" {
			t.Errorf("null payload stored as %s, want {}", n.Payload)
		}
		s := c.createTask(map[string]any{"kind": "noop", "payload": "just a string"})
		if string(s.Payload) != `"just a string"` {
			t.Errorf("string payload stored as %s", s.Payload)
		}

		// Scheduling.
		at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		sch := c.createTask(map[string]any{"kind": "noop", "scheduled_for": at.In(time.FixedZone("x", 3600)).Format(time.RFC3339)})
		if !sch.ScheduledFor.Equal(at) {
			t.Errorf("scheduled_for %s, want %s", sch.ScheduledFor, at)
		}
		del := c.createTask(map[string]any{"kind": "noop", "delay_seconds": 90.5})
		within(t, del.ScheduledFor, time.Now().Add(90500*time.Millisecond), 5*time.Second)

		// Get of an unknown and of a malformed id.
		c.do("GET", "/api/tasks/0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f", nil).wantError(t, http.StatusNotFound, codeNotFound)
		c.do("GET", "/api/tasks/not-a-uuid", nil).wantError(t, http.StatusNotFound, codeNotFound)
	})
}

func TestIdempotency(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		body := map[string]any{"kind": "noop", "idempotency_key": "order-42"}
		var first, second taskJSON
		c.do("POST", "/api/tasks", body).want(t, http.StatusCreated, &first)
		c.do("POST", "/api/tasks", body).want(t, http.StatusOK, &second)
		if first.ID != second.ID {
			t.Fatalf("idempotent create returned %s, then %s", first.ID, second.ID)
		}
		if first.IdempotencyKey == nil || *first.IdempotencyKey != "order-42" {
			t.Errorf("idempotency_key %v", first.IdempotencyKey)
		}
		// A canceled task frees its key.
		c.do("POST", "/api/tasks/"+first.ID.String()+"/cancel", nil).want(t, http.StatusOK, nil)
		var third taskJSON
		c.do("POST", "/api/tasks", body).want(t, http.StatusCreated, &third)
		if third.ID == first.ID {
			t.Fatal("a canceled task's key still named it")
		}
	})
}

func TestCreateValidation(t *testing.T) {
	st := memoryStore(t)
	c := newClient(t, Config{Store: st})
	big := `{"kind":"noop","payload":"` + strings.Repeat("x", store.MaxPayloadBytes) + `"}`
	cases := []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"malformed JSON", `{"kind": "noop"`, 400, codeInvalidJSON},
		{"syntax error", `{"kind": noop}`, 400, codeInvalidJSON},
		{"trailing data", `{"kind": "noop"} {"kind": "noop"}`, 400, codeInvalidJSON},
		{"trailing garbage", `{"kind": "noop"}x`, 400, codeInvalidJSON},
		{"empty body", ``, 400, codeInvalidJSON},
		{"array", `[{"kind": "noop"}]`, 400, codeInvalidJSON},
		{"null", `null`, 400, codeInvalidJSON},
		{"payload not JSON", `{"kind": "noop", "payload": {"a": }}`, 400, codeInvalidJSON},
		{"unknown field", `{"kind": "noop", "kindd": "x"}`, 400, codeInvalidRequest},
		{"wrong type", `{"kind": 5}`, 400, codeInvalidRequest},
		{"fractional max_attempts", `{"kind": "noop", "max_attempts": 1.5}`, 400, codeInvalidRequest},
		{"no kind", `{"queue": "q"}`, 400, codeInvalidRequest},
		{"empty kind", `{"kind": ""}`, 400, codeInvalidRequest},
		{"malformed kind", `{"kind": "has space"}`, 400, codeInvalidRequest},
		{"kind starting with digit", `{"kind": "1noop"}`, 400, codeInvalidRequest},
		{"long kind", `{"kind": "` + strings.Repeat("k", 129) + `"}`, 400, codeInvalidRequest},
		{"malformed queue", `{"kind": "noop", "queue": "a/b"}`, 400, codeInvalidRequest},
		{"max_attempts 0", `{"kind": "noop", "max_attempts": 0}`, 400, codeInvalidRequest},
		{"max_attempts negative", `{"kind": "noop", "max_attempts": -1}`, 400, codeInvalidRequest},
		{"max_attempts too large", `{"kind": "noop", "max_attempts": 1001}`, 400, codeInvalidRequest},
		{"negative delay", `{"kind": "noop", "delay_seconds": -1}`, 400, codeInvalidRequest},
		{"huge delay", `{"kind": "noop", "delay_seconds": 1e300}`, 400, codeInvalidRequest},
		{"delay and scheduled_for", `{"kind": "noop", "delay_seconds": 5, "scheduled_for": "2030-01-01T00:00:00Z"}`, 400, codeInvalidRequest},
		{"bad scheduled_for", `{"kind": "noop", "scheduled_for": "tomorrow"}`, 400, codeInvalidRequest},
		{"zero scheduled_for", `{"kind": "noop", "scheduled_for": "0001-01-01T00:00:00Z"}`, 400, codeInvalidRequest},
		{"scheduled_for before 1970", `{"kind": "noop", "scheduled_for": "1969-12-31T23:59:59Z"}`, 400, codeInvalidRequest},
		{"priority out of range", `{"kind": "noop", "priority": 1001}`, 400, codeInvalidRequest},
		{"negative timeout", `{"kind": "noop", "timeout_seconds": -1}`, 400, codeInvalidRequest},
		{"long idempotency key", `{"kind": "noop", "idempotency_key": "` + strings.Repeat("k", 513) + `"}`, 400, codeInvalidRequest},
		{"NUL in idempotency key", `{"kind": "noop", "idempotency_key": "a\u0000b"}`, 400, codeInvalidRequest},
		{"NUL in payload", `{"kind": "noop", "payload": {"a": "\u0000"}}`, 400, codeInvalidRequest},
		{"lone surrogate in payload", `{"kind": "noop", "payload": ["\ud800"]}`, 400, codeInvalidRequest},
		{"number beyond numeric", `{"kind": "noop", "payload": 1e1000000}`, 400, codeInvalidRequest},
		{"payload over 1 MiB", big, 413, codePayloadTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.do("POST", "/api/tasks", tc.body).wantError(t, tc.status, tc.code)
		})
	}
	var list taskListJSON
	c.do("GET", "/api/tasks", nil).want(t, http.StatusOK, &list)
	if len(list.Tasks) != 0 {
		t.Fatalf("rejected creates wrote %d tasks", len(list.Tasks))
	}
}

func TestBodyLimitsAndMediaType(t *testing.T) {
	c := newClient(t, Config{Store: memoryStore(t), MaxBodyBytes: 1024, MaxBatchBodyBytes: 4096})
	huge := `{"kind":"noop","payload":"` + strings.Repeat("x", 2000) + `"}`
	c.do("POST", "/api/tasks", huge).wantError(t, http.StatusRequestEntityTooLarge, codePayloadTooLarge)

	// Chunked (no Content-Length): the limit holds while reading.
	req, _ := http.NewRequest("POST", c.url+"/api/tasks", struct{ *strings.Reader }{strings.NewReader(huge)})
	req.Header.Set("Content-Type", "application/json")
	c.send(req).wantError(t, http.StatusRequestEntityTooLarge, codePayloadTooLarge)

	batch := `{"tasks":[` + strings.Repeat(`{"kind":"noop","payload":"`+strings.Repeat("y", 500)+`"},`, 10) + `{"kind":"noop"}]}`
	c.do("POST", "/api/tasks/batch", batch).wantError(t, http.StatusRequestEntityTooLarge, codePayloadTooLarge)

	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/jsonx"} {
		req, _ := http.NewRequest("POST", c.url+"/api/tasks", strings.NewReader(`{"kind":"noop"}`))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		c.send(req).wantError(t, http.StatusUnsupportedMediaType, codeUnsupportedMediaType)
	}
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON"} {
		req, _ := http.NewRequest("POST", c.url+"/api/tasks", strings.NewReader(`{"kind":"noop"}`))
		req.Header.Set("Content-Type", ct)
		c.send(req).want(t, http.StatusCreated, nil)
	}
}

func TestBatch(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		var out tasksJSON
		c.do("POST", "/api/tasks/batch", map[string]any{"tasks": []any{
			map[string]any{"kind": "a"},
			map[string]any{"kind": "b", "queue": "q2", "delay_seconds": 60},
			map[string]any{"kind": "c", "idempotency_key": "k"},
			map[string]any{"kind": "c", "idempotency_key": "k"},
		}}).want(t, http.StatusCreated, &out)
		if len(out.Tasks) != 4 || out.Tasks[0].Kind != "a" || out.Tasks[1].Queue != "q2" || out.Tasks[2].ID != out.Tasks[3].ID {
			t.Fatalf("batch answer %+v", out.Tasks)
		}

		// One bad entry: 400 naming it, and nothing written.
		e := c.do("POST", "/api/tasks/batch", map[string]any{"tasks": []any{
			map[string]any{"kind": "ok1"},
			map[string]any{"kind": "bad kind"},
			map[string]any{"kind": "ok2"},
		}}).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		if !strings.Contains(e.Message, "tasks[1]") {
			t.Errorf("message %q does not name the entry", e.Message)
		}
		c.do("POST", "/api/tasks/batch", `{"tasks":[{"kind":"ok1"},{"kind":"x","bogus":1}]}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("POST", "/api/tasks/batch", `{"tasks":[{"kind":"ok1"},{"kind":"x","max_attempts":0}]}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		var list taskListJSON
		c.do("GET", "/api/tasks?limit=1000", nil).want(t, http.StatusOK, &list)
		if len(list.Tasks) != 3 {
			t.Fatalf("%d tasks after the failed batches, want the first batch's 3", len(list.Tasks))
		}

		c.do("POST", "/api/tasks/batch", `{"tasks":[]}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("POST", "/api/tasks/batch", `{}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		tooMany := `{"tasks":[` + strings.TrimSuffix(strings.Repeat(`{"kind":"n"},`, maxBatchTasks+1), ",") + `]}`
		c.do("POST", "/api/tasks/batch", tooMany).wantError(t, http.StatusRequestEntityTooLarge, codePayloadTooLarge)
	})
}

func TestListTasks(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		var ids []string
		for i := range 7 {
			q := "q1"
			if i%2 == 1 {
				q = "q2"
			}
			ids = append(ids, c.createTask(map[string]any{"kind": fmt.Sprintf("k%d", i%3), "queue": q}).ID.String())
		}
		c.do("POST", "/api/tasks/"+ids[0]+"/cancel", nil).want(t, http.StatusOK, nil)

		list := func(query string) ([]string, string) {
			t.Helper()
			var out taskListJSON
			c.do("GET", "/api/tasks"+query, nil).want(t, http.StatusOK, &out)
			var got []string
			for _, task := range out.Tasks {
				got = append(got, task.ID.String())
			}
			return got, out.NextCursor
		}
		eq := func(got, want []string) {
			t.Helper()
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
		all, next := list("")
		eq(all, []string{ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}) // newest first
		if next != "" {
			t.Fatalf("next_cursor %q on the only page", next)
		}
		got, _ := list("?queue=q2")
		eq(got, []string{ids[5], ids[3], ids[1]})
		got, _ = list("?kind=k0")
		eq(got, []string{ids[6], ids[3], ids[0]})
		got, _ = list("?status=CANCELED")
		eq(got, []string{ids[0]})
		got, _ = list("?status=canceled,succeeded")
		eq(got, []string{ids[0]})
		got, _ = list("?status=CANCELED&status=PENDING&queue=q1&kind=k0")
		eq(got, []string{ids[6], ids[0]})

		// Paging with the cursor walks every task once.
		var paged []string
		cursor := ""
		for range 10 {
			page, next := list("?limit=3&cursor=" + cursor)
			paged = append(paged, page...)
			if next == "" {
				break
			}
			cursor = next
		}
		eq(paged, all)

		for _, bad := range []string{"?status=BOGUS", "?limit=0", "?limit=1001", "?limit=x", "?cursor=%21%21", "?stauts=PENDING", "?queue=a&queue=b"} {
			c.do("GET", "/api/tasks"+bad, nil).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		}
	})
}

func TestCancelReplayAttemptsStats(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		task := c.createTask(map[string]any{"kind": "noop", "queue": "s"})
		id := task.ID.String()

		// Replaying a PENDING task is an illegal transition.
		c.do("POST", "/api/tasks/"+id+"/replay", nil).wantError(t, http.StatusConflict, codeIllegalTransition)

		var canceled taskJSON
		c.do("POST", "/api/tasks/"+id+"/cancel", nil).want(t, http.StatusOK, &canceled)
		if canceled.Status != store.StatusCanceled || canceled.CompletedAt == nil {
			t.Fatalf("canceled task %+v", canceled)
		}
		c.do("POST", "/api/tasks/"+id+"/cancel", nil).want(t, http.StatusOK, nil) // idempotent
		var replayed taskJSON
		c.do("POST", "/api/tasks/"+id+"/replay", nil).want(t, http.StatusOK, &replayed)
		if replayed.Status != store.StatusPending {
			t.Fatalf("replayed task %+v", replayed)
		}

		// Cancel of a running task is a request.
		claimed := c.claimOne("s")
		var req taskJSON
		c.do("POST", "/api/tasks/"+id+"/cancel", nil).want(t, http.StatusOK, &req)
		if req.Status != store.StatusProcessing || req.CancelRequestedAt == nil {
			t.Fatalf("cancel of a running task: %+v", req)
		}
		c.do("POST", "/api/tasks/"+id+"/complete", map[string]any{"lease_token": claimed.LeaseToken}).want(t, http.StatusOK, nil)
		c.do("POST", "/api/tasks/"+id+"/cancel", nil).wantError(t, http.StatusConflict, codeIllegalTransition)

		var attempts attemptsJSON
		c.do("GET", "/api/tasks/"+id+"/attempts", nil).want(t, http.StatusOK, &attempts)
		if len(attempts.Attempts) != 2 {
			t.Fatalf("attempts %+v", attempts)
		}
		if a := attempts.Attempts[0]; a.Outcome == nil || *a.Outcome != "REPLAYED" || a.WorkerID != nil {
			t.Errorf("replay event %+v", a)
		}
		if a := attempts.Attempts[1]; a.Outcome == nil || *a.Outcome != "SUCCEEDED" || a.WorkerID == nil || *a.WorkerID != "w1" || a.FinishedAt == nil {
			t.Errorf("attempt %+v", a)
		}
		c.do("GET", "/api/tasks/0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f/attempts", nil).wantError(t, http.StatusNotFound, codeNotFound)
		c.do("POST", "/api/tasks/0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f/cancel", nil).wantError(t, http.StatusNotFound, codeNotFound)
		c.do("POST", "/api/tasks/0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f/replay", nil).wantError(t, http.StatusNotFound, codeNotFound)

		c.createTask(map[string]any{"kind": "noop", "queue": "s"})
		c.createTask(map[string]any{"kind": "noop", "queue": "t"})
		var stats statsJSON
		c.do("GET", "/api/stats", nil).want(t, http.StatusOK, &stats)
		if stats.Totals[store.StatusSucceeded] != 1 || stats.Totals[store.StatusPending] != 2 || len(stats.Totals) != len(store.AllStatuses) {
			t.Fatalf("totals %v", stats.Totals)
		}
		byQueue := map[string]queueStatsJSON{}
		for _, q := range stats.Queues {
			byQueue[q.Queue] = q
		}
		if s := byQueue["s"]; s.Counts[store.StatusPending] != 1 || s.Counts[store.StatusSucceeded] != 1 || s.OldestDueAt == nil || len(s.Counts) != len(store.AllStatuses) {
			t.Fatalf("queue s: %+v", s)
		}
		c.do("GET", "/api/stats?x=1", nil).wantError(t, http.StatusBadRequest, codeInvalidRequest)
	})
}

func TestRoutingErrors(t *testing.T) {
	c := newClient(t, Config{Store: memoryStore(t)})
	res := c.do("DELETE", "/api/tasks", nil)
	res.wantError(t, http.StatusMethodNotAllowed, codeMethodNotAllowed)
	if got := res.header.Get("Allow"); got != "GET, HEAD, POST" {
		t.Errorf("Allow %q", got)
	}
	res = c.do("PUT", "/api/tasks/0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f/complete", nil)
	res.wantError(t, http.StatusMethodNotAllowed, codeMethodNotAllowed)
	if got := res.header.Get("Allow"); got != "POST" {
		t.Errorf("Allow %q", got)
	}
	res = c.do("POST", "/healthz", nil)
	res.wantError(t, http.StatusMethodNotAllowed, codeMethodNotAllowed)
	c.do("GET", "/api/nope", nil).wantError(t, http.StatusNotFound, codeNotFound)
	c.do("GET", "/nope", nil).wantError(t, http.StatusNotFound, codeNotFound)
	c.do("GET", "/api/tasks/", nil).wantError(t, http.StatusNotFound, codeNotFound)
}

func TestInternalErrorsAreNotLeaked(t *testing.T) {
	secret := errors.New("dial tcp 10.1.2.3:5432: password authentication failed for user rota")
	c := newClient(t, Config{Store: failingStore{Store: memoryStore(t), err: secret}, Logger: discardLogger()})
	for _, path := range []string{"/api/tasks/0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f", "/api/stats"} {
		e := c.do("GET", path, nil).wantError(t, http.StatusInternalServerError, codeInternal)
		if strings.Contains(e.Message, "10.1.2.3") || strings.Contains(e.Message, "password") {
			t.Fatalf("internal detail leaked: %q", e.Message)
		}
	}
	c.do("GET", "/readyz", nil).wantError(t, http.StatusServiceUnavailable, codeUnavailable)
}

func TestHealthAndMetrics(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		var h statusJSON
		c.do("GET", "/healthz", nil).want(t, http.StatusOK, &h)
		if h.Status != "ok" {
			t.Errorf("healthz %+v", h)
		}
		c.do("GET", "/readyz", nil).want(t, http.StatusOK, &h)
		if h.Status != "ready" {
			t.Errorf("readyz %+v", h)
		}
		res := c.do("GET", "/metrics", nil)
		if res.status != http.StatusOK || !strings.Contains(string(res.body), "go_goroutines") {
			t.Fatalf("metrics: %d %.200s", res.status, res.body)
		}
	})
}

func TestConfigValidation(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no store":             {},
		"metrics auth, no key": {Store: memoryStore(t), MetricsAuth: true},
		"bad backoff":          {Store: memoryStore(t), BackoffBase: time.Hour, BackoffMax: time.Second},
		"negative body limit":  {Store: memoryStore(t), MaxBodyBytes: -1},
		"token with a space":   {Store: memoryStore(t), Token: "s3 cret"},
		"token with a NUL":     {Store: memoryStore(t), Token: "s3\x00cret"},
		"whitespace token":     {Store: memoryStore(t), Token: " \n"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
}

// TestStorablePayloads: payloads at PostgreSQL's jsonb limits are accepted or rejected
// alike by both stores, and never reach the database to fail there as a 500.
func TestStorablePayloads(t *testing.T) {
	cases := []struct {
		payload string
		ok      bool
	}{
		{`"\u0000"`, false},
		{`{"\u0000": 1}`, false},
		{`"\\u0000"`, true}, // an escaped backslash, then the text u0000
		{`"\ud800"`, false},
		{`"\udc00"`, false},
		{`"\ud800\u0041"`, false},
		{`"\ud83d\ude00"`, true},
		{`"\uD83D\uDE00"`, true},
		{`"\u0001\ufffe"`, true},
		{`1e131071`, true},
		{`1e131072`, false},
		{`0.1e131072`, true},
		{`0.1e131073`, false},
		{`1e-16383`, true},
		{`1e-16384`, false},
		{`0.5e-16383`, false},
		{`0e999999`, true},
		{`0e-16384`, false},
		{`-1e99999999999999999999`, false},
		{`[1.5, -0, 0.0, 1E+2, 12345678901234567890123456789]`, true},
	}
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		for _, tc := range cases {
			res := c.do("POST", "/api/tasks", `{"kind":"noop","payload":`+tc.payload+`}`)
			switch {
			case tc.ok && res.status != http.StatusCreated:
				t.Errorf("payload %.40s: status %d (%s), want 201", tc.payload, res.status, res.body)
			case !tc.ok && res.status != http.StatusBadRequest:
				t.Errorf("payload %.40s: status %d (%.200s), want 400", tc.payload, res.status, res.body)
			}
		}
	})
}
