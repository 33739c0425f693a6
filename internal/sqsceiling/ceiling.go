// Package sqsceiling measures the raw throughput of an SQS queue: messages sent,
// received and deleted in batches of 10 as fast as the endpoint allows, with nothing
// else in the way. It is the ceiling Rota's SQS mode is compared with, by `rota bench
// --workload sqs` and by the tests' benchmarks (sqstest.MeasureCeiling).
package sqsceiling

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"golang.org/x/sync/errgroup"
)

// BatchSize is SQS's limit for one send, receive or delete.
const BatchSize = 10

// body stands in for a task id: Rota's messages are UUIDs.
const body = "00000000-0000-4000-8000-000000000000"

// Result is one measurement.
type Result struct {
	Messages int
	Clients  int
	// Elapsed is from the first send to the delete of the last message.
	Elapsed time.Duration
}

// PerSecond is the messages sent, received and deleted per second.
func (r Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Messages) / r.Elapsed.Seconds()
}

// Measure pushes messages through the queue at queueURL: clients goroutines send
// batches of 10 while clients goroutines receive (batches of 10, long polling) and
// delete them (batches of 10). The queue should start empty; it ends empty.
func Measure(ctx context.Context, client *sqs.Client, queueURL string, messages, clients int) (Result, error) {
	if messages < 1 || clients < 1 {
		return Result{}, fmt.Errorf("sqs ceiling: messages (%d) and clients (%d) must be positive", messages, clients)
	}
	g, ctx := errgroup.WithContext(ctx)
	// Receivers still long polling once everything is deleted are cancelled through this.
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()

	var unsent, deleted atomic.Int64
	unsent.Store(int64(messages))
	var elapsed atomic.Int64 // set by the delete that completes the run
	start := time.Now()
	for range clients {
		g.Go(func() error {
			for {
				n := take(&unsent, BatchSize)
				if n == 0 {
					return nil
				}
				if err := sendBatch(ctx, client, queueURL, n); err != nil {
					return err
				}
			}
		})
		g.Go(func() error {
			for deleted.Load() < int64(messages) {
				n, err := receiveAndDelete(pollCtx, client, queueURL)
				if err != nil {
					if pollCtx.Err() != nil && ctx.Err() == nil {
						return nil // another receiver deleted the last message
					}
					return err
				}
				if deleted.Add(int64(n)) >= int64(messages) {
					elapsed.CompareAndSwap(0, int64(time.Since(start)))
					stopPolling()
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Result{}, err
	}
	return Result{Messages: messages, Clients: clients, Elapsed: time.Duration(elapsed.Load())}, nil
}

// take removes up to limit from n and returns how many it took.
func take(n *atomic.Int64, limit int64) int64 {
	for {
		cur := n.Load()
		if cur <= 0 {
			return 0
		}
		k := min(cur, limit)
		if n.CompareAndSwap(cur, cur-k) {
			return k
		}
	}
}

func sendBatch(ctx context.Context, client *sqs.Client, queueURL string, n int64) error {
	entries := make([]types.SendMessageBatchRequestEntry, n)
	for i := range entries {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body)}
	}
	out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	if err != nil {
		return fmt.Errorf("sqs ceiling: send batch: %w", err)
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("sqs ceiling: send batch: %d of %d failed: %s", len(out.Failed), n, aws.ToString(out.Failed[0].Message))
	}
	return nil
}

// receiveAndDelete receives one batch and deletes it, returning how many it deleted.
func receiveAndDelete(ctx context.Context, client *sqs.Client, queueURL string) (int, error) {
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(queueURL),
		MaxNumberOfMessages: BatchSize,
		WaitTimeSeconds:     20,
	})
	if err != nil {
		return 0, fmt.Errorf("sqs ceiling: receive: %w", err)
	}
	if len(out.Messages) == 0 {
		return 0, nil
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
	for i, m := range out.Messages {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
	}
	del, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	if err != nil {
		return 0, fmt.Errorf("sqs ceiling: delete batch: %w", err)
	}
	if len(del.Failed) > 0 {
		return 0, fmt.Errorf("sqs ceiling: delete batch: %d of %d failed: %s", len(del.Failed), len(entries), aws.ToString(del.Failed[0].Message))
	}
	return len(del.Successful), nil
}
