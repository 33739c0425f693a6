package sqstest

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

// batchSize is SQS's limit for one send, receive or delete.
const batchSize = 10

// ceilingBody stands in for a task id: Rota's messages are UUIDs.
const ceilingBody = "00000000-0000-4000-8000-000000000000"

// MeasureCeiling pushes messages through the queue at queueURL as fast as SQS itself
// allows, with nothing else in the way: clients goroutines send batches of 10 while
// clients goroutines receive (batches of 10, long polling) and delete them (batches of
// 10). It returns messages per second from the first send to the last delete: the
// ceiling against which Rota's SQS mode is measured. The queue should start empty;
// it ends empty.
func MeasureCeiling(ctx context.Context, client *sqs.Client, queueURL string, messages, clients int) (perSecond float64, err error) {
	if messages < 1 || clients < 1 {
		return 0, fmt.Errorf("sqstest: measure ceiling: messages (%d) and clients (%d) must be positive", messages, clients)
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
				n := take(&unsent, batchSize)
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
		return 0, err
	}
	return float64(messages) / time.Duration(elapsed.Load()).Seconds(), nil
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
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(ceilingBody)}
	}
	out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	if err != nil {
		return fmt.Errorf("sqstest: send batch: %w", err)
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("sqstest: send batch: %d of %d failed: %s", len(out.Failed), n, aws.ToString(out.Failed[0].Message))
	}
	return nil
}

// receiveAndDelete receives one batch and deletes it, returning how many it deleted.
func receiveAndDelete(ctx context.Context, client *sqs.Client, queueURL string) (int, error) {
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(queueURL),
		MaxNumberOfMessages: batchSize,
		WaitTimeSeconds:     20,
	})
	if err != nil {
		return 0, fmt.Errorf("sqstest: receive: %w", err)
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
		return 0, fmt.Errorf("sqstest: delete batch: %w", err)
	}
	if len(del.Failed) > 0 {
		return 0, fmt.Errorf("sqstest: delete batch: %d of %d failed: %s", len(del.Failed), len(entries), aws.ToString(del.Failed[0].Message))
	}
	return len(del.Successful), nil
}
