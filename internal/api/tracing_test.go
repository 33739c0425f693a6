package api

import (
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

const testTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
const testTraceparent = "00-" + testTraceID + "-00f067aa0ba902b7-01"

// postTraced POSTs body to path with a traceparent header.
func (c *apiClient) postTraced(path, body, traceparent string) response {
	c.t.Helper()
	req, err := http.NewRequest("POST", c.url+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", traceparent)
	req.Header.Set("tracestate", "rojo=1")
	return c.send(req)
}

// TestTraceparentReachesTheClaim: with tracing off (a no-op provider), the traceparent
// of POST /api/tasks and of a batch is stored as it came and handed to the worker that
// claims the task; a malformed one is ignored, and an untraced task's claim has none.
func TestTraceparentReachesTheClaim(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st, TracerProvider: noop.NewTracerProvider()})
		c.postTraced("/api/tasks", `{"kind":"k","queue":"one"}`, testTraceparent).want(t, http.StatusCreated, nil)
		c.postTraced("/api/tasks/batch", `{"tasks":[{"kind":"k","queue":"batch"},{"kind":"k","queue":"batch"}]}`, testTraceparent).want(t, http.StatusCreated, nil)
		c.postTraced("/api/tasks", `{"kind":"k","queue":"bad"}`, "00-nonsense").want(t, http.StatusCreated, nil)
		c.createTask(map[string]any{"kind": "k", "queue": "plain"})

		for _, q := range []string{"one", "batch"} {
			tasks := c.claim(q, map[string]any{"worker_id": "w1", "limit": 10})
			if len(tasks) == 0 {
				t.Fatalf("queue %s: nothing claimed", q)
			}
			for _, task := range tasks {
				if task.Traceparent != testTraceparent || task.Tracestate != "rojo=1" {
					t.Errorf("queue %s: claim answer traceparent %q tracestate %q, want the request's", q, task.Traceparent, task.Tracestate)
				}
			}
		}
		for _, q := range []string{"bad", "plain"} {
			if task := c.claimOne(q); task.Traceparent != "" || task.Tracestate != "" {
				t.Errorf("queue %s: claim answer carries %q %q, want none", q, task.Traceparent, task.Tracestate)
			}
		}
		if got := c.getTask(c.createTask(map[string]any{"kind": "k"}).ID.String()); got.Traceparent != "" {
			t.Errorf("a task read (not claimed) shows a traceparent")
		}
	})
}

// TestAPISpanIsTheTasksParent: traced, each API request has a server span continuing
// its traceparent, and a created task stores that span (not the caller's) as its parent.
func TestAPISpanIsTheTasksParent(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		rec := tracetest.NewSpanRecorder()
		c := newClient(t, Config{Store: st, TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
		c.postTraced("/api/tasks", `{"kind":"k"}`, testTraceparent).want(t, http.StatusCreated, nil)
		claimed := c.claimOne("default")
		c.do("GET", "/healthz", nil).want(t, http.StatusOK, nil)
		c.do("GET", "/metrics", nil).want(t, http.StatusOK, nil)
		for _, s := range rec.Ended() {
			if !strings.HasPrefix(s.Name(), "POST /api/") {
				t.Errorf("span %q: probes and scrapes make no spans", s.Name())
			}
		}

		var create sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == "POST /api/tasks" {
				create = s
			}
		}
		if create == nil {
			t.Fatalf("no POST /api/tasks span among %d", len(rec.Ended()))
		}
		if create.SpanContext().TraceID().String() != testTraceID || create.Parent().SpanID().String() != "00f067aa0ba902b7" {
			t.Errorf("API span: trace %s parent %s, want the traceparent's", create.SpanContext().TraceID(), create.Parent().SpanID())
		}
		want := "00-" + testTraceID + "-" + create.SpanContext().SpanID().String() + "-01"
		if claimed.Traceparent != want {
			t.Errorf("claimed traceparent %q, want the API span's %q", claimed.Traceparent, want)
		}
	})
}
