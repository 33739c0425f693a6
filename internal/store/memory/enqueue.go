package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// enqueueIndex is what EnqueueDue reads besides the PENDING claim index, like the
// PostgreSQL index tasks_enqueue_sent: ENQUEUED tasks, oldest send first, with lazy
// removal like the claim index. (Every ENQUEUED task has been sent: retries and reaped
// tasks go back to PENDING, migration 0009.) The zero value is ready to use.
type enqueueIndex struct {
	sent map[string]*minHeap[sentItem]
	// sending holds the tasks handed to a send that has not returned, with a channel
	// closed when it does: the row locks of the PostgreSQL store. Their index items are
	// out of the indexes meanwhile, so other EnqueueDue calls skip them (SKIP LOCKED),
	// and ClaimTasks by id waits for them.
	sending map[uuid.UUID]chan struct{}
}

// sentItem is an ENQUEUED task's last send, valid while the task is in the same status
// spell (seq) and was not sent again since.
type sentItem struct {
	e   *entry
	seq uint64
	at  time.Time // enqueued_at
}

func (it sentItem) valid() bool {
	t := &it.e.task
	return it.e.seq == it.seq && t.EnqueuedAt != nil && t.EnqueuedAt.Equal(it.at)
}

func sentOrder(a, b sentItem) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return compareIDs(a.e.task.ID, b.e.task.ID) < 0
}

func (s *Store) sentHeap(queue string) *minHeap[sentItem] {
	if s.enq.sent == nil {
		s.enq.sent = map[string]*minHeap[sentItem]{}
	}
	h := s.enq.sent[queue]
	if h == nil {
		h = &minHeap[sentItem]{less: sentOrder}
		s.enq.sent[queue] = h
	}
	return h
}

// indexEnqueued indexes e, which has just become ENQUEUED or was just sent again.
func (s *Store) indexEnqueued(e *entry, now time.Time) {
	t := &e.task
	live := int(s.counts[t.Queue][store.StatusEnqueued])
	h := s.sentHeap(t.Queue)
	h.Push(sentItem{e: e, seq: e.seq, at: *t.EnqueuedAt})
	if n := h.Len(); n > 1024 && n > 2*live {
		h.Filter(sentItem.valid)
	}
}

// enqueueKind says which index a picked task came from, and so what "unchanged" means
// for it when send returns.
type enqueueKind int

const (
	pickedPending enqueueKind = iota // due PENDING, from the claim index
	pickedLost                       // ENQUEUED, sent longer ago than RedeliverAfter
)

type pickedTask struct {
	kind enqueueKind
	item claimItem
	sent sentItem // for pickedLost
}

// unchanged reports whether the task is as it was when picked: only then is it marked
// or put back (a task that moved meanwhile was indexed anew by whatever moved it).
func (p pickedTask) unchanged() bool {
	switch p.kind {
	case pickedPending:
		return p.item.valid()
	default:
		return p.sent.valid()
	}
}

// EnqueueDue hands the tasks that need an SQS message to send and marks the ones it
// reports; see store.EnqueueParams. The store's mutex is not held while send runs.
func (s *Store) EnqueueDue(ctx context.Context, p store.EnqueueParams,
	send func(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error)) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := p.Normalize(); err != nil {
		return 0, fmt.Errorf("enqueue due: %w", err)
	}
	if send == nil {
		return 0, fmt.Errorf("enqueue due: %w: send is required", store.ErrInvalid)
	}

	s.mu.Lock()
	picked := s.pickForSend(p)
	if len(picked) == 0 {
		s.mu.Unlock()
		return 0, nil
	}
	done := make(chan struct{})
	if s.enq.sending == nil {
		s.enq.sending = map[uuid.UUID]chan struct{}{}
	}
	ids := make([]uuid.UUID, len(picked))
	for i, pt := range picked {
		ids[i] = pt.item.id
		s.enq.sending[pt.item.id] = done
	}
	s.mu.Unlock()

	finished := false
	defer func() {
		if !finished { // send panicked: release the tasks, unmarked
			s.mu.Lock()
			s.finishSend(picked, nil)
			s.mu.Unlock()
			close(done)
		}
	}()
	sent, sendErr := send(ctx, ids)
	var markErr error
	if err := ctx.Err(); err != nil {
		// PostgreSQL's mark would fail now: nothing is marked, the tasks stay eligible.
		sent, markErr = nil, fmt.Errorf("enqueue due: mark sent: %w", err)
	}
	s.mu.Lock()
	n := s.finishSend(picked, sent)
	finished = true
	s.mu.Unlock()
	close(done)
	if markErr != nil {
		return 0, errors.Join(markErr, wrapSendErr(sendErr))
	}
	return n, wrapSendErr(sendErr)
}

func wrapSendErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("enqueue due: send: %w", err)
}

