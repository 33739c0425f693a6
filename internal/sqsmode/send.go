package sqsmode

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"
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
	parts := chunks(ids, maxBatch)
	warm.each(len(parts), s.concurrency, func(i int) {
		ok, err := s.sendChunk(ctx, parts[i])
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, ok...)
		if err != nil {
			errs = append(errs, err)
		}
	})
	s.metrics.addSent(s.rotaQueue, len(sent))
	if failed := len(ids) - len(sent); failed > 0 {
		s.metrics.addSendFailures(s.rotaQueue, failed)
	}
	return sent, errors.Join(errs...)
}

// sendChunk sends up to 10 ids in one SendMessageBatch (sendBatch) and returns the ids
// SQS accepted.
func (s *sender) sendChunk(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
	bodies := make([]string, len(ids))
	for i, id := range ids {
		bodies[i] = id.String()
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	accepted, err := sendBatch(cctx, s.client, s.queue, bodies)
	sent := make([]uuid.UUID, len(accepted))
	for i, k := range accepted {
		sent[i] = ids[k]
	}
	return sent, err
}
