package sqsmode_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
)

func TestEnqueuerSendsDueTasksOnceAndMarksThem(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true, "default", "emails")
	m := sqsmode.NewMetrics(nil)
	enq := e.enqueuer(qs, m, func(c *sqsmode.EnqueuerConfig) { c.BatchSize = 25 })

	due := e.createN(60, store.CreateParams{Kind: "noop"})
	later := e.create(store.CreateParams{Kind: "noop", ScheduledFor: time.Now().Add(time.Hour)})[0]
	emails := e.createN(3, store.CreateParams{Kind: "noop", Queue: "emails"})

	ctx := context.Background()
	var rounds []int
	for {
		n, err := enq.Round(ctx, "default")
		if err != nil {
			t.Fatalf("Round: %v", err)
		}
		if n == 0 {
			break
		}
		rounds = append(rounds, n)
	}
	if !slices.Equal(rounds, []int{25, 25, 10}) {
		t.Errorf("rounds marked %v, want [25 25 10] (batches of 25)", rounds)
	}
	for _, id := range due {
		task := e.get(id)
		if task.Status != store.StatusEnqueued || task.EnqueuedAt == nil {
			t.Errorf("task %s: status %s, enqueued_at %v; want ENQUEUED with enqueued_at", id, task.Status, task.EnqueuedAt)
		}
	}
	if s := e.get(later).Status; s != store.StatusPending {
		t.Errorf("task due in an hour is %s, want PENDING (not sent)", s)
	}
	for _, id := range emails {
		if s := e.get(id).Status; s != store.StatusPending {
			t.Errorf("task of queue emails is %s after rounds of default, want PENDING", s)
		}
	}

	bodies := e.receiveAll(e.url("rota"))
	slices.Sort(bodies)
	want := idStrings(due)
	slices.Sort(want)
	if !slices.Equal(bodies, want) {
		t.Errorf("queue rota holds %d messages, want each of the %d due ids exactly once", len(bodies), len(want))
	}
	if got := m.Stats().Sent; got != 60 {
		t.Errorf("Stats().Sent = %d, want 60", got)
	}

	// The emails queue goes to its own SQS queue.
	if n, err := enq.Round(ctx, "emails"); err != nil || n != 3 {
		t.Fatalf("Round(emails) = %d, %v; want 3", n, err)
	}
	if got := e.receiveAll(e.url("rota-emails")); len(got) != 3 {
		t.Errorf("queue rota-emails holds %d messages, want 3", len(got))
	}
	if _, err := enq.Round(ctx, "elsewhere"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Round of a queue not served: %v, want ErrInvalid", err)
	}
}

func TestConcurrentEnqueuersSendEachTaskOnce(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	ids := e.createN(500, store.CreateParams{Kind: "noop"})

	// Three enqueuers, as in three servers, race through rounds until nothing is left.
	var wg sync.WaitGroup
	for range 3 {
		enq := e.enqueuer(qs, nil, func(c *sqsmode.EnqueuerConfig) { c.BatchSize = 20 })
		wg.Go(func() {
			for {
				n, err := enq.Round(context.Background(), "default")
				if err != nil {
					t.Errorf("Round: %v", err)
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	e.waitAll(ids, store.StatusEnqueued)
	bodies := e.receiveAll(e.url("rota"))
	seen := map[string]int{}
	for _, b := range bodies {
		seen[b]++
	}
	for _, id := range ids {
		if seen[id.String()] != 1 {
			t.Errorf("task %s was sent %d times, want once", id, seen[id.String()])
		}
	}
	if len(bodies) != len(ids) {
		t.Errorf("%d messages for %d tasks", len(bodies), len(ids))
	}
}

func TestFailedSendLeavesTasksPending(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	e.srv.CreateQueue(t, "rota")
	e.srv.CreateQueue(t, "rota-dlq")
	qs := e.queues(false) // the queues exist now; they will not be created again
	m := sqsmode.NewMetrics(nil)
	enq := e.enqueuer(qs, m, nil)
	ids := e.createN(15, store.CreateParams{Kind: "noop"})

	if _, err := e.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(e.url("rota"))}); err != nil {
		t.Fatalf("DeleteQueue: %v", err)
	}
	n, err := enq.Round(context.Background(), "default")
	if err == nil || n != 0 {
		t.Fatalf("Round with the SQS queue gone = %d, %v; want 0 and an error", n, err)
	}
	for _, id := range ids {
		if task := e.get(id); task.Status != store.StatusPending || task.EnqueuedAt != nil {
			t.Errorf("task %s: %s, enqueued_at %v after a failed send; want PENDING, never sent", id, task.Status, task.EnqueuedAt)
		}
	}
	if got := m.Stats().SendFailures; got != 15 {
		t.Errorf("Stats().SendFailures = %d, want 15", got)
	}

	// Once the queue is back, the same tasks are sent.
	e.srv.CreateQueue(t, "rota")
	if n, err := enq.Round(context.Background(), "default"); err != nil || n != 15 {
		t.Fatalf("Round after the queue is back = %d, %v; want 15", n, err)
	}
}

func TestEnqueuerCreatesAMissingQueueAgainWhenAsked(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	enq := e.enqueuer(qs, nil, nil)
	ids := e.createN(12, store.CreateParams{Kind: "noop"})
	if _, err := e.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(e.url("rota"))}); err != nil {
		t.Fatalf("DeleteQueue: %v", err)
	}
	if n, err := enq.Round(context.Background(), "default"); err != nil || n != len(ids) {
		t.Fatalf("Round = %d, %v; want %d (the queue created again)", n, err, len(ids))
	}
	if got := len(e.receiveAll(e.url("rota"))); got != len(ids) {
		t.Errorf("the recreated queue holds %d messages, want %d", got, len(ids))
	}
}

func TestEnqueuerResendsAfterTheRedeliveryTimeout(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	enq := e.enqueuer(qs, nil, func(c *sqsmode.EnqueuerConfig) { c.RedeliverAfter = 300 * time.Millisecond })
	id := e.create(store.CreateParams{Kind: "noop"})[0]
	ctx := context.Background()
	if n, err := enq.Round(ctx, "default"); err != nil || n != 1 {
		t.Fatalf("first Round = %d, %v; want 1", n, err)
	}
	first := *e.get(id).EnqueuedAt
	// The message is lost: nothing claims the task, so after the timeout it is sent again.
	e.receiveAll(e.url("rota"))
	waitFor(t, "the task to be sent again", func() bool {
		n, err := enq.Round(ctx, "default")
		if err != nil {
			t.Fatalf("Round: %v", err)
		}
		return n == 1
	})
	task := e.get(id)
	if task.Status != store.StatusEnqueued || !task.EnqueuedAt.After(first) {
		t.Errorf("after the resend: %s, enqueued_at %v (first %v); want ENQUEUED with a later enqueued_at", task.Status, task.EnqueuedAt, first)
	}
	if got := e.receiveAll(e.url("rota")); len(got) != 1 || got[0] != id.String() {
		t.Errorf("after the resend the queue holds %v, want the task id once", got)
	}
}
