package sqsmode

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/rotaqueue/rota/internal/loop"
	"github.com/rotaqueue/rota/internal/store"
)

// Defaults of the loss watch (EnqueuerConfig.LossCheckInterval).
const (
	// DefaultLossCheckInterval is how often each SQS queue's attributes are compared
	// with the database: a lost queue is noticed within one or two of them, so a loss
	// heals in seconds rather than after the redelivery timeout. It costs one
	// GetQueueAttributes per queue and one CountSent statement per interval.
	DefaultLossCheckInterval = 5 * time.Second
	// lossSettle leaves out the tasks sent in the last few seconds: SQS's approximate
	// counts may not show their messages yet.
	lossSettle = 5 * time.Second
	// lossCountLimit bounds the database count per queue (store.CountSentParams.Limit).
	lossCountLimit = 10_000
)

// Reasons a queue's messages are taken for lost (the reason label of
// rota_sqs_queue_losses_total).
const (
	LossRecreated = "recreated" // the queue's CreatedTimestamp changed: deleted and created again
	LossMissing   = "missing"   // SQS says the queue does not exist
	LossCounts    = "counts"    // far fewer messages than sent tasks, at two checks running
)

// lossWatch notices an SQS queue that lost its messages (purged, deleted and created
// again, a regional failover, an emulator restarted empty) and sends again the ENQUEUED
// tasks of that queue that were sent before it noticed, without waiting for the
// redelivery timeout, which only heals single lost messages.
//
// Every check it reads each queue's CreatedTimestamp and approximate message counts, and
// from the database how many ENQUEUED tasks were sent to it more than lossSettle ago. A
// loss is:
//   - a CreatedTimestamp other than the one seen before (the queue was re-created);
//   - the queue missing (with --sqs-create-queues it is created again at once);
//   - visible + in flight + delayed messages below half the sent tasks, at two checks
//     in a row (a purge; the counts are approximate, so one low reading is not enough).
//
// Every message of a sent ENQUEUED task is in one of those counts until a worker claims
// the task (and then the task is no longer ENQUEUED), so the third test has no false
// alarm but a lagging count; a false alarm would cost duplicate messages, which workers
// delete, never a wrong outcome.
//
// Healing is the enqueuer's own round with a redelivery timeout equal to the time since
// the loss was noticed: every task sent before then is sent again, once, by whichever
// enqueuer locks it (SKIP LOCKED), and the database decides as for any duplicate.
type lossWatch struct {
	e        *Enqueuer
	interval time.Duration
	log      *slog.Logger

	created map[string]string // by Rota queue: the CreatedTimestamp last seen
	suspect map[string]bool   // by Rota queue: the last check's counts were low

	mu      sync.Mutex
	healing map[string]time.Time // by Rota queue: when the loss being healed was noticed
}

func newLossWatch(e *Enqueuer, interval time.Duration) *lossWatch {
	return &lossWatch{e: e, interval: interval, log: e.cfg.Logger.With("component", "sqs-loss-watch"),
		created: map[string]string{}, suspect: map[string]bool{}, healing: map[string]time.Time{}}
}

// run checks every interval until ctx ends; heals run beside it.
func (w *lossWatch) run(ctx context.Context) {
	var heals sync.WaitGroup
	defer heals.Wait()
	loop.Every(ctx, w.interval, func(ctx context.Context) {
		for _, rq := range w.check(ctx) {
			if w.startHeal(rq) {
				heals.Go(func() { w.heal(ctx, rq) })
			}
		}
	})
}

// queueState is what SQS says about one queue.
type queueState struct {
	created  string
	messages int // visible + in flight + delayed
	missing  bool
	err      error
}

// check looks at every queue once and returns the Rota queues whose messages it takes
// for lost.
func (w *lossWatch) check(ctx context.Context) []string {
	queues := w.e.cfg.Queues.RotaQueues()
	states := make(map[string]queueState, len(queues))
	for _, rq := range queues {
		states[rq] = w.queueState(ctx, rq)
	}
	cctx, cancel := context.WithTimeout(ctx, w.e.cfg.SendTimeout)
	sent, err := w.e.cfg.Store.CountSent(cctx, store.CountSentParams{Queues: queues, OlderThan: lossSettle, Limit: lossCountLimit})
	cancel()
	if err != nil && ctx.Err() == nil {
		w.log.Warn("counting sent tasks failed; only queue re-creation is noticed this time", "error", err)
	}
	var lost []string
	for _, rq := range queues {
		st := states[rq]
		reason := w.judge(rq, st, sent, err == nil)
		if reason == "" {
			continue
		}
		w.e.cfg.Metrics.addQueueLoss(rq, reason)
		w.log.Warn("the SQS queue lost its messages; sending its ENQUEUED tasks again", "queue", rq,
			"sqs_queue", w.e.cfg.Queues.Name(rq), "reason", reason, "messages", st.messages, "sent_tasks", sent[rq])
		lost = append(lost, rq)
	}
	return lost
}

