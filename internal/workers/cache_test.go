package workers

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// countingRegistry answers ListWorkers from a fixed list and counts the calls.
type countingRegistry struct {
	store.WorkerRegistry
	calls   atomic.Int32
	workers []store.Worker
	err     error
}

func (r *countingRegistry) ListWorkers(_ context.Context, p store.WorkerListParams) ([]store.Worker, error) {
	r.calls.Add(1)
	if r.err != nil {
		return nil, r.err
	}
	var out []store.Worker
	for _, w := range r.workers {
		for _, q := range w.Queues {
			if p.Queue == "" || q == p.Queue {
				out = append(out, w)
				break
			}
		}
	}
	return out, nil
}

// Answers are reused for the TTL (one query per queue), then read again; errors are
// not kept.
func TestCacheReusesAnswersForTheTTL(t *testing.T) {
	reg := &countingRegistry{workers: []store.Worker{{ID: "a", Queues: []string{"q"}}}}
	now := time.Unix(0, 0)
	c := NewCache(reg, CacheConfig{TTL: time.Second, Now: func() time.Time { return now }})
	for range 3 {
		if ws, err := c.Queue(t.Context(), "q"); err != nil || len(ws) != 1 {
			t.Fatalf("Queue(q) = %v, %v", ws, err)
		}
	}
	if n := reg.calls.Load(); n != 1 {
		t.Fatalf("%d queries within the TTL, want 1", n)
	}
	now = now.Add(time.Second)
	_, _ = c.Queue(t.Context(), "q")
	if n := reg.calls.Load(); n != 2 {
		t.Fatalf("%d queries after the TTL, want 2", n)
	}
	reg.err = errors.New("down")
	for range 2 {
		if _, err := c.Queue(t.Context(), "other"); err == nil {
			t.Fatal("the registry's error was not returned")
		}
	}
	if n := reg.calls.Load(); n != 4 {
		t.Fatalf("%d queries, want 4: a failed answer must not be cached", n)
	}
}

func TestWarnings(t *testing.T) {
	reg := &countingRegistry{workers: []store.Worker{
		{ID: "go", Queues: []string{"images"}, Kinds: []string{"thumbnail"}},
		{ID: "py", Queues: []string{"py"}}, // kinds unknown
	}}
	c := NewCache(reg, CacheConfig{})
	got, err := c.Warnings(t.Context(), []QueueKind{
		{"images", "thumbnail"}, {"images", "resize"}, {"images", "resize"},
		{"py", "anything"}, {"empty", "a"}, {"empty", "b"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.Contains(got[0], `handles kind "resize" (they handle: thumbnail)`) ||
		!strings.Contains(got[1], `queue "empty" has no live worker`) {
		t.Errorf("warnings = %q", got)
	}
}

func TestUnserved(t *testing.T) {
	due := time.Now()
	stats := []store.QueueStats{
		{Queue: "served", OldestDueAt: &due},
		{Queue: "orphan", OldestDueAt: &due},
		{Queue: "later", Counts: map[store.Status]int64{store.StatusPending: 3}}, // nothing due
		{Queue: "sqs", Counts: map[store.Status]int64{store.StatusEnqueued: 1}},
	}
	got := Unserved(stats, []store.Worker{{ID: "w", Queues: []string{"served"}}})
	if strings.Join(got, ",") != "orphan,sqs" {
		t.Errorf("Unserved = %v, want [orphan sqs]", got)
	}
}
