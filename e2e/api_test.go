package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

const apiToken = "e2e-secret-token"

// TestAPIServe drives a real `rota serve` process on PostgreSQL through HTTP only.
func TestAPIServe(t *testing.T) {
	dbURL, _ := newDB(t)
	url := startServer(t, "serve", "serve", "--database-url", dbURL, "--addr", "127.0.0.1:0", "--token", apiToken)
	apiScenario(t, url)
}

// TestAPIDev drives a real `rota dev` process (in-memory store) through HTTP only.
func TestAPIDev(t *testing.T) {
	url := startServer(t, "dev", "dev", "--addr", "127.0.0.1:0", "--token", apiToken)
	apiScenario(t, url)
}

// startServer runs `rota <args>` and returns the URL it prints.
func startServer(t *testing.T, name string, args ...string) string {
	t.Helper()
	p := startProc(t, name, []string{"ROTA_API_TOKEN=", "ROTA_ADDR="}, args...)
	var url string
	waitFor(t, 30*time.Second, name+" to print its URL", func() (bool, string) {
		sc := bufio.NewScanner(strings.NewReader(p.output()))
		for sc.Scan() {
			if _, after, ok := strings.Cut(sc.Text(), " listening on "); ok {
				url = after
				return true, ""
			}
		}
		if p.exited() {
			t.Fatalf("%s exited:\n%s", name, p.output())
		}
		return false, p.output()
	})
	t.Cleanup(func() { p.stop(t, 15*time.Second) })
	return url
}

// apiClient makes JSON calls and decodes the answers.
type apiClient struct {
	t     *testing.T
	url   string
	token string
}

type reply struct {
	status int
	body   map[string]any
	raw    string
}

func (c apiClient) do(method, path, contentType string, body []byte) reply {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func (c apiClient) call(method, path string, body any) reply {
	c.t.Helper()
	if body == nil {
		return c.do(method, path, "", nil)
	}
	b, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.do(method, path, "application/json", b)
}

// expect checks the status and, for errors, the error code.
func (r reply) expect(t *testing.T, what string, status int, code string) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.status, status, r.raw)
	}
	if code != "" {
		e, _ := r.body["error"].(map[string]any)
		if e == nil || e["code"] != code || e["message"] == "" {
			t.Fatalf("%s: error %v, want code %q with a message", what, r.body, code)
		}
	}
	return r
}

func (r reply) str(key string) string { s, _ := r.body[key].(string); return s }

func (r reply) list(key string) []any { l, _ := r.body[key].([]any); return l }

