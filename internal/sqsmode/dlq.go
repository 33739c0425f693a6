package sqsmode

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

// DeadTaskEvent is the JSON message published to the dead-letter queue when a task ends
// DEAD (attempts exhausted) or FAILED (a permanent error). Its fields match the task's
// rota.dead_letters row, which the database writes on every path regardless.
type DeadTaskEvent struct {
	TaskID       uuid.UUID    `json:"task_id"`
	Kind         string       `json:"kind"`
	Queue        string       `json:"queue"`
	WorkerID     string       `json:"worker_id"`
	AttemptCount int          `json:"attempt_count"`
	MaxAttempts  int          `json:"max_attempts"`
	Error        string       `json:"error"`
	Reason       store.Status `json:"reason"`    // DEAD or FAILED
	Timestamp    time.Time    `json:"timestamp"` // RFC 3339, UTC
}

// deadTaskEvent is the event of a settled delivery, if its task just ended DEAD or FAILED.
func deadTaskEvent(s runtime.Settled, now time.Time) (DeadTaskEvent, bool) {
	if s.Result.Err != nil || (s.Result.Status != store.StatusDead && s.Result.Status != store.StatusFailed) {
		return DeadTaskEvent{}, false
	}
	t := s.Delivery.Task
	return DeadTaskEvent{
		TaskID:       t.ID,
		Kind:         t.Kind,
		Queue:        t.Queue,
		WorkerID:     t.WorkerID,
		AttemptCount: t.AttemptCount, // the claim counted this attempt
		MaxAttempts:  t.MaxAttempts,
		Error:        store.TruncateError(s.Outcome.Error), // as the store wrote last_error
		Reason:       s.Result.Status,
		Timestamp:    now.UTC(),
	}, true
}

// dlqPublisher publishes dead-task events, best-effort: each call is bounded by a short
// timeout, and a failure is logged and counted, never returned, because the database has
// already recorded the dead letter and the original message must still be deleted.
type dlqPublisher struct {
	client  *sqs.Client
	queue   *sqsQueue
	timeout time.Duration
	metrics *Metrics
	log     *slog.Logger
}

func (p *dlqPublisher) publish(ctx context.Context, events []DeadTaskEvent) {
	for _, chunk := range chunks(events, maxBatch) {
		if err := p.publishChunk(ctx, chunk); err != nil {
			p.metrics.addDLQFailures(len(chunk))
			p.log.Warn("dead-letter events not published (the database has them)",
				"sqs_queue", p.queue.name, "count", len(chunk), "first_task_id", chunk[0].TaskID, "error", err)
		}
	}
}

// publishChunk sends up to 10 events in one call, creating the DLQ again if SQS reports
// it missing and creating is on.
func (p *dlqPublisher) publishChunk(ctx context.Context, events []DeadTaskEvent) error {
	entries := make([]types.SendMessageBatchRequestEntry, len(events))
	for i, ev := range events {
		body, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body))}
	}
	cctx, cancel := callContext(ctx, p.timeout)
	defer cancel()
	for try := 0; ; try++ {
		url, err := p.queue.url(cctx)
		if err != nil {
			return err
		}
		out, err := p.client.SendMessageBatch(cctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if isQueueMissing(err) && try == 0 {
			if healed, herr := p.queue.heal(cctx, url); herr == nil && healed {
				continue
			}
		}
		if err != nil {
			return err
		}
		p.metrics.addDLQPublished(len(out.Successful))
		if len(out.Failed) > 0 {
			p.metrics.addDLQFailures(len(out.Failed))
			p.log.Warn("dead-letter events refused by SQS (the database has them)", "sqs_queue", p.queue.name,
				"count", len(out.Failed), "error", aws.ToString(out.Failed[0].Message))
		}
		return nil
	}
}
