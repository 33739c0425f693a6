package memory

import (
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// queueStatus names one claim index: the PENDING (or ENQUEUED) tasks of one queue, like
// the partial indexes tasks_claim_pending and tasks_claim_enqueued.
type queueStatus struct {
	queue  string
	status store.Status
}

// claimItem is a task's place in a claim index, valid while the task's seq is unchanged.
type claimItem struct {
	e        *entry
	seq      uint64
	priority int
	at       time.Time // scheduled_for
	id       uuid.UUID
}

func (it claimItem) valid() bool { return it.e.seq == it.seq }

// claimOrder: priority desc, then scheduled_for, then id.
func claimOrder(a, b claimItem) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return compareIDs(a.id, b.id) < 0
}

func dueOrder(a, b claimItem) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return compareIDs(a.id, b.id) < 0
}

// claimQueue holds one queue's tasks of one claimable status: not-yet-due ones in
// future (by scheduled_for) and due ones in ready (by group, served in turns; see
// fair.go). Items move from
// future to ready as time passes; a due task never becomes not due again without a new
// item (its seq changes). Stale items are dropped when they surface or at compaction.
type claimQueue struct {
	future minHeap[claimItem]
	ready  fairReady
	live   int // tasks currently in this queue and status
	// valid reports whether an item still stands for its task (claimItem.valid).
	valid func(claimItem) bool
}

func newClaimQueue(valid func(claimItem) bool) *claimQueue {
	return &claimQueue{
		future: minHeap[claimItem]{less: dueOrder},
		ready:  newFairReady(),
		valid:  valid,
	}
}

func (s *Store) claimQueue(queue string, status store.Status) *claimQueue {
	k := queueStatus{queue, status}
	cq := s.claimable[k]
	if cq == nil {
		cq = newClaimQueue(claimItem.valid)
		s.claimable[k] = cq
	}
	return cq
}

// addClaimable indexes e, which has just entered PENDING or ENQUEUED.
func (s *Store) addClaimable(e *entry, now time.Time) {
	t := &e.task
	cq := s.claimQueue(t.Queue, t.Status)
	cq.live++
	cq.push(claimItem{e: e, seq: e.seq, priority: t.Priority, at: t.ScheduledFor, id: t.ID}, now, cq.live)
}

// push indexes it; live is how many tasks the queue may hold, for compaction: lazy
// removal leaves stale items behind, so rebuild when they outnumber live ones.
func (cq *claimQueue) push(it claimItem, now time.Time, live int) {
	if it.at.After(now) {
		cq.future.Push(it)
	} else {
		cq.ready.push(it)
	}
	if n := cq.future.Len() + cq.ready.Len(); n > 1024 && n > 2*live {
		cq.future.Filter(cq.valid)
		cq.ready.filter(cq.valid)
	}
}

// promote moves the items that have come due from future to ready.
func (cq *claimQueue) promote(now time.Time) {
	for cq.future.Len() > 0 && !cq.future.Peek().at.After(now) {
		if it := cq.future.Pop(); cq.valid(it) {
			cq.ready.push(it)
		}
	}
}

// claimable reports whether an item stands for a task a claim may take.
func (cq *claimQueue) claimable(it claimItem) bool {
	return cq.valid(it) && it.e.task.AttemptCount < it.e.task.MaxAttempts
}

// front returns the next claimable task in turn (fair.go) without removing it, and its
// group, for take or setAside; false when none is due.
func (cq *claimQueue) front(now time.Time) (*readyGroup, claimItem, bool) {
	cq.promote(now)
	return cq.ready.front(cq.claimable)
}

// next takes the next claimable task in turn, or nil.
func (cq *claimQueue) next(now time.Time) *entry {
	g, _, ok := cq.front(now)
	if !ok {
		return nil
	}
	return cq.ready.take(g).e
}

// oldestDue returns the earliest scheduled_for among due tasks, or nil.
func (cq *claimQueue) oldestDue(now time.Time) *time.Time {
	cq.promote(now)
	var oldest *time.Time
	cq.ready.each(func(it claimItem) {
		if cq.valid(it) && (oldest == nil || it.at.Before(*oldest)) {
			at := it.at
			oldest = &at
		}
	})
	return oldest
}

// leaseItem is a PROCESSING task's lease, valid while the task holds that lease with
// that expiry.
type leaseItem struct {
	e       *entry
	token   uuid.UUID
	expires time.Time
}

func (it leaseItem) valid() bool {
	t := &it.e.task
	return t.Status == store.StatusProcessing && t.LeaseToken == it.token && t.LeaseExpiresAt != nil && t.LeaseExpiresAt.Equal(it.expires)
}

func leaseLess(a, b leaseItem) bool {
	if !a.expires.Equal(b.expires) {
		return a.expires.Before(b.expires)
	}
	return compareIDs(a.e.task.ID, b.e.task.ID) < 0
}

// addLease indexes e's current lease (after a claim or a heartbeat).
func (s *Store) addLease(e *entry) {
	s.leases.Push(leaseItem{e: e, token: e.task.LeaseToken, expires: *e.task.LeaseExpiresAt})
	if n := s.leases.Len(); n > 1024 && n > 2*len(s.processing) {
		s.leases.Filter(leaseItem.valid)
	}
}

// nextExpired pops the lease of the PROCESSING task whose lease expired first, if any
// expired before now.
func (s *Store) nextExpired(now time.Time) (leaseItem, bool) {
	for s.leases.Len() > 0 {
		top := s.leases.Peek()
		if !top.valid() {
			s.leases.Pop()
			continue
		}
		if !top.expires.Before(now) {
			return leaseItem{}, false
		}
		s.leases.Pop()
		return top, true
	}
	return leaseItem{}, false
}

// nextDue reports how long until the queue's earliest task is due (0 when one is due
// now), or false when it holds none. Stale items met on the way are dropped.
func (cq *claimQueue) nextDue(now time.Time) (time.Duration, bool) {
	if _, _, ok := cq.front(now); ok {
		return 0, true
	}
	for cq.future.Len() > 0 {
		if it := cq.future.Peek(); cq.valid(it) {
			return it.at.Sub(now), true
		}
		cq.future.Pop()
	}
	return 0, false
}