func apiScenario(t *testing.T, url string) {
	c := apiClient{t: t, url: url, token: apiToken}
	anon := apiClient{t: t, url: url}
	wrong := apiClient{t: t, url: url, token: "not-the-token"}

	// Health stays open; the API needs the token.
	anon.call("GET", "/healthz", nil).expect(t, "healthz", 200, "")
	anon.call("GET", "/readyz", nil).expect(t, "readyz", 200, "")
	anon.call("GET", "/api/stats", nil).expect(t, "stats without token", 401, "unauthorized")
	wrong.call("POST", "/api/tasks", map[string]any{"kind": "noop"}).expect(t, "create with a wrong token", 401, "unauthorized")
	c.call("GET", "/api/openapi.json", nil).expect(t, "openapi", 200, "")
	anon.call("GET", "/metrics", nil).expect(t, "metrics", 200, "")

	// Create: 201 new, 200 for the same idempotency key.
	created := c.call("POST", "/api/tasks", map[string]any{"kind": "report", "queue": "ext", "payload": map[string]any{"n": 1},
		"idempotency_key": "e2e-key", "delay_seconds": 3600}).expect(t, "create", 201, "")
	id := created.str("id")
	if created.str("status") != "PENDING" || id == "" {
		t.Fatalf("created task: %s", created.raw)
	}
	again := c.call("POST", "/api/tasks", map[string]any{"kind": "report", "queue": "ext", "idempotency_key": "e2e-key"}).expect(t, "idempotent create", 200, "")
	if again.str("id") != id {
		t.Fatalf("idempotent create returned %s, want %s", again.str("id"), id)
	}

	// Every error code.
	c.do("POST", "/api/tasks", "application/json", []byte(`{"kind":`)).expect(t, "truncated JSON", 400, "invalid_json")
	c.call("POST", "/api/tasks", map[string]any{"kind": "noop", "colour": "red"}).expect(t, "unknown field", 400, "")
	for name, body := range map[string]map[string]any{
		"empty kind":        {"kind": ""},
		"malformed kind":    {"kind": "no spaces allowed"},
		"max_attempts 0":    {"kind": "noop", "max_attempts": 0},
		"negative delay":    {"kind": "noop", "delay_seconds": -5},
		"delay and at both": {"kind": "noop", "delay_seconds": 5, "scheduled_for": "2030-01-01T00:00:00Z"},
	} {
		c.call("POST", "/api/tasks", body).expect(t, name, 400, "invalid_request")
	}
	c.do("POST", "/api/tasks", "application/json", []byte(`{"kind":"noop","payload":{not json}}`)).expect(t, "payload not JSON", 400, "")
	c.do("POST", "/api/tasks", "text/plain", []byte(`{"kind":"noop"}`)).expect(t, "wrong content type", 415, "unsupported_media_type")
	big := fmt.Sprintf(`{"kind":"noop","payload":{"blob":%q}}`, strings.Repeat("x", 3<<20))
	c.do("POST", "/api/tasks", "application/json", []byte(big)).expect(t, "oversized body", 413, "payload_too_large")
	c.call("GET", "/api/tasks/01890000-0000-7000-8000-000000000000", nil).expect(t, "unknown task", 404, "not_found")
	c.call("DELETE", "/api/tasks", nil).expect(t, "wrong method", 405, "method_not_allowed")
	c.call("POST", "/api/tasks/"+id+"/replay", nil).expect(t, "replay of a PENDING task", 409, "illegal_transition")

	// Read: get, list with filters, attempts, stats.
	c.call("GET", "/api/tasks/"+id, nil).expect(t, "get", 200, "")
	listed := c.call("GET", "/api/tasks?queue=ext&status=PENDING&kind=report", nil).expect(t, "list", 200, "")
	if l := listed.list("tasks"); len(l) != 1 {
		t.Fatalf("filtered list: %s", listed.raw)
	}
	c.call("GET", "/api/tasks/"+id+"/attempts", nil).expect(t, "attempts", 200, "")
	c.call("GET", "/api/stats", nil).expect(t, "stats", 200, "")

	// Cancel, then replay.
	if got := c.call("POST", "/api/tasks/"+id+"/cancel", nil).expect(t, "cancel", 200, ""); got.str("status") != "CANCELED" {
		t.Fatalf("cancel: %s", got.raw)
	}
	if got := c.call("POST", "/api/tasks/"+id+"/replay", nil).expect(t, "replay", 200, ""); got.str("status") != "PENDING" {
		t.Fatalf("replay: %s", got.raw)
	}
	c.call("POST", "/api/tasks/"+id+"/cancel", nil).expect(t, "cancel again", 200, "")

	// Batch: all or nothing.
	c.call("POST", "/api/tasks/batch", map[string]any{"tasks": []any{
		map[string]any{"kind": "a", "queue": "batch"}, map[string]any{"kind": "b", "queue": "batch"}}}).expect(t, "batch", 201, "")
	c.call("POST", "/api/tasks/batch", map[string]any{"tasks": []any{
		map[string]any{"kind": "c", "queue": "batch"}, map[string]any{"kind": ""}}}).expect(t, "bad batch", 400, "invalid_request")
	if l := c.call("GET", "/api/tasks?queue=batch", nil).list("tasks"); len(l) != 2 {
		t.Fatalf("after a rejected batch the queue has %d tasks, want 2", len(l))
	}
	bigBatch(t, c)

	workerProtocol(t, c)
	longPoll(t, c)
}

// bigBatch: a batch of 120 tasks without idempotency keys, which the PostgreSQL store
// writes by COPY and answers without reading the rows back (createcopy.go): every task
// in the answer is the task a GET returns, field for field.
func bigBatch(t *testing.T, c apiClient) {
	tasks := make([]any, 120) // at least copyMinTasks (createcopy.go)
	for i := range tasks {
		tasks[i] = map[string]any{"kind": "bulk", "queue": "bulk", "priority": i % 3, "max_attempts": i + 1,
			"payload": map[string]any{"i": i, "tags": []any{"a", 1.5, nil}}, "group_key": fmt.Sprintf("g%d", i%2)}
	}
	tasks[len(tasks)-1] = map[string]any{"kind": "bulk", "queue": "bulk", "scheduled_for": "2030-01-02T03:04:05.123456789Z", "timeout_seconds": 7}
	created := c.call("POST", "/api/tasks/batch", map[string]any{"tasks": tasks}).expect(t, "big batch", 201, "").list("tasks")
	if len(created) != len(tasks) {
		t.Fatalf("big batch: %d tasks in the answer, want %d", len(created), len(tasks))
	}
	for i, task := range created {
		got, _ := task.(map[string]any)
		id, _ := got["id"].(string)
		read := c.call("GET", "/api/tasks/"+id, nil).expect(t, "get a task of the big batch", 200, "")
		if !reflect.DeepEqual(got, read.body) {
			t.Errorf("big batch task %d: created\n%v\nread\n%v", i, got, read.body)
		}
	}
}

