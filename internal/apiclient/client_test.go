package apiclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/apiclient"
)

// These tests pin the wire format against a fake handler that answers with the shapes of
// docs/api.md. realserver_test.go runs the client against the real API.

const taskJSON = `{"id":"0192f7a0-0000-7000-8000-000000000001","queue":"default","kind":"noop",
"payload":{"a":1},"status":"PENDING","priority":0,"scheduled_for":"2030-01-02T03:04:05Z",
"attempt_count":0,"max_attempts":25,"idempotency_key":null,"timeout_seconds":0,
"worker_id":null,"lease_expires_at":null,"cancel_requested_at":null,"enqueued_at":null,
"processing_started_at":null,"completed_at":null,"last_error":null,
"created_at":"2030-01-02T03:04:05Z","updated_at":"2030-01-02T03:04:05Z","future_field":"kept"}`

const taskID = "0192f7a0-0000-7000-8000-000000000001"

// recorded is one request the fake saw.
type recorded struct {
	method, path, query, auth, contentType string
	body                                   map[string]any
}

// fake answers every request with status and body, recording what it got.
func fake(t *testing.T, status int, body string) (*httptest.Server, *recorded) {
	t.Helper()
	rec := &recorded{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.method, rec.path, rec.query = r.Method, r.URL.EscapedPath(), r.URL.RawQuery
		rec.auth, rec.contentType = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		rec.body = nil
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			if err := json.Unmarshal(b, &rec.body); err != nil {
				t.Errorf("request body is not a JSON object: %s", b)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

func TestCreateTaskSendsDocumentedBody(t *testing.T) {
	srv, rec := fake(t, http.StatusCreated, taskJSON)
	c := apiclient.New(srv.URL+"/", "s3cret", nil)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	task, created, err := c.CreateTask(context.Background(), apiclient.CreateTask{
		Kind: "noop", Queue: "emails", Payload: json.RawMessage(`{"a":1}`), ScheduledFor: &at,
		MaxAttempts: 3, Priority: 7, IdempotencyKey: "k1", TimeoutSeconds: 9,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Error("201 must report created = true")
	}
	if rec.method != "POST" || rec.path != "/api/tasks" {
		t.Errorf("sent %s %s", rec.method, rec.path)
	}
	if rec.auth != "Bearer s3cret" || rec.contentType != "application/json" {
		t.Errorf("headers: auth %q, content type %q", rec.auth, rec.contentType)
	}
	want := map[string]any{"kind": "noop", "queue": "emails", "payload": map[string]any{"a": 1.0},
		"scheduled_for": "2030-01-02T03:04:05Z", "max_attempts": 3.0, "priority": 7.0,
		"idempotency_key": "k1", "timeout_seconds": 9.0}
	assertJSONEqual(t, rec.body, want)

	if task.ID != taskID || task.Status != "PENDING" || task.MaxAttempts != 25 ||
		!task.ScheduledFor.Equal(at) || task.IdempotencyKey != "" || task.LeaseExpiresAt != nil {
		t.Errorf("decoded task: %+v", task)
	}
	if !strings.Contains(string(task.Raw()), `"future_field":"kept"`) {
		t.Errorf("Raw must keep fields the client does not know: %s", task.Raw())
	}
}

func TestCreateTaskOmitsDefaultsAndReportsIdempotencyHit(t *testing.T) {
	srv, rec := fake(t, http.StatusOK, taskJSON)
	c := apiclient.New(srv.URL, "", nil)
	_, created, err := c.CreateTask(context.Background(), apiclient.CreateTask{Kind: "noop", DelaySeconds: 10})
	if err != nil {
		t.Fatal(err)
	}
	if created {
		t.Error("200 is an idempotency hit: created must be false")
	}
	assertJSONEqual(t, rec.body, map[string]any{"kind": "noop", "delay_seconds": 10.0})
	if rec.auth != "" {
		t.Errorf("no token given, yet Authorization %q was sent", rec.auth)
	}
}

func TestRoutes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name        string
		status      int
		answer      string
		call        func(c *apiclient.Client) error
		method      string
		path, query string
		body        map[string]any
	}{
		{"batch", 201, `{"tasks":[` + taskJSON + `,` + taskJSON + `]}`, func(c *apiclient.Client) error {
			ts, err := c.CreateTasks(ctx, []apiclient.CreateTask{{Kind: "a"}, {Kind: "b", Queue: "q"}})
			if err == nil && len(ts) != 2 {
				t.Errorf("batch: %d tasks", len(ts))
			}
			return err
		}, "POST", "/api/tasks/batch", "", map[string]any{"tasks": []any{
			map[string]any{"kind": "a"}, map[string]any{"kind": "b", "queue": "q"}}}},
		{"get", 200, taskJSON, func(c *apiclient.Client) error {
			_, err := c.GetTask(ctx, taskID)
			return err
		}, "GET", "/api/tasks/" + taskID, "", nil},
		{"get escapes the id", 200, taskJSON, func(c *apiclient.Client) error {
			_, err := c.GetTask(ctx, "../stats")
			return err
		}, "GET", "/api/tasks/..%2Fstats", "", nil}, // one path segment: it cannot climb the route
		{"list", 200, `{"tasks":[` + taskJSON + `],"next_cursor":"abc"}`, func(c *apiclient.Client) error {
			p, err := c.ListTasks(ctx, apiclient.ListTasksParams{Statuses: []string{"DEAD", "FAILED"},
				Queue: "q", Kind: "k", Limit: 10, Cursor: "c1"})
			if err == nil && (len(p.Tasks) != 1 || p.NextCursor != "abc") {
				t.Errorf("list page: %+v", p)
			}
			return err
		}, "GET", "/api/tasks", "cursor=c1&kind=k&limit=10&queue=q&status=DEAD%2CFAILED", nil},
		{"list without filters", 200, `{"tasks":[],"next_cursor":""}`, func(c *apiclient.Client) error {
			p, err := c.ListTasks(ctx, apiclient.ListTasksParams{})
			if err == nil && (p.Tasks == nil || p.NextCursor != "") {
				t.Errorf("empty page: %+v", p)
			}
			return err
		}, "GET", "/api/tasks", "", nil},
		{"attempts", 200, `{"attempts":[{"id":1,"task_id":"` + taskID + `","attempt":1,"worker_id":"w1",
			"started_at":"2030-01-02T03:04:05Z","finished_at":null,"outcome":"","error":""}]}`, func(c *apiclient.Client) error {
			as, err := c.ListAttempts(ctx, taskID)
			if err == nil && (len(as) != 1 || as[0].WorkerID != "w1" || as[0].FinishedAt != nil || len(as[0].Raw()) == 0) {
				t.Errorf("attempts: %+v", as)
			}
			return err
		}, "GET", "/api/tasks/" + taskID + "/attempts", "", nil},
		{"cancel", 200, taskJSON, func(c *apiclient.Client) error {
			_, err := c.CancelTask(ctx, taskID)
			return err
		}, "POST", "/api/tasks/" + taskID + "/cancel", "", nil},
		{"replay", 200, taskJSON, func(c *apiclient.Client) error {
			_, err := c.ReplayTask(ctx, taskID)
			return err
		}, "POST", "/api/tasks/" + taskID + "/replay", "", nil},
		{"stats", 200, `{"queues":[{"queue":"default","counts":{"PENDING":2,"DEAD":1},
			"oldest_due_at":"2030-01-02T03:04:05Z","expired_leases":0}],"totals":{"PENDING":2,"DEAD":1}}`, func(c *apiclient.Client) error {
			s, err := c.Stats(ctx)
			if err == nil && (len(s.Queues) != 1 || s.Queues[0].Counts["PENDING"] != 2 || s.Totals["DEAD"] != 1 || s.Queues[0].OldestDueAt == nil) {
				t.Errorf("stats: %+v", s)
			}
			return err
		}, "GET", "/api/stats", "", nil},
		{"dead letters", 200, `{"dead_letters":[{"id":4,"task_id":"` + taskID + `","kind":"fail","queue":"default",
			"worker_id":"w","attempt_count":3,"max_attempts":3,"error":"boom","reason":"DEAD",
			"created_at":"2030-01-02T03:04:05Z","replayed_at":null}],"next_cursor":""}`, func(c *apiclient.Client) error {
			p, err := c.ListDeadLetters(ctx, apiclient.ListDeadLettersParams{Queue: "default", Reason: "DEAD", Limit: 5})
			if err == nil && (len(p.DeadLetters) != 1 || p.DeadLetters[0].Error != "boom" || p.DeadLetters[0].Reason != "DEAD") {
				t.Errorf("dead letters: %+v", p)
			}
			return err
		}, "GET", "/api/dead-letters", "limit=5&queue=default&reason=DEAD", nil},
		{"bulk replay", 200, `{"replayed":1,"tasks":[` + taskJSON + `]}`, func(c *apiclient.Client) error {
			r, err := c.ReplayDeadLetters(ctx, apiclient.ReplayDeadLetters{TaskIDs: []string{taskID}, Kind: "fail", Limit: 50})
			if err == nil && (r.Replayed != 1 || len(r.Tasks) != 1) {
				t.Errorf("replay: %+v", r)
			}
			return err
		}, "POST", "/api/dead-letters/replay", "", map[string]any{"task_ids": []any{taskID}, "kind": "fail", "limit": 50.0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, rec := fake(t, tc.status, tc.answer)
			if err := tc.call(apiclient.New(srv.URL, "", nil)); err != nil {
				t.Fatal(err)
			}
			wantPath := tc.path
			if rec.method != tc.method || rec.path != wantPath || rec.query != tc.query {
				t.Errorf("sent %s %s?%s, want %s %s?%s", rec.method, rec.path, rec.query, tc.method, wantPath, tc.query)
			}
			if tc.body != nil {
				assertJSONEqual(t, rec.body, tc.body)
			} else if rec.body != nil {
				t.Errorf("unexpected body %v", rec.body)
			}
		})
	}
}

func TestAPIErrors(t *testing.T) {
	srv, _ := fake(t, http.StatusNotFound, `{"error":{"code":"not_found","message":"task `+taskID+` not found"}}`)
	_, err := apiclient.New(srv.URL, "", nil).GetTask(context.Background(), taskID)
	var apiErr *apiclient.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("got %T %v, want *apiclient.Error", err, err)
	}
	if apiErr.Status != 404 || apiErr.Code != "not_found" || err.Error() != "not_found: task "+taskID+" not found" {
		t.Errorf("error: %+v, %q", apiErr, err)
	}
	if !apiclient.IsNotFound(err) || apiclient.IsUnauthorized(err) {
		t.Error("IsNotFound/IsUnauthorized disagree with the status")
	}

	if errors.Is(err, apiclient.ErrNotAPI) {
		t.Error("an API error is ErrNotAPI")
	}
}

// TestErrorsThatAreNotTheAPIs: an error answer that is not the API's shape (a proxy in
// front, the dashboard behind a wrong base URL) gives one readable line naming the status
// and the server, without the page's markup; a plain-text body is quoted.
func TestErrorsThatAreNotTheAPIs(t *testing.T) {
	for _, tc := range []struct {
		status      int
		contentType string
		body        string
		want        string
	}{
		{http.StatusForbidden, "text/html; charset=utf-8", "<!doctype html>\n<html><body><p>This request came from\nanother site</p></body></html>",
			"forbidden: HTTP 403 Forbidden from %s for GET /api/stats: not an answer of the Rota API (text/html; charset=utf-8)"},
		{http.StatusBadGateway, "application/json", `{"message": "upstream down"}`,
			"bad_gateway: HTTP 502 Bad Gateway from %s for GET /api/stats: not an answer of the Rota API (application/json)"},
		{http.StatusServiceUnavailable, "text/plain", "no healthy\nupstream",
			"service_unavailable: HTTP 503 Service Unavailable from %s for GET /api/stats: not an answer of the Rota API (text/plain): no healthy upstream"},
		{599, "", "", "http_599: HTTP 599 from %s for GET /api/stats: not an answer of the Rota API (no content type)"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = []string{tc.contentType}
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body)
		}))
		_, err := apiclient.New(srv.URL, "", nil).Stats(context.Background())
		srv.Close()
		var apiErr *apiclient.Error
		if !errors.As(err, &apiErr) || apiErr.Status != tc.status || !errors.Is(err, apiclient.ErrNotAPI) {
			t.Errorf("HTTP %d: %#v, want an *Error with the status, wrapping ErrNotAPI", tc.status, err)
			continue
		}
		if want := fmt.Sprintf(tc.want, srv.URL); err.Error() != want {
			t.Errorf("HTTP %d:\n got %s\nwant %s", tc.status, err, want)
		}
	}
}

func TestSuccessThatIsNotJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>dashboard</html>")
	}))
	defer srv.Close()
	_, err := apiclient.New(srv.URL, "", nil).GetTask(context.Background(), taskID)
	if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "text/html") ||
		!errors.Is(err, apiclient.ErrNotAPI) {
		t.Errorf("got %v, want an error naming the server and what it answered", err)
	}
}

// TestTokenWhitespace: a token read from a secret file keeps its newline; it is sent
// trimmed. One that still holds whitespace or a control character fails every call with
// an error about the token, before any request (not "cannot reach the server").
func TestTokenWhitespace(t *testing.T) {
	srv, rec := fake(t, http.StatusOK, taskJSON)
	if _, err := apiclient.New(srv.URL, "s3cret\n", nil).GetTask(context.Background(), taskID); err != nil {
		t.Fatal(err)
	}
	if rec.auth != "Bearer s3cret" {
		t.Errorf("Authorization %q, want the token trimmed", rec.auth)
	}
	rec.method = ""
	for _, bad := range []string{"s3 cret", "s3\ncret", "s3\x00cret", " \n"} {
		_, err := apiclient.New(srv.URL, bad, nil).GetTask(context.Background(), taskID)
		if err == nil || !strings.Contains(err.Error(), "API token") || strings.Contains(err.Error(), "cannot reach") {
			t.Errorf("token %q: %v, want an error about the token", bad, err)
		}
	}
	if rec.method != "" {
		t.Errorf("a bad token still sent %s %s", rec.method, rec.path)
	}
}

func TestUnreachableServerNamesTheURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = apiclient.New(base, "", nil).GetTask(context.Background(), taskID)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Rota server at "+base) {
		t.Errorf("got %v", err)
	}
	var apiErr *apiclient.Error
	if errors.As(err, &apiErr) {
		t.Error("a transport failure is not an API error")
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	c := apiclient.New(srv.URL, "", &http.Client{Timeout: 50 * time.Millisecond})
	_, err := c.GetTask(context.Background(), taskID)
	if err == nil || !strings.Contains(err.Error(), "no answer from the Rota server at "+srv.URL) {
		t.Errorf("timeout: got %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = apiclient.New(srv.URL, "", nil).GetTask(ctx, taskID)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: got %v", err)
	}
}

func assertJSONEqual(t *testing.T, got, want map[string]any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("body\n got %s\nwant %s", g, w)
	}
}
