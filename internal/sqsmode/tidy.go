package sqsmode

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// tidyList collects what to do with the received messages that bring no task to run.
type tidyList struct {
	removals map[string][]string // reason -> receipt handles
	hidden   []hiding
}

type hiding struct {
	handle  string
	hideFor time.Duration
}

func (l *tidyList) remove(m types.Message, reason string) {
	if l.removals == nil {
		l.removals = map[string][]string{}
	}
	l.removals[reason] = append(l.removals[reason], aws.ToString(m.ReceiptHandle))
}

func (l *tidyList) hide(m types.Message, d time.Duration) {
	l.hidden = append(l.hidden, hiding{handle: aws.ToString(m.ReceiptHandle), hideFor: d})
}

// tidy deletes and hides the messages on the list. Failures are logged and counted; a
// message that was not deleted comes back and is judged again.
func (s *Source) tidy(ctx context.Context, rq, url string, l *tidyList) {
	var wg sync.WaitGroup
	for reason, handles := range l.removals {
		wg.Go(func() { s.deleteMessages(ctx, rq, url, handles, reason) })
	}
	if len(l.hidden) > 0 {
		wg.Go(func() { s.hideMessages(ctx, rq, url, l.hidden) })
	}
	wg.Wait()
}

// deleteMessages deletes messages of queue url in batches of 10, the batches at once,
// and counts each as deleted for reason or as a delete failure.
func (s *Source) deleteMessages(ctx context.Context, rq, url string, handles []string, reason string) {
	parts := chunks(handles, maxBatch)
	warm.each(len(parts), len(parts), func(i int) { s.deleteChunk(ctx, rq, url, parts[i], reason) })
}

// deleteChunk deletes up to 10 messages of queue url in one DeleteMessageBatch.
func (s *Source) deleteChunk(ctx context.Context, rq, url string, chunk []string, reason string) {
	entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
	for i, h := range chunk {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)}
	}
	cctx, cancel := callContext(ctx, s.cfg.CallTimeout)
	defer cancel()
	out, err := s.client.DeleteMessageBatch(cctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		s.metrics.addDeleteFailures(rq, len(chunk))
		s.log.Warn("deleting messages failed; they will come back and be judged again",
			"queue", rq, "reason", reason, "count", len(chunk), "error", err)
		return
	}
	s.metrics.addDeleted(rq, reason, len(out.Successful))
	if len(out.Failed) > 0 {
		s.metrics.addDeleteFailures(rq, len(out.Failed))
		s.log.Warn("SQS refused to delete messages; they will come back and be judged again",
			"queue", rq, "reason", reason, "count", len(out.Failed), "error", aws.ToString(out.Failed[0].Message))
	}
}

// hideMessages changes the visibility timeout of messages of queue url, in batches of 10.
func (s *Source) hideMessages(ctx context.Context, rq, url string, hidden []hiding) {
	for _, chunk := range chunks(hidden, maxBatch) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, h := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h.handle), VisibilityTimeout: visibilitySeconds(h.hideFor),
			}
		}
		cctx, cancel := callContext(ctx, s.cfg.CallTimeout)
		out, err := s.client.ChangeMessageVisibilityBatch(cctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
		cancel()
		if err != nil {
			// The messages come back after the receive's visibility timeout instead.
			s.log.Warn("hiding messages failed", "queue", rq, "count", len(chunk), "error", err)
			continue
		}
		s.metrics.addDeferred(rq, len(out.Successful))
		if len(out.Failed) > 0 {
			s.log.Warn("SQS refused to hide messages", "queue", rq, "count", len(out.Failed), "error", aws.ToString(out.Failed[0].Message))
		}
	}
}
