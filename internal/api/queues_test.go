package api

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

func (c *apiClient) queue(name string) queueJSON {
	c.t.Helper()
	var out queueJSON
	c.do("GET", "/api/queues/"+name, nil).want(c.t, http.StatusOK, &out)
	return out
}

func (c *apiClient) patchQueue(name string, body any) queueJSON {
	c.t.Helper()
	var out queueJSON
	c.do("PATCH", "/api/queues/"+name, body).want(c.t, http.StatusOK, &out)
	return out
}

func (c *apiClient) queues() map[string]queueJSON {
	c.t.Helper()
	var out queuesJSON
	c.do("GET", "/api/queues", nil).want(c.t, http.StatusOK, &out)
	m := map[string]queueJSON{}
	for i, q := range out.Queues {
		if i > 0 && out.Queues[i-1].Name >= q.Name {
			c.t.Fatalf("queues not sorted by name: %q before %q", out.Queues[i-1].Name, q.Name)
		}
		m[q.Name] = q
	}
	return m
}

func intPtr(n int) *int { return &n }

// A queue nobody configured and nobody used still answers, with the defaults; PATCH
// follows JSON merge semantics (present sets, null removes, absent keeps); pause and
// resume answer the queue; every answer is read back by GET.
func TestQueueSettingsRoundTrip(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})

		q := c.queue("fresh")
		if q.Name != "fresh" || q.Paused || q.Concurrency != nil || q.Rate != nil || q.GroupConcurrency != nil ||
			q.GroupRate != nil || q.UpdatedAt != nil || q.Workers != 0 || q.OldestPendingSeconds != 0 {
			t.Fatalf("unconfigured queue = %+v, want the defaults", q)
		}
		if len(q.Counts) != len(store.AllStatuses) || q.Counts[store.StatusPending] != 0 {
			t.Fatalf("counts = %v, want every status at 0", q.Counts)
		}

		q = c.patchQueue("mail", `{"concurrency": 5, "rate": {"limit": 100, "per_seconds": 60}, "group_concurrency": 1}`)
		if *q.Concurrency != 5 || *q.Rate != (rateJSON{100, 60}) || *q.GroupConcurrency != 1 || q.GroupRate != nil || q.Paused || q.UpdatedAt == nil {
			t.Fatalf("after the first patch: %+v", q)
		}
		// Absent keeps, null removes, present sets.
		q = c.patchQueue("mail", `{"rate": null, "group_rate": {"limit": 2, "per_seconds": 1}}`)
		if q.Concurrency == nil || *q.Concurrency != 5 || q.Rate != nil || *q.GroupRate != (rateJSON{2, 1}) || *q.GroupConcurrency != 1 {
			t.Fatalf("after the merge patch: %+v", q)
		}
		if got := c.queue("mail"); *got.Concurrency != 5 || got.Rate != nil || *got.GroupRate != (rateJSON{2, 1}) {
			t.Fatalf("GET after PATCH = %+v", got)
		}

		var paused queueJSON
		c.do("POST", "/api/queues/mail/pause", nil).want(t, http.StatusOK, &paused)
		if !paused.Paused || *paused.Concurrency != 5 {
			t.Fatalf("pause answered %+v", paused)
		}
		if !c.queue("mail").Paused {
			t.Fatal("GET after pause: not paused")
		}
		var resumed queueJSON
		c.do("POST", "/api/queues/mail/resume", nil).want(t, http.StatusOK, &resumed)
		if resumed.Paused {
			t.Fatalf("resume answered %+v", resumed)
		}
		q = c.patchQueue("mail", `{"concurrency": null, "group_concurrency": null, "group_rate": null, "paused": true}`)
		if q.Concurrency != nil || q.GroupConcurrency != nil || q.GroupRate != nil || !q.Paused {
			t.Fatalf("after removing every limit: %+v", q)
		}
		// An empty patch changes nothing and answers the queue.
		if got := c.patchQueue("mail", `{}`); !got.Paused {
			t.Fatalf("empty patch answered %+v", got)
		}
	})
}

