package sqsmode

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// DeadTaskEvent is the JSON message published to the dead-letter queue when a task ends
// DEAD (attempts exhausted) or FAILED (a permanent error). It is the task's
// rota.dead_letters row, which the database writes on every path.
type DeadTaskEvent struct {
	TaskID       uuid.UUID    `json:"task_id"`
	Kind         string       `json:"kind"`
	Queue        string       `json:"queue"`
	WorkerID     string       `json:"worker_id"`
	AttemptCount int          `json:"attempt_count"`
	MaxAttempts  int          `json:"max_attempts"`
	Error        string       `json:"error"`
	Reason       store.Status `json:"reason"`    // DEAD or FAILED
	Timestamp    time.Time    `json:"timestamp"` // when it was recorded; RFC 3339, UTC
}

func deadTaskEvent(d store.DeadLetter) DeadTaskEvent {
	return DeadTaskEvent{
		TaskID: d.TaskID, Kind: d.Kind, Queue: d.Queue, WorkerID: d.WorkerID,
		AttemptCount: d.AttemptCount, MaxAttempts: d.MaxAttempts, Error: d.Error,
		Reason: d.Reason, Timestamp: d.CreatedAt.UTC(),
	}
}

// dlqRelay publishes the dead letters the database holds for the DLQ (the outbox of
// migration 0008: every dead letter of an SQS-mode task, whatever ended it, the worker's
// outcome, the HTTP worker protocol or the lease reaper) and marks them published
// (Store.PublishDeadLetters). At least once: a publish that fails, or a relay that dies
// before its commit, leaves the events awaiting, and the next round sends them again.
// Relays run side by side (SKIP LOCKED).
type dlqRelay struct {
	store      store.Store
	client     *sqs.Client
	queue      *sqsQueue
	rotaQueues []string
	interval   time.Duration
	timeout    time.Duration
	metrics    *Metrics
	log        *slog.Logger
}

// run publishes until ctx ends: a round every interval, rounds back to back while they
// come back full, and longer pauses while publishing fails.
func (r *dlqRelay) run(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		n, err := r.round(ctx)
		pause := r.interval
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			pause = failureBackoff(r.interval, failures)
			r.log.Warn("dead-letter events not published; the database keeps them for the next round",
				"sqs_queue", r.queue.name, "published", n, "failures", failures, "error", err)
		case n >= store.MaxListLimit:
			failures = 0
			continue // a backlog: the next round at once
		default:
			if failures > 0 {
				r.log.Info("dead-letter events published again", "sqs_queue", r.queue.name, "after_failures", failures)
			}
			failures = 0
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// round publishes one batch of awaiting events and returns how many were marked.
func (r *dlqRelay) round(ctx context.Context) (int, error) {
	return r.store.PublishDeadLetters(ctx, store.PublishParams{Queues: r.rotaQueues, Limit: store.MaxListLimit}, r.publish)
}

// publish sends events in batches of 10 and returns the ids SQS accepted.
func (r *dlqRelay) publish(ctx context.Context, letters []store.DeadLetter) ([]int64, error) {
	var published []int64
	for _, chunk := range chunks(letters, maxBatch) {
		ok, err := r.publishChunk(ctx, chunk)
		published = append(published, ok...)
		if err != nil {
			r.metrics.addDLQFailures(len(chunk) - len(ok))
			return published, err
		}
	}
	return published, nil
}

// publishChunk sends up to 10 events in one SendMessageBatch (sendBatch) and returns the
// ids SQS accepted.
func (r *dlqRelay) publishChunk(ctx context.Context, letters []store.DeadLetter) ([]int64, error) {
	bodies := make([]string, len(letters))
	for i, d := range letters {
		body, err := json.Marshal(deadTaskEvent(d))
		if err != nil {
			return nil, fmt.Errorf("encode event: %w", err)
		}
		bodies[i] = string(body)
	}
	cctx, cancel := callContext(ctx, r.timeout)
	defer cancel()
	accepted, err := sendBatch(cctx, r.client, r.queue, bodies)
	ok := make([]int64, len(accepted))
	for i, k := range accepted {
		ok[i] = letters[k].ID
	}
	r.metrics.addDLQPublished(len(ok))
	return ok, err
}