// judge decides from one check whether rq's messages are lost, and remembers what it
// needs for the next check. It returns the reason, or "".
func (w *lossWatch) judge(rq string, st queueState, sent map[string]int, counted bool) string {
	switch {
	case st.missing:
		// Whatever queue comes back is new: its first CreatedTimestamp is no news.
		w.suspect[rq] = false
		delete(w.created, rq)
		return LossMissing
	case st.err != nil:
		return "" // SQS unreachable: nothing known
	}
	before := w.created[rq]
	w.created[rq] = st.created
	if before != "" && st.created != before {
		w.suspect[rq] = false
		return LossRecreated
	}
	if !counted {
		return ""
	}
	low := st.messages < (sent[rq]+1)/2
	wasLow := w.suspect[rq]
	w.suspect[rq] = low && !wasLow // a loss clears the suspicion: the heal starts afresh
	if low && wasLow {
		return LossCounts
	}
	return ""
}

// queueState reads rq's SQS queue's CreatedTimestamp and message counts. A missing
// queue is created again when the enqueuer may create queues.
func (w *lossWatch) queueState(ctx context.Context, rq string) queueState {
	q, err := w.e.cfg.Queues.forRota(rq)
	if err != nil {
		return queueState{err: err}
	}
	url, err := q.url(ctx)
	if err != nil {
		return queueState{err: err, missing: isQueueMissing(err)}
	}
	cctx, cancel := context.WithTimeout(ctx, w.e.cfg.SendTimeout)
	defer cancel()
	out, err := w.e.cfg.Client.GetQueueAttributes(cctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameCreatedTimestamp,
			types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed},
	})
	if isQueueMissing(err) {
		if healed, herr := q.heal(ctx, url); herr != nil {
			w.log.Warn("the SQS queue is missing and creating it again failed", "queue", rq, "error", herr)
		} else if healed {
			w.log.Warn("the SQS queue was missing; created it again", "queue", rq, "sqs_queue", q.name)
		}
		return queueState{missing: true, err: err}
	}
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("reading the SQS queue's attributes failed", "queue", rq, "error", err)
		}
		return queueState{err: err}
	}
	st := queueState{created: out.Attributes[string(types.QueueAttributeNameCreatedTimestamp)]}
	for _, name := range []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed} {
		n, err := strconv.Atoi(out.Attributes[string(name)])
		if err != nil {
			return queueState{err: fmt.Errorf("attribute %s = %q: %w", name, out.Attributes[string(name)], err)}
		}
		st.messages += n
	}
	return st
}

// startHeal records a loss of rq noticed now and reports whether a heal must start (none
// is running; a running one takes the later loss over, see heal).
func (w *lossWatch) startHeal(rq string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, running := w.healing[rq]
	w.healing[rq] = time.Now()
	return !running
}

// heal sends again every ENQUEUED task of rq sent before the loss was noticed: rounds of
// EnqueueDue whose redelivery timeout is the time since then, until one comes back short
// (none is left) or the normal redelivery timeout has passed (the normal rounds cover
// the rest). A loss noticed again meanwhile moves the cut-off on.
func (w *lossWatch) heal(ctx context.Context, rq string) {
	e := w.e
	total, failures := 0, 0
	noticed := w.noticed(rq)
	for ctx.Err() == nil {
		since := time.Since(noticed)
		if since >= e.cfg.RedeliverAfter {
			// The normal rounds send the rest; a later loss starts its own heal.
			later, again := w.finish(rq, noticed)
			if !again {
				break
			}
			noticed = later
			continue
		}
		n, err := e.cfg.Store.EnqueueDue(ctx, store.EnqueueParams{
			Queue: rq, Limit: e.cfg.BatchSize, RedeliverAfter: max(since, time.Millisecond),
		}, e.senders[rq].send)
		total += n
		if err != nil {
			failures++
			if ctx.Err() == nil {
				w.log.Warn("sending lost tasks again failed; retrying", "queue", rq, "failures", failures, "error", err)
			}
			t := time.NewTimer(failureBackoff(e.cfg.Interval, failures))
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		failures = 0
		if n < e.cfg.BatchSize {
			later, again := w.finish(rq, noticed)
			if !again {
				break
			}
			noticed = later // lost again meanwhile: go on from the later loss
		}
	}
	if ctx.Err() != nil {
		return
	}
	w.log.Info("sent the tasks of a lost SQS queue again", "queue", rq, "sent", total,
		"since_noticed", time.Since(noticed).Round(time.Millisecond).String())
}

// finish ends the heal of the loss of rq noticed at noticed, unless another loss was
// noticed since: then it reports that one's time and true.
func (w *lossWatch) finish(rq string, noticed time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if later := w.healing[rq]; !later.Equal(noticed) {
		return later, true
	}
	delete(w.healing, rq)
	return noticed, false
}

func (w *lossWatch) noticed(rq string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.healing[rq]
}