// pickForSend takes up to p.Limit tasks that need a message out of the indexes, in
// claim order (priority desc, scheduled_for, id): a merge of the due PENDING tasks and
// the oldest-sent ENQUEUED ones whose send is older than RedeliverAfter.
func (s *Store) pickForSend(p store.EnqueueParams) []pickedTask {
	now := s.clock()
	if set := s.limitsOf(p.Queue); set != nil && set.Paused {
		return nil // a paused queue sends nothing, redeliveries included
	}
	cutoff := now.Add(-p.RedeliverAfter)
	taken := map[*entry]bool{}

	// Redeliveries: the oldest sends first, at most Limit, then in claim order.
	var lost []pickedTask
	var keep []sentItem // valid but not claimable (not due): put back
	if h := s.enq.sent[p.Queue]; h != nil {
		for len(lost) < p.Limit && h.Len() > 0 {
			it := h.Peek()
			if !it.valid() || taken[it.e] || s.enq.sending[it.e.task.ID] != nil {
				h.Pop() // stale, or a duplicate of an item already out
				continue
			}
			if !it.at.Before(cutoff) {
				break
			}
			h.Pop()
			t := &it.e.task
			if t.ScheduledFor.After(now) || t.AttemptCount >= t.MaxAttempts {
				keep = append(keep, it)
				continue
			}
			taken[it.e] = true
			lost = append(lost, pickedTask{kind: pickedLost, sent: it,
				item: claimItem{e: it.e, seq: it.seq, priority: t.Priority, at: t.ScheduledFor, id: t.ID}})
		}
		for _, it := range keep {
			h.Push(it)
		}
	}
	slices.SortFunc(lost, func(a, b pickedTask) int {
		if claimOrder(a.item, b.item) {
			return -1
		}
		return 1
	})

	pending := s.claimable[queueStatus{p.Queue, store.StatusPending}]
	pendingLeft := p.Limit // how many PENDING tasks may be sent: see sendBudget
	if set := s.limitsOf(p.Queue); set != nil {
		pendingLeft = s.sendBudget(set, p.Limit, now)
	}
	var out []pickedTask
	for len(out) < p.Limit {
		best := -1 // 0 pending, 1 lost
		var bestItem claimItem
		var bestGroup *readyGroup
		if pending != nil && pendingLeft > 0 {
			if g, it, ok := pending.front(now); ok {
				best, bestItem, bestGroup = 0, it, g
			}
		}
		if len(lost) > 0 && (best < 0 || claimOrder(lost[0].item, bestItem)) {
			best = 1
		}
		switch best {
		case 0:
			pendingLeft--
			out = append(out, pickedTask{kind: pickedPending, item: pending.ready.take(bestGroup)})
		case 1:
			out = append(out, lost[0])
			lost = lost[1:]
		default:
			return out
		}
	}
	for _, pt := range lost { // not needed this time
		s.sentHeap(p.Queue).Push(pt.sent)
	}
	return out
}

// finishSend marks the picked tasks that send reported (sent ENQUEUED, enqueued_at =
// now), puts the others back into their index, and returns how many it marked. The
// caller holds the mutex.
func (s *Store) finishSend(picked []pickedTask, sent []uuid.UUID) int {
	reported := make(map[uuid.UUID]bool, len(sent))
	for _, id := range sent {
		reported[id] = true
	}
	now := s.clock()
	marked := 0
	for _, pt := range picked {
		e := pt.item.e
		delete(s.enq.sending, e.task.ID)
		if !pt.unchanged() {
			continue
		}
		if reported[e.task.ID] {
			marked++
		}
		switch {
		case reported[e.task.ID] && pt.kind == pickedPending:
			s.transition(e, store.StatusEnqueued, now, func(t *store.Task) {
				at := now
				t.EnqueuedAt = &at
			})
		case reported[e.task.ID]:
			// ENQUEUED -> ENQUEUED: no transition, only the send time moves.
			at := now
			e.task.EnqueuedAt = &at
			e.task.UpdatedAt = now
			s.indexEnqueued(e, now)
		case pt.kind == pickedPending:
			cq := s.claimQueue(e.task.Queue, store.StatusPending)
			cq.push(pt.item, now, cq.live)
		default:
			s.sentHeap(e.task.Queue).Push(pt.sent)
		}
	}
	return marked
}

// waitWhileSending waits until none of ids is in a send that has not returned (the
// PostgreSQL claim by id waits for the enqueuer's row locks the same way). The caller
// holds the mutex; it is released while waiting and held again on return.
func (s *Store) waitWhileSending(ctx context.Context, ids []uuid.UUID) error {
	for {
		var busy chan struct{}
		for _, id := range ids {
			if ch := s.enq.sending[id]; ch != nil {
				busy = ch
				break
			}
		}
		if busy == nil {
			return nil
		}
		s.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
		}
		s.mu.Lock()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// CountSent counts the ENQUEUED tasks of each queue that SQS should hold a message for;
// see store.Store. It walks the queue's sent index (stale items skipped).
func (s *Store) CountSent(ctx context.Context, p store.CountSentParams) (map[string]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("count sent: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cutoff := s.clock().Add(-p.OlderThan)
	out := make(map[string]int, len(p.Queues))
	for _, q := range p.Queues {
		n := 0
		if h := s.enq.sent[q]; h != nil {
			for _, it := range h.items {
				if n < p.Limit && it.valid() && it.e.task.Status == store.StatusEnqueued && it.at.Before(cutoff) {
					n++
				}
			}
		}
		out[q] = n
	}
	return out, nil
}
