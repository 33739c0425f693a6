package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

// startWorker runs a real Go runtime worker on st serving queue with handlers for kinds
// until the test ends; it registers itself in the workers registry as every worker does.
func startWorker(t *testing.T, st store.Store, id, queue string, kinds ...string) {
	t.Helper()
	mux := runtime.NewMux()
	for _, k := range kinds {
		mux.HandleFunc(k, func(context.Context, *runtime.Job) error { return nil })
	}
	w, err := runtime.NewWorker(runtime.Config{Store: st, Mux: mux, WorkerID: id, Concurrency: 2,
		Queues: map[string]int{queue: 0}, ShutdownGrace: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("NewWorker: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

type createdJSON struct {
	taskJSON
	Warnings []string `json:"warnings"`
}

func (c *apiClient) createWarnings(body any) []string {
	c.t.Helper()
	var out createdJSON
	c.do("POST", "/api/tasks", body).want(c.t, 201, &out)
	return out.Warnings
}

// waitWarnings creates tasks until the answer's warnings satisfy ok (the server caches
// the live workers for a moment, so a worker that just registered shows up soon, not
// at once), and returns them.
func waitWarnings(t *testing.T, c *apiClient, body any, what string, ok func([]string) bool) []string {
	t.Helper()
	var got []string
	poll.Until(t, what, 15*time.Second, 50*time.Millisecond, func() bool {
		got = c.createWarnings(body)
		return ok(got)
	})
	return got
}

// A task whose kind no live worker of its queue handles is created with a warning; once
// a worker that handles it is live, the warning is gone (DESIGN.md section 12).
func TestCreateWarnsUntilAWorkerHandlesTheKind(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		body := map[string]any{"kind": "resize", "queue": "images"}

		got := c.createWarnings(body)
		if len(got) != 1 || !strings.Contains(got[0], `queue "images" has no live worker`) {
			t.Fatalf("no worker at all: warnings = %q, want one saying the queue has no live worker", got)
		}

		startWorker(t, st, "thumbs", "images", "thumbnail")
		got = waitWarnings(t, c, body, "the kind warning", func(w []string) bool {
			return len(w) == 1 && !strings.Contains(w[0], "no live worker:")
		})
		if !strings.Contains(got[0], `no live worker of queue "images" handles kind "resize"`) || !strings.Contains(got[0], "thumbnail") {
			t.Fatalf("a worker without the kind: warning = %q", got[0])
		}
		// A batch answer carries one list for the whole batch, each problem once.
		var batch struct {
			Tasks    []taskJSON `json:"tasks"`
			Warnings []string   `json:"warnings"`
		}
		c.do("POST", "/api/tasks/batch", map[string]any{"tasks": []any{body, body,
			map[string]any{"kind": "thumbnail", "queue": "images"}}}).want(t, 201, &batch)
		if len(batch.Tasks) != 3 || len(batch.Warnings) != 1 || !strings.Contains(batch.Warnings[0], `kind "resize"`) {
			t.Fatalf("batch: %d tasks, warnings %q; want 3 tasks and the one resize warning", len(batch.Tasks), batch.Warnings)
		}

		startWorker(t, st, "resizer", "images", "resize")
		waitWarnings(t, c, body, "no warning once a worker handles the kind", func(w []string) bool { return len(w) == 0 })
		raw := c.do("POST", "/api/tasks", body)
		if strings.Contains(string(raw.body), "warnings") {
			t.Errorf("an answer without warnings must not carry the field: %s", raw.body)
		}
	})
}

// An HTTP-protocol worker is registered by its claim with kinds unknown (null), is
// listed by GET /api/workers beside Go workers, and gives no kind warning.
func TestHTTPWorkerRegisteredByClaim(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		startWorker(t, st, "go-worker", "go-q", "noop")
		c.claim("py-q", map[string]any{"worker_id": "python-1"})

		var list struct {
			Workers []map[string]any `json:"workers"`
		}
		poll.Until(t, "both workers listed", 15*time.Second, 20*time.Millisecond, func() bool {
			c.do("GET", "/api/workers", nil).want(t, 200, &list)
			return len(list.Workers) == 2
		})
		py, gw := list.Workers[1], list.Workers[0] // ordered by id
		if py["id"] != "python-1" || py["mode"] != "http" || py["kinds"] != nil || !slices.Equal(toStrings(py["queues"]), []string{"py-q"}) {
			t.Errorf("HTTP worker = %v", py)
		}
		if gw["id"] != "go-worker" || gw["mode"] != "poll" || !slices.Equal(toStrings(gw["kinds"]), []string{"noop"}) {
			t.Errorf("Go worker = %v", gw)
		}
		for _, f := range []string{"id", "host", "pid", "version", "mode", "queues", "kinds", "concurrency", "running", "started_at", "last_seen_at"} {
			if _, ok := gw[f]; !ok {
				t.Errorf("worker JSON lacks %q: %v", f, gw)
			}
		}
		c.do("GET", "/api/workers?queue=py-q", nil).want(t, 200, &list)
		if len(list.Workers) != 1 || list.Workers[0]["id"] != "python-1" {
			t.Errorf("?queue=py-q lists %v", list.Workers)
		}
		c.do("GET", "/api/workers?queue=-bad", nil).wantError(t, 400, codeInvalidRequest)

		if got := c.createWarnings(map[string]any{"kind": "anything", "queue": "py-q"}); len(got) != 0 {
			t.Errorf("a queue served by an HTTP-protocol worker gives no kind warning, got %q", got)
		}
	})
}

func toStrings(v any) []string {
	var out []string
	b, _ := json.Marshal(v)
	_ = json.Unmarshal(b, &out)
	return out
}
