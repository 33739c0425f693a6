package sqsmode

import (
	"context"
	"maps"
	"slices"

	"github.com/rotaqueue/rota/internal/runtime"
)

// Settle is called by the runtime's committer once the store holds the outcome of each
// delivery (written, or rejected because the lease was lost): only now may the messages
// go. It returns at once unless SQS is slow enough to fill every background slot; in the
// background it deletes every settled message. A task that just ended DEAD or FAILED
// needs nothing more here: its dead letter, written in the outcome's transaction, awaits
// the enqueuer's DLQ relay (dlq.go).
func (s *Source) Settle(ctx context.Context, settled []runtime.Settled) {
	s.acks.goOrRun(func() { s.settle(ctx, settled) })
}

func (s *Source) settle(ctx context.Context, settled []runtime.Settled) {
	type queueKey struct{ rq, url string }
	handles := map[queueKey][]string{}
	for _, st := range settled {
		r, ok := st.Delivery.Receipt.(receipt)
		if !ok {
			s.log.Error("settle: a delivery that is not this source's", "task_id", st.Delivery.Task.ID)
			continue
		}
		k := queueKey{rq: st.Delivery.Task.Queue, url: r.queueURL}
		handles[k] = append(handles[k], r.handle)
	}

	keys := slices.Collect(maps.Keys(handles))
	warm.each(len(keys), len(keys), func(i int) {
		s.deleteMessages(ctx, keys[i].rq, keys[i].url, handles[keys[i]], ReasonSettled)
	})
}