// workerProtocol is a tiny worker written with HTTP calls only.
func workerProtocol(t *testing.T, c apiClient) {
	c.call("POST", "/api/tasks", map[string]any{"kind": "external", "queue": "remote", "max_attempts": 2}).expect(t, "create remote task", 201, "")
	claim := func() (id, token string) {
		r := c.call("POST", "/api/queues/remote/claim", map[string]any{"worker_id": "curl-worker", "limit": 1, "lease_seconds": 30}).expect(t, "claim", 200, "")
		tasks := r.list("tasks")
		if len(tasks) != 1 {
			t.Fatalf("claim returned %s", r.raw)
		}
		task := tasks[0].(map[string]any)
		return task["id"].(string), task["lease_token"].(string)
	}
	id, token := claim()
	c.call("POST", "/api/tasks/"+id+"/heartbeat", map[string]any{"lease_token": token, "lease_seconds": 60}).expect(t, "heartbeat", 200, "")
	// A retryable failure with no delay: back to PENDING, claimable again with a new token.
	r := c.call("POST", "/api/tasks/"+id+"/fail", map[string]any{"lease_token": token, "error": "flaky", "retry_after_seconds": 0}).expect(t, "fail retryable", 200, "")
	if r.str("status") != "PENDING" {
		t.Fatalf("retryable fail: %s", r.raw)
	}
	c.call("POST", "/api/tasks/"+id+"/complete", map[string]any{"lease_token": token}).expect(t, "complete with a stale token", 409, "lease_lost")
	c.call("POST", "/api/tasks/"+id+"/heartbeat", map[string]any{"lease_token": token}).expect(t, "heartbeat with a stale token", 409, "lease_lost")
	id2, token2 := claim()
	if id2 != id || token2 == token {
		t.Fatalf("second claim: id %s token %s (first %s %s)", id2, token2, id, token)
	}
	// The last attempt fails: DEAD, with a dead letter; bulk replay brings it back.
	r = c.call("POST", "/api/tasks/"+id+"/fail", map[string]any{"lease_token": token2, "error": "broken"}).expect(t, "fail last attempt", 200, "")
	if r.str("status") != "DEAD" {
		t.Fatalf("last attempt failed: %s", r.raw)
	}
	dl := c.call("GET", "/api/dead-letters?queue=remote", nil).expect(t, "dead letters", 200, "")
	if l := dl.list("dead_letters"); len(l) != 1 || l[0].(map[string]any)["reason"] != "DEAD" {
		t.Fatalf("dead letters: %s", dl.raw)
	}
	rep := c.call("POST", "/api/dead-letters/replay", map[string]any{"queue": "remote"}).expect(t, "bulk replay", 200, "")
	if n, _ := rep.body["replayed"].(float64); n != 1 {
		t.Fatalf("bulk replay: %s", rep.raw)
	}
	id3, token3 := claim()
	// An output over 1 MiB is 413 and changes nothing; the lease still completes the task,
	// and the output it gives is the task's (DESIGN.md section 10, "Results").
	c.call("POST", "/api/tasks/"+id3+"/complete", map[string]any{"lease_token": token3, "output": strings.Repeat("x", 1<<20)}).
		expect(t, "complete with a 1 MiB + 2 bytes output", 413, "payload_too_large")
	if r = c.call("GET", "/api/tasks/"+id3, nil).expect(t, "get after a 413", 200, ""); r.str("status") != "PROCESSING" || r.body["output"] != nil {
		t.Fatalf("after a 413: %s", r.raw)
	}
	r = c.call("POST", "/api/tasks/"+id3+"/complete", map[string]any{"lease_token": token3, "output": map[string]any{"rows": 3}}).expect(t, "complete", 200, "")
	if r.str("status") != "SUCCEEDED" {
		t.Fatalf("complete: %s", r.raw)
	}
	if r = c.call("GET", "/api/tasks/"+id3, nil).expect(t, "get a completed task", 200, ""); fmt.Sprint(r.body["output"]) != "map[rows:3]" {
		t.Fatalf("output after complete: %s", r.raw)
	}
	c.call("POST", "/api/tasks/"+id3+"/complete", map[string]any{"lease_token": token3}).expect(t, "complete twice", 409, "lease_lost")
	// A permanent failure: FAILED.
	c.call("POST", "/api/tasks", map[string]any{"kind": "external", "queue": "remote"}).expect(t, "create", 201, "")
	id4, token4 := claim()
	r = c.call("POST", "/api/tasks/"+id4+"/fail", map[string]any{"lease_token": token4, "error": "bad input", "retryable": false}).expect(t, "fail permanent", 200, "")
	if r.str("status") != "FAILED" {
		t.Fatalf("permanent fail: %s", r.raw)
	}
	attempts := c.call("GET", "/api/tasks/"+id3+"/attempts", nil).expect(t, "attempts", 200, "")
	if l := attempts.list("attempts"); len(l) < 4 { // 2 runs, a replay event, the third run
		t.Fatalf("attempt history: %s", attempts.raw)
	}
}

// longPoll: a waiting claim returns the task created while it waits.
func longPoll(t *testing.T, c apiClient) {
	got := make(chan reply, 1)
	go func() {
		got <- c.call("POST", "/api/queues/lp/claim", map[string]any{"worker_id": "poller", "wait_seconds": 20})
	}()
	time.Sleep(200 * time.Millisecond) // let the claim start waiting; correctness does not depend on it
	c.call("POST", "/api/tasks", map[string]any{"kind": "external", "queue": "lp"}).expect(t, "create during long poll", 201, "")
	select {
	case r := <-got:
		r.expect(t, "long poll", 200, "")
		if len(r.list("tasks")) != 1 {
			t.Fatalf("long poll returned %s", r.raw)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("long poll never returned")
	}
}
