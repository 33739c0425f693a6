package sqsmode

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// maxBatch is SQS's limit for one batch call (send, delete, change visibility) and for
// one receive.
const maxBatch = 10

// MaxReceiveBatch is the most messages one receive returns.
const MaxReceiveBatch = maxBatch

// FetchBatch is the worker's runtime.Config.FetchBatch in SQS mode: the most tasks one
// Fetch claims. Under a backlog a Fetch receives that many with concurrent receives of
// 10 (one long poll, then short polls while the first came back full) and claims them
// in one statement, shared with the worker's other fetches (claimBatcher): a claim's
// planning and commit cost the database about as much for 100 ids as for 10. It bounds
// what a worker has in flight from SQS (FetchLoops fetches of FetchBatch), whatever its
// slots: at 40 (before session 11) claims stayed near 50 ids and outcome batches near
// 45 with 1,000 slots as with 100; at 100 they are about 115 and 80
// (docs/performance.md, "SQS mode (session 11)").
const FetchBatch = 10 * maxBatch

// maxVisibility is the longest visibility timeout SQS accepts: 12 hours.
const maxVisibility = 12 * time.Hour

// chunks splits items into consecutive slices of at most size.
func chunks[T any](items []T, size int) [][]T {
	var out [][]T
	for len(items) > 0 {
		n := min(size, len(items))
		out = append(out, items[:n:n])
		items = items[n:]
	}
	return out
}

// visibilitySeconds is d as an SQS visibility timeout: whole seconds rounded up, within
// 0 to 12 hours.
func visibilitySeconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32(min(math.Ceil(d.Seconds()), maxVisibility.Seconds()))
}

// callContext bounds one SQS call made on behalf of work that must finish even when the
// caller is stopping (a delete after a commit, say): it keeps ctx's values, drops its
// cancellation and adds timeout.
func callContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}

// sendBatch sends bodies (at most maxBatch) to q in one SendMessageBatch and returns the
// indexes of the bodies SQS accepted; the error, if any, says why the others were not.
// When SQS reports the queue missing and creating is on, it creates the queue again and
// retries once: the messages of an emulator that restarted empty are lost, and the
// database sends them again, so the queue must exist again for that. ctx bounds the call.
func sendBatch(ctx context.Context, client *sqs.Client, q *sqsQueue, bodies []string) ([]int, error) {
	entries := make([]types.SendMessageBatchRequestEntry, len(bodies))
	for i, body := range bodies {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body)}
	}
	for try := 0; ; try++ {
		url, err := q.url(ctx)
		if err != nil {
			return nil, err
		}
		out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if isQueueMissing(err) && try == 0 {
			healed, herr := q.heal(ctx, url)
			if herr != nil {
				return nil, fmt.Errorf("send to SQS queue %q: %w (and creating it again failed: %w)", q.name, err, herr)
			}
			if healed {
				continue
			}
		}
		if err != nil {
			return nil, fmt.Errorf("send to SQS queue %q: %w", q.name, err)
		}
		accepted := make([]int, 0, len(out.Successful))
		for _, e := range out.Successful {
			if i, err := strconv.Atoi(aws.ToString(e.Id)); err == nil && i >= 0 && i < len(bodies) {
				accepted = append(accepted, i)
			}
		}
		if len(out.Failed) > 0 {
			f := out.Failed[0]
			return accepted, fmt.Errorf("send to SQS queue %q: %d of %d messages refused (first: %s %s)",
				q.name, len(out.Failed), len(bodies), aws.ToString(f.Code), aws.ToString(f.Message))
		}
		return accepted, nil
	}
}