// Invalid patches are 400 with a message naming the fault, and change nothing.
func TestQueuePatchRejectsInvalidValues(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		c.patchQueue("q", map[string]any{"concurrency": 3})
		for body, want := range map[string]string{
			`{"concurrency": 0}`:                                          "concurrency must be between 1",
			`{"concurrency": -1}`:                                         "concurrency must be between 1",
			`{"concurrency": 1.5}`:                                        "concurrency must be a whole number",
			`{"concurrency": "5"}`:                                        "concurrency must be a whole number",
			`{"group_concurrency": 1000001}`:                              "group_concurrency must be between 1",
			`{"rate": {"limit": 0, "per_seconds": 1}}`:                    "rate.limit must be between 1",
			`{"rate": {"limit": 1, "per_seconds": 0}}`:                    "rate.per_seconds must be between 1",
			`{"rate": {"limit": 1}}`:                                      "rate needs both limit and per_seconds",
			`{"rate": {"limit": 1, "per_seconds": 1, "x": 1}}`:            `rate must be {"limit": N, "per_seconds": S}`,
			`{"group_rate": 5}`:                                           `group_rate must be {"limit": N, "per_seconds": S}`,
			`{"paused": null}`:                                            "paused must be true or false",
			`{"paused": "yes"}`:                                           "paused must be true or false",
			`{"concurrency": 4, "name": "x"}`:                             `unknown field "name"`,
			`{"concurrency": 4, "rate": {"limit": -1, "per_seconds": 1}}`: "rate.limit",
		} {
			e := c.do("PATCH", "/api/queues/q", body).wantError(t, http.StatusBadRequest, codeInvalidRequest)
			if !strings.Contains(e.Message, want) {
				t.Errorf("%s: message %q does not say %q", body, e.Message, want)
			}
		}
		c.do("PATCH", "/api/queues/q", `[]`).wantError(t, http.StatusBadRequest, codeInvalidJSON)
		c.do("PATCH", "/api/queues/q", `{"concurrency": `).wantError(t, http.StatusBadRequest, codeInvalidJSON)
		if q := c.queue("q"); q.Concurrency == nil || *q.Concurrency != 3 {
			t.Fatalf("a refused patch changed the queue: %+v", q)
		}
		c.do("GET", "/api/queues/bad%20name", nil).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("POST", "/api/queues/bad%20name/pause", nil).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("GET", "/api/queues/q?x=1", nil).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		c.do("DELETE", "/api/queues/q", nil).wantError(t, http.StatusMethodNotAllowed, codeMethodNotAllowed)
	})
}

// GET /api/queues lists every queue with tasks, settings or live workers, with its
// counts, the age of its oldest due task and its live workers.
func TestListQueues(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		if got := c.queues(); len(got) != 0 {
			t.Fatalf("empty store lists %v", got)
		}
		c.createTask(map[string]any{"kind": "noop", "queue": "busy", "scheduled_for": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
		c.createTask(map[string]any{"kind": "noop", "queue": "busy", "delay_seconds": 3600})
		c.patchQueue("configured", map[string]any{"concurrency": 2})
		startWorker(t, st, "w-served", "served", "noop")

		var got map[string]queueJSON
		poll.Until(t, "the worker's queue listed", 15*time.Second, 50*time.Millisecond, func() bool {
			got = c.queues()
			return got["served"].Workers == 1
		})
		if len(got) != 3 {
			t.Fatalf("listed %d queues (%v), want busy, configured, served", len(got), got)
		}
		busy := got["busy"]
		if busy.Counts[store.StatusPending] != 2 || busy.Concurrency != nil || busy.UpdatedAt != nil {
			t.Fatalf("busy = %+v, want 2 PENDING and no settings", busy)
		}
		if busy.OldestPendingSeconds < 3500 || busy.OldestPendingSeconds > 3700 {
			t.Fatalf("busy oldest_pending_seconds = %v, want about 3600", busy.OldestPendingSeconds)
		}
		if cfg := got["configured"]; *cfg.Concurrency != 2 || cfg.Counts[store.StatusPending] != 0 || cfg.Workers != 0 {
			t.Fatalf("configured = %+v", cfg)
		}
	})
}

