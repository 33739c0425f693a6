package rota_test

import (
	"errors"
	"testing"

	"github.com/rotaqueue/rota"
)

// The queue settings through the Go API, on both stores, and the group key on enqueue.
func TestQueueOperations(t *testing.T) {
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		q, err := c.QueueSettings(ctx, "mail")
		if err != nil || q.Limited() || q.UpdatedAt != nil {
			t.Fatalf("unconfigured queue: %+v, %v", q, err)
		}
		five := 5
		q, err = c.UpdateQueue(ctx, "mail", rota.QueuePatch{Concurrency: &rota.Change[int]{To: &five},
			GroupRate: &rota.Change[rota.RateLimit]{To: &rota.RateLimit{Limit: 2, PerSeconds: 10}}})
		if err != nil || *q.Concurrency != 5 || *q.GroupRate != (rota.RateLimit{Limit: 2, PerSeconds: 10}) {
			t.Fatalf("UpdateQueue: %+v, %v", q, err)
		}
		if q, err = c.PauseQueue(ctx, "mail"); err != nil || !q.Paused || *q.Concurrency != 5 {
			t.Fatalf("PauseQueue: %+v, %v", q, err)
		}
		if q, err = c.ResumeQueue(ctx, "mail"); err != nil || q.Paused {
			t.Fatalf("ResumeQueue: %+v, %v", q, err)
		}
		if q, err = c.UpdateQueue(ctx, "mail", rota.QueuePatch{Concurrency: &rota.Change[int]{}}); err != nil || q.Concurrency != nil || q.GroupRate == nil {
			t.Fatalf("removing a limit: %+v, %v", q, err)
		}
		zero := 0
		if _, err := c.UpdateQueue(ctx, "mail", rota.QueuePatch{Concurrency: &rota.Change[int]{To: &zero}}); !errors.Is(err, rota.ErrInvalid) {
			t.Fatalf("concurrency 0: %v, want ErrInvalid", err)
		}
		if all, err := c.Queues(ctx); err != nil || len(all) != 1 || all[0].Queue != "mail" {
			t.Fatalf("Queues: %+v, %v", all, err)
		}

		task, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "noop", Queue: "mail", GroupKey: "tenant-1"})
		if err != nil || task.GroupKey != "tenant-1" {
			t.Fatalf("Enqueue with a group key: %+v, %v", task, err)
		}
		if got, err := c.Get(ctx, task.ID); err != nil || got.GroupKey != "tenant-1" {
			t.Fatalf("Get: %+v, %v", got, err)
		}
		long := make([]byte, rota.MaxGroupKeyLength+1)
		for i := range long {
			long[i] = 'k'
		}
		if _, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "noop", GroupKey: string(long)}); !errors.Is(err, rota.ErrInvalid) {
			t.Fatalf("a group key too long: %v, want ErrInvalid", err)
		}
	})
}
