package sqsmode

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"
)

// sender sends task ids to the SQS queue of one Rota queue: it is the send function
// the enqueuer hands to Store.EnqueueDue.
type sender struct {
	client      *sqs.Client
	rotaQueue   string
	queue       *sqsQueue
	concurrency int           // SendMessageBatch calls in flight at once
	timeout     time.Duration // per call: the database locks are held meanwhile
	metrics     *Metrics
}

// send sends ids in batches of 10, several batches at once, and returns the ids SQS
// accepted. A batch that fails, or an entry SQS refuses, leaves its ids out: their tasks
// stay eligible for the next round. The error describes the failures, if any.
func (s *sender) send(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
	var (
		mu   sync.Mutex
		sent = make([]uuid.UUID, 0, len(ids))
		errs []error
	)
	var g errgroup.Group
	g.SetLimit(s.concurrency)
	for _, chunk := range chunks(ids, maxBatch) {
		g.Go(func() error {
			ok, err := s.sendChunk(ctx, chunk)
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, ok...)
			if err != nil {
				errs = append(errs, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	s.metrics.addSent(s.rotaQueue, len(sent))
	if failed := len(ids) - len(sent); failed > 0 {
		s.metrics.addSendFailures(s.rotaQueue, failed)
	}
	return sent, errors.Join(errs...)
}

// sendChunk sends up to 10 ids in one SendMessageBatch. When SQS reports the queue
// missing and creating is on, it creates the queue again and retries once: the messages
// of an emulator that restarted empty are lost, and the enqueuer's redelivery resends
// them, so the queue must exist again for that.
func (s *sender) sendChunk(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
	entries := make([]types.SendMessageBatchRequestEntry, len(ids))
	for i, id := range ids {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(id.String())}
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	for try := 0; ; try++ {
		url, err := s.queue.url(cctx)
		if err != nil {
			return nil, err
		}
		out, err := s.client.SendMessageBatch(cctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if isQueueMissing(err) && try == 0 {
			healed, herr := s.queue.heal(cctx, url)
			if herr != nil {
				return nil, fmt.Errorf("send to SQS queue %q: %w (and creating it again failed: %w)", s.queue.name, err, herr)
			}
			if healed {
				continue
			}
		}
		if err != nil {
			return nil, fmt.Errorf("send to SQS queue %q: %w", s.queue.name, err)
		}
		sent := make([]uuid.UUID, 0, len(out.Successful))
		for _, e := range out.Successful {
			if i, err := strconv.Atoi(aws.ToString(e.Id)); err == nil && i >= 0 && i < len(ids) {
				sent = append(sent, ids[i])
			}
		}
		if len(out.Failed) > 0 {
			f := out.Failed[0]
			return sent, fmt.Errorf("send to SQS queue %q: %d of %d entries refused (first: %s %s)",
				s.queue.name, len(out.Failed), len(ids), aws.ToString(f.Code), aws.ToString(f.Message))
		}
		return sent, nil
	}
}
