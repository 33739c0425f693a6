package sqsmode

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
)

// extendGather is how long the first visibility extension of a burst waits for the rest.
// The runtime beats every due task at once (a few at a time, each after its own store
// heartbeat), so the extensions of a worker's running tasks arrive within milliseconds
// of each other; a lease is seconds at least, so the wait costs nothing.
const extendGather = 10 * time.Millisecond

// extendBatcher turns the per-delivery Extend calls of the heartbeats into
// ChangeMessageVisibilityBatch calls of up to 10 messages per SQS queue: one flush at a
// time sends everything pending, and what arrives meanwhile goes with the next flush.
type extendBatcher struct {
	src *Source

	mu       sync.Mutex
	pending  []extension
	flushing bool
}

// extension is one delivery's message to keep hidden for seconds more.
type extension struct {
	rq      string // the task's Rota queue, for logs
	taskID  uuid.UUID
	r       receipt
	seconds int32
}

// add queues an extension and starts a flush unless one is running. A flush that finds
// no background slot is skipped, as a single extension was before: a missed extension
// costs at most a duplicate delivery, which the claim rejects.
func (b *extendBatcher) add(ctx context.Context, x extension) {
	b.mu.Lock()
	b.pending = append(b.pending, x)
	start := !b.flushing
	b.flushing = true
	b.mu.Unlock()
	if !start {
		return
	}
	if !b.src.extends.tryGo(func() { b.flush(ctx) }) {
		b.mu.Lock()
		dropped := len(b.pending)
		b.pending, b.flushing = nil, false
		b.mu.Unlock()
		b.src.log.Debug("too many visibility extensions in flight; skipped some", "count", dropped)
	}
}

// flush sends what is pending, after extendGather, until nothing is.
func (b *extendBatcher) flush(ctx context.Context) {
	timer := time.NewTimer(extendGather)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}
	for {
		b.mu.Lock()
		batch := b.pending
		b.pending = nil
		if len(batch) == 0 {
			b.flushing = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.send(ctx, batch)
	}
}

// send extends batch: its messages grouped by SQS queue, in calls of up to 10, at once.
func (b *extendBatcher) send(ctx context.Context, batch []extension) {
	byURL := map[string][]extension{}
	for _, x := range batch {
		byURL[x.r.queueURL] = append(byURL[x.r.queueURL], x)
	}
	var wg sync.WaitGroup
	for url, xs := range byURL {
		for _, chunk := range chunks(xs, maxBatch) {
			wg.Go(func() { b.sendChunk(ctx, url, chunk) })
		}
	}
	wg.Wait()
}

func (b *extendBatcher) sendChunk(ctx context.Context, url string, chunk []extension) {
	s := b.src
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
	for i, x := range chunk {
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(x.r.handle), VisibilityTimeout: x.seconds,
		}
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	out, err := s.client.ChangeMessageVisibilityBatch(cctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("extending messages' visibility failed; they may be delivered again (harmless)",
				"queue", chunk[0].rq, "count", len(chunk), "error", err)
		}
		return
	}
	for _, f := range out.Failed {
		i, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil || i < 0 || i >= len(chunk) {
			continue
		}
		s.log.Warn("extending a message's visibility failed; it may be delivered again (harmless)",
			"queue", chunk[i].rq, "task_id", chunk[i].taskID, "error", aws.ToString(f.Code)+": "+aws.ToString(f.Message))
	}
}

// Extend keeps a running task's message hidden for another lease, so that no other
// worker receives it meanwhile. It returns at once: the extensions of a heartbeat round
// go out together in the background (extendBatcher), or are skipped when too many calls
// are in flight; a missed extension only costs a duplicate delivery, which the claim
// rejects, since the store's lease is what fences the task.
func (s *Source) Extend(ctx context.Context, d runtime.Delivery, lease time.Duration) {
	r, ok := d.Receipt.(receipt)
	if !ok {
		s.log.Error("extend: a delivery that is not this source's", "task_id", d.Task.ID)
		return
	}
	s.extendsBatch.add(ctx, extension{rq: d.Task.Queue, taskID: d.Task.ID, r: r, seconds: visibilitySeconds(lease)})
}
