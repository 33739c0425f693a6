package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// Throughput counts finished tasks per bucket; see store.Insights. It walks every task:
// the memory store serves development, where that is cheap enough.
func (s *Store) Throughput(ctx context.Context, since time.Time, bucket time.Duration) ([]store.ThroughputBucket, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.ValidateThroughput(since, bucket); err != nil {
		return nil, fmt.Errorf("throughput: %w", err)
	}
	since = dbTime(since)
	s.mu.Lock()
	defer s.mu.Unlock()
	byIndex := map[int64]*store.ThroughputBucket{}
	for _, e := range s.tasks {
		t := &e.task
		if t.CompletedAt == nil || t.CompletedAt.Before(since) {
			continue
		}
		failed := t.Status == store.StatusDead || t.Status == store.StatusFailed
		if t.Status != store.StatusSucceeded && !failed {
			continue
		}
		k := int64(t.CompletedAt.Sub(since) / bucket)
		b := byIndex[k]
		if b == nil {
			b = &store.ThroughputBucket{Start: since.Add(time.Duration(k) * bucket)}
			byIndex[k] = b
		}
		if failed {
			b.Failed++
		} else {
			b.Succeeded++
		}
	}
	out := make([]store.ThroughputBucket, 0, len(byIndex))
	for _, b := range byIndex {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b store.ThroughputBucket) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// StuckTasks returns PROCESSING tasks past their lease; see store.Insights.
func (s *Store) StuckTasks(ctx context.Context, limit int) ([]*store.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.ValidateStuckLimit(limit); err != nil {
		return nil, fmt.Errorf("stuck tasks: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	out := []*store.Task{}
	for _, e := range s.processing {
		if e.task.LeaseExpiresAt.Before(now) {
			out = append(out, cloneTask(&e.task))
		}
	}
	slices.SortFunc(out, func(a, b *store.Task) int {
		return cmp.Or(a.LeaseExpiresAt.Compare(*b.LeaseExpiresAt), compareIDs(a.ID, b.ID))
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// RunningByGroup counts PROCESSING tasks per group; see store.Insights.
func (s *Store) RunningByGroup(ctx context.Context, queues []string) ([]store.GroupRunning, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.ValidateQueues(queues); err != nil {
		return nil, fmt.Errorf("running by group: %w", err)
	}
	asked := make(map[string]bool, len(queues))
	for _, q := range queues {
		asked[q] = true
	}
	type key struct{ queue, group string }
	counts := map[key]int64{}
	s.mu.Lock()
	for _, e := range s.processing {
		if e.task.GroupKey != "" && asked[e.task.Queue] {
			counts[key{e.task.Queue, e.task.GroupKey}]++
		}
	}
	s.mu.Unlock()
	out := make([]store.GroupRunning, 0, len(counts))
	for k, n := range counts {
		out = append(out, store.GroupRunning{Queue: k.queue, GroupKey: k.group, Running: n})
	}
	store.SortGroupRunning(out)
	return out, nil
}
