package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// apiClient talks to one Server through a real HTTP listener.
type apiClient struct {
	t     *testing.T
	srv   *Server
	url   string
	token string
}

func newClient(t *testing.T, cfg Config) *apiClient {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		ts.Close()
	})
	return &apiClient{t: t, srv: srv, url: ts.URL, token: cfg.Token}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends body (a string sent as is, nil for none, anything else JSON-encoded) as
// application/json.
func (c *apiClient) do(method, path string, body any) response {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, c.url+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.send(req)
}

func (c *apiClient) send(req *http.Request) response {
	c.t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// want checks the status and decodes the body into v (when non-nil).
func (r response) want(t *testing.T, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") && v != nil {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	if v != nil {
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("decode %s: %v", r.body, err)
		}
	}
}

// wantError checks an error answer: its status, its code and the JSON error shape.
func (r response) wantError(t *testing.T, status int, code string) errorDetail {
	t.Helper()
	var e errorBody
	r.want(t, status, &e)
	if e.Error.Code != code {
		t.Fatalf("error code %q (%s), want %q", e.Error.Code, e.Error.Message, code)
	}
	if e.Error.Message == "" {
		t.Fatalf("error %q has no message", code)
	}
	return e.Error
}

func (c *apiClient) createTask(body any) taskJSON {
	c.t.Helper()
	var out taskJSON
	c.do("POST", "/api/tasks", body).want(c.t, http.StatusCreated, &out)
	return out
}

func (c *apiClient) claim(queue string, body any) []taskJSON {
	c.t.Helper()
	var out tasksJSON
	c.do("POST", "/api/queues/"+queue+"/claim", body).want(c.t, http.StatusOK, &out)
	return out.Tasks
}

func (c *apiClient) claimOne(queue string) taskJSON {
	c.t.Helper()
	tasks := c.claim(queue, map[string]any{"worker_id": "w1"})
	if len(tasks) != 1 {
		c.t.Fatalf("claimed %d tasks, want 1", len(tasks))
	}
	if tasks[0].LeaseToken == nil {
		c.t.Fatal("claimed task has no lease_token")
	}
	return tasks[0]
}

func (c *apiClient) getTask(id string) taskJSON {
	c.t.Helper()
	var out taskJSON
	c.do("GET", "/api/tasks/"+id, nil).want(c.t, http.StatusOK, &out)
	return out
}

// failingStore is a store whose every call fails with err, for the 500 and 503 paths.
type failingStore struct {
	store.Store
	err error
}

func (f failingStore) GetTask(ctx context.Context, id uuid.UUID) (*store.Task, error) {
	return nil, f.err
}

func (f failingStore) Stats(ctx context.Context) ([]store.QueueStats, error) { return nil, f.err }

func (f failingStore) Ping(ctx context.Context) error { return f.err }

func within(t *testing.T, got, want time.Time, tolerance time.Duration) {
	t.Helper()
	if d := got.Sub(want); d < -tolerance || d > tolerance {
		t.Fatalf("time %s is %s away from %s (tolerance %s)", got, d, want, tolerance)
	}
}