// group_key is taken on create and batch create, checked, and shown in every task JSON
// (null when none).
func TestCreateWithGroupKey(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		task := c.createTask(map[string]any{"kind": "noop", "group_key": "tenant-1"})
		if task.GroupKey == nil || *task.GroupKey != "tenant-1" {
			t.Fatalf("created group_key = %v", task.GroupKey)
		}
		if got := c.getTask(task.ID.String()); got.GroupKey == nil || *got.GroupKey != "tenant-1" {
			t.Fatalf("GET group_key = %v", got.GroupKey)
		}
		plain := c.createTask(map[string]any{"kind": "noop"})
		res := c.do("GET", "/api/tasks/"+plain.ID.String(), nil)
		if !strings.Contains(string(res.body), `"group_key":null`) {
			t.Fatalf("a task without a group key: %s, want \"group_key\":null", res.body)
		}

		var batch tasksJSON
		c.do("POST", "/api/tasks/batch", map[string]any{"tasks": []map[string]any{
			{"kind": "noop", "group_key": "a"}, {"kind": "noop"},
		}}).want(t, http.StatusCreated, &batch)
		if *batch.Tasks[0].GroupKey != "a" || batch.Tasks[1].GroupKey != nil {
			t.Fatalf("batch group keys = %v, %v", batch.Tasks[0].GroupKey, batch.Tasks[1].GroupKey)
		}
		claimed := c.claim("default", map[string]any{"worker_id": "w", "limit": 10})
		keys := 0
		for _, ct := range claimed {
			if ct.GroupKey != nil {
				keys++
			}
		}
		if keys != 2 {
			t.Fatalf("claimed tasks carry %d group keys, want 2", keys)
		}

		long := strings.Repeat("é", store.MaxGroupKeyLength+1)
		e := c.do("POST", "/api/tasks", map[string]any{"kind": "noop", "group_key": long}).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		if !strings.Contains(e.Message, "group_key") {
			t.Fatalf("message %q does not name group_key", e.Message)
		}
		c.createTask(map[string]any{"kind": "noop", "group_key": strings.Repeat("é", store.MaxGroupKeyLength)})
		e = c.do("POST", "/api/tasks/batch", map[string]any{"tasks": []map[string]any{{"kind": "noop"}, {"kind": "noop", "group_key": long}}}).
			wantError(t, http.StatusBadRequest, codeInvalidRequest)
		if !strings.HasPrefix(e.Message, "tasks[1]: ") {
			t.Fatalf("batch message %q does not name the entry", e.Message)
		}
	})
}

// FuzzQueuePatch: a PATCH body is accepted only as a patch the store accepts; a body it
// rejects is a client error.
func FuzzQueuePatch(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"paused":true,"concurrency":5,"rate":{"limit":10,"per_seconds":1},"group_concurrency":null,"group_rate":{"limit":1,"per_seconds":86400}}`,
		`{"concurrency":null}`,
		`{"concurrency":0}`,
		`{"concurrency":1e3}`,
		`{"rate":{"limit":1}}`,
		`{"rate":{"limit":1,"per_seconds":86401}}`,
		`{"rate":[]}`,
		`{"paused":null}`,
		`{"x":1}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodeQueuePatch(body)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status < 400 || ae.status > 499 {
				t.Fatalf("rejected %q with %v, not a client error", body, err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted %q, which the store rejects: %v", body, err)
		}
	})
}

// TestQueueSchemaMatchesAnswer holds the Queue schemas of openapi.json to the fields the
// server sends and the PATCH decoder takes.
func TestQueueSchemaMatchesAnswer(t *testing.T) {
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
	var sent map[string]json.RawMessage
	if err := json.Unmarshal(c.do("GET", "/api/queues/q", nil).body, &sent); err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["Queue"]
	if got, want := slices.Sorted(maps.Keys(schema.Properties)), slices.Sorted(maps.Keys(sent)); !slices.Equal(got, want) {
		t.Errorf("Queue documents %v; the server sends %v", got, want)
	}
	if got, want := slices.Sorted(slices.Values(schema.Required)), slices.Sorted(maps.Keys(sent)); !slices.Equal(got, want) {
		t.Errorf("Queue requires %v; the server sends %v", got, want)
	}
	if got := slices.Sorted(maps.Keys(doc.Components.Schemas["UpdateQueue"].Properties)); !slices.Equal(got, slices.Sorted(slices.Values(queuePatchFields))) {
		t.Errorf("UpdateQueue documents %v, the decoder takes %v", got, queuePatchFields)
	}
}

// An HTTP-protocol claim that a queue setting holds back is reported to
// Config.ClaimHeldBack (rota_claims_held_back_total in rota serve), once per claim, with
// the setting; a claim that takes everything it asked for is not.
func TestHTTPClaimHeldBackIsReported(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		var mu sync.Mutex
		var held []string
		c := newClient(t, Config{Store: st, ClaimHeldBack: func(queue string, limit store.HoldBack) {
			mu.Lock()
			defer mu.Unlock()
			held = append(held, queue+"/"+string(limit))
		}})
		for range 3 {
			c.createTask(map[string]any{"kind": "noop", "queue": "capped"})
		}
		c.patchQueue("capped", `{"concurrency": 1}`)
		if got := c.claim("capped", map[string]any{"worker_id": "w1", "limit": 1}); len(got) != 1 {
			t.Fatalf("first claim took %d tasks, want 1", len(got))
		}
		if got := c.claim("capped", map[string]any{"worker_id": "w1", "limit": 2}); len(got) != 0 {
			t.Fatalf("claim past the limit took %d tasks, want 0", len(got))
		}
		c.do("POST", "/api/queues/capped/pause", nil).want(t, http.StatusOK, nil)
		c.claim("capped", map[string]any{"worker_id": "w1"})
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"capped/concurrency", "capped/paused"}; !slices.Equal(held, want) {
			t.Fatalf("held-back reports = %v, want %v", held, want)
		}
	})
}
