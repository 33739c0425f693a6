package sqsmode

import (
	"context"
	"sync"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
)

// Settle is called by the runtime's committer once the store holds the outcome of each
// delivery (written, or rejected because the lease was lost): only now may the messages
// go. It returns at once unless SQS is slow enough to fill every background slot; in the
// background it publishes a dead-task event for each task that just ended DEAD or FAILED and,
// at the same time, deletes every settled message. The delete never waits on the
// publish's success: the dead letter is in the database already, and a message left
// behind would only be received again and deleted as a duplicate.
func (s *Source) Settle(ctx context.Context, settled []runtime.Settled) {
	s.acks.goOrRun(func() { s.settle(ctx, settled) })
}

func (s *Source) settle(ctx context.Context, settled []runtime.Settled) {
	now := time.Now()
	type queueKey struct{ rq, url string }
	handles := map[queueKey][]string{}
	var events []DeadTaskEvent
	for _, st := range settled {
		r, ok := st.Delivery.Receipt.(receipt)
		if !ok {
			s.log.Error("settle: a delivery that is not this source's", "task_id", st.Delivery.Task.ID)
			continue
		}
		k := queueKey{rq: st.Delivery.Task.Queue, url: r.queueURL}
		handles[k] = append(handles[k], r.handle)
		if ev, dead := deadTaskEvent(st, now); dead {
			events = append(events, ev)
		}
	}

	var wg sync.WaitGroup
	if len(events) > 0 && s.dlq != nil {
		wg.Go(func() { s.dlq.publish(ctx, events) })
	}
	for k, hs := range handles {
		wg.Go(func() { s.deleteMessages(ctx, k.rq, k.url, hs, ReasonSettled) })
	}
	wg.Wait()
}
