package e2e

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// Issue 12 item 7: an SQS queue that loses its messages under load heals by itself, with
// every setting at its default: the ENQUEUED tasks whose messages are gone are sent
// again within 30 s (not after the 5-minute redelivery timeout), and every task still
// succeeds exactly once.

// TestSQSQueuePurgedUnderLoad: PurgeQueue while tasks stream in and a backlog waits.
func TestSQSQueuePurgedUnderLoad(t *testing.T) {
	sqsLossUnderLoad(t, "purge", func(r *sqsRig, url string) {
		if _, err := r.client.PurgeQueue(context.Background(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSQSQueueRecreatedUnderLoad: the queue is deleted and, a moment later, created
// again (by an operator, or a failover to a queue of the same name), under load. The
// processes may not create queues (the default), so they wait for it.
func TestSQSQueueRecreatedUnderLoad(t *testing.T) {
	sqsLossUnderLoad(t, "delete and re-create", func(r *sqsRig, url string) {
		if _, err := r.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
			t.Fatal(err)
		}
		// fauxqs keeps CreatedTimestamp in whole seconds; SQS itself makes one wait 60 s.
		time.Sleep(1500 * time.Millisecond)
		if got := r.sqs.CreateQueue(t, r.queue); got != url {
			t.Fatalf("the re-created queue's URL is %s, was %s", got, url)
		}
	})
}

// sqsLossUnderLoad streams tasks to one `rota serve --mode sqs` and one `rota worker
// --mode sqs` (default settings), makes the SQS queue lose its messages with lose once a
// backlog of sent tasks waits, and checks that every task whose message was lost is sent
// again within 30 s and that all tasks succeed exactly once. It logs the time from the
// loss to the last re-send.
func sqsLossUnderLoad(t *testing.T, what string, lose func(r *sqsRig, url string)) {
	r := newSQSRig(t)
	url := r.sqs.CreateQueue(t, r.queue)
	r.sqs.CreateQueue(t, r.dlq)
	serve := r.startServe("serve", "--log-level", "info")
	r.startWorker("worker")

	// 100 tasks every 100 ms for 6 s (1,000/s) of 1.5 s each: one worker of the default
	// 1,000 handlers runs about 650/s, so a backlog of sent tasks builds up in SQS.
	const batches, perBatch = 60, 100
	var mu sync.Mutex
	var all []uuid.UUID
	var producer sync.WaitGroup
	producer.Go(func() {
		for range batches {
			ids := r.createTasks(sameTasks(perBatch, "sleep", `{"ms":1500}`, 5))
			mu.Lock()
			all = append(all, ids...)
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	})

	// The loss, once at least 500 sent tasks wait.
	waitFor(t, time.Minute, "a backlog of sent tasks", func() (bool, string) {
		n := r.sentBacklog()
		return n >= 500, fmt.Sprintf("%d ENQUEUED", n)
	})
	var lossAt time.Time
	if err := r.pool.QueryRow(context.Background(), `SELECT now()`).Scan(&lossAt); err != nil {
		t.Fatal(err)
	}
	lose(r, url)
	lost := r.sentBefore(lossAt)
	t.Logf("%s: %d ENQUEUED tasks were sent before the loss", what, len(lost.ids))

	// Each must be sent again (or claimed: a few were sent after the loss) within 30 s.
	waitFor(t, 30*time.Second, "every task whose message was lost to be sent again", func() (bool, string) {
		n := r.stillUnsent(lost)
		return n == 0, fmt.Sprintf("%d not sent again", n)
	})
	lastResend := r.lastResend(lost)
	t.Logf("%s: loss to last re-send %s (database clock)", what, lastResend.Sub(lossAt).Round(time.Millisecond))

	producer.Wait()
	total := batches * perBatch
	r.waitStatuses(3*time.Minute, map[string]int{"SUCCEEDED": total})
	for _, m := range regexp.MustCompile(`.*(lost its messages|sent the tasks of a lost SQS queue again).*`).FindAllString(serve.output(), -1) {
		t.Logf("serve: %s", m)
	}
	mu.Lock()
	defer mu.Unlock()
	r.assertFinal(allWant(store.StatusSucceeded, all))
}

// sentBacklog is how many tasks are ENQUEUED with a message sent.
func (r *sqsRig) sentBacklog() int {
	r.t.Helper()
	var n int
	if err := r.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM rota.tasks WHERE status = 'ENQUEUED' AND enqueued_at IS NOT NULL`).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// sentTasks are tasks with the enqueued_at of their last send.
type sentTasks struct {
	ids []uuid.UUID
	at  []time.Time
}

// sentBefore lists the ENQUEUED tasks sent before at.
func (r *sqsRig) sentBefore(at time.Time) sentTasks {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(),
		`SELECT id, enqueued_at FROM rota.tasks WHERE status = 'ENQUEUED' AND enqueued_at < $1`, at)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	var s sentTasks
	for rows.Next() {
		var id uuid.UUID
		var sent time.Time
		if err := rows.Scan(&id, &sent); err != nil {
			r.t.Fatal(err)
		}
		s.ids = append(s.ids, id)
		s.at = append(s.at, sent)
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return s
}

// stillUnsent counts the tasks of s still ENQUEUED from the same send.
func (r *sqsRig) stillUnsent(s sentTasks) int {
	r.t.Helper()
	var n int
	if err := r.pool.QueryRow(context.Background(), `
		SELECT count(*) FROM unnest($1::uuid[], $2::timestamptz[]) AS s(id, at)
		JOIN rota.tasks t ON t.id = s.id
		WHERE t.status = 'ENQUEUED' AND t.enqueued_at = s.at`, s.ids, s.at).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// lastResend is the latest enqueued_at among the tasks of s that were sent again (a
// claim keeps enqueued_at, so it is the re-send's).
func (r *sqsRig) lastResend(s sentTasks) time.Time {
	r.t.Helper()
	var at *time.Time
	if err := r.pool.QueryRow(context.Background(), `
		SELECT max(t.enqueued_at) FROM unnest($1::uuid[], $2::timestamptz[]) AS s(id, at)
		JOIN rota.tasks t ON t.id = s.id
		WHERE t.enqueued_at > s.at`, s.ids, s.at).Scan(&at); err != nil {
		r.t.Fatal(err)
	}
	if at == nil {
		return time.Time{}
	}
	return *at
}
