package memory

import (
	"slices"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// Flow control (DESIGN.md section 11): what a queue's settings let a claim take. The
// mutex serialises claims, so counting and claiming under it never exceed a limit. A
// queue nobody configured (no settings, or none that limit) never comes here.

// queueGroup names one group of one queue.
type queueGroup struct {
	queue, key string
}

// claimLog keeps a rate-limited queue's recent claim times (its processing_started_at
// values), which outlive the attempts that set them: an attempt that ended, or a task
// claimed again, still counts in the window. Times are appended in clock order; the
// ones older than the window are dropped as claims read them.
type claimLog struct {
	queue   []time.Time
	groups  map[string][]time.Time
	sweepAt int // len(groups) at which to drop the groups with no recent claim
}

// inWindow drops times at or before now-per from the front of times and returns the rest.
func inWindow(times []time.Time, now time.Time, per int) []time.Time {
	cutoff := now.Add(-time.Duration(per) * time.Second)
	i, _ := slices.BinarySearchFunc(times, cutoff, func(t, c time.Time) int {
		if t.After(c) {
			return 1
		}
		return -1
	})
	return times[i:]
}

// claimBudget is what one claim of a limited queue may take: left tasks in all, and per
// group what its group limits admit.
type claimBudget struct {
	s     *Store
	set   *store.QueueSettings
	now   time.Time
	left  int            // tasks the claim may still take
	limit int            // the claim's Limit
	taken map[string]int // tasks of each group this claim took
	log   *claimLog      // nil unless a rate is set
	// What the queue's own settings let the claim take (-1: no such limit), and where
	// to say what held it back (nil: nobody asks).
	concurrencyRoom, rateRoom int
	report                    *store.ClaimReport
}

// budget returns what a claim of up to limit tasks of queue may take now.
func (s *Store) budget(set *store.QueueSettings, limit int, now time.Time) *claimBudget {
	b := &claimBudget{s: s, set: set, now: now, left: limit, limit: limit, taken: map[string]int{}, concurrencyRoom: -1, rateRoom: -1}
	if set.Paused {
		b.left = 0
		return b
	}
	if set.Concurrency != nil {
		b.concurrencyRoom = max(0, *set.Concurrency-int(s.counts[set.Queue][store.StatusProcessing]))
		b.left = min(b.left, b.concurrencyRoom)
	}
	if set.Rate != nil || set.GroupRate != nil {
		b.log = s.claimLogOf(set.Queue)
	}
	if set.Rate != nil {
		b.log.queue = inWindow(b.log.queue, now, set.Rate.PerSeconds)
		b.rateRoom = max(0, set.Rate.Limit-len(b.log.queue))
		b.left = min(b.left, b.rateRoom)
	}
	b.left = max(b.left, 0)
	return b
}

func (s *Store) claimLogOf(queue string) *claimLog {
	if s.claimLogs == nil {
		s.claimLogs = map[string]*claimLog{}
	}
	l := s.claimLogs[queue]
	if l == nil {
		l = &claimLog{groups: map[string][]time.Time{}, sweepAt: 1024}
		s.claimLogs[queue] = l
	}
	return l
}

// admits reports whether the claim may take one more task of group key.
func (b *claimBudget) admits(key string) bool {
	if b.left <= 0 {
		return false
	}
	if key == "" { // ungrouped tasks are not subject to group limits
		return true
	}
	taken := b.taken[key]
	if g := b.set.GroupConcurrency; g != nil && b.s.groupRunning[queueGroup{b.set.Queue, key}]+taken >= *g {
		b.report.Hold(store.HeldByGroupConcurrency, 0)
		return false
	}
	if r := b.set.GroupRate; r != nil {
		recent := inWindow(b.log.groups[key], b.now, r.PerSeconds)
		b.log.groups[key] = recent
		if len(recent) >= r.Limit { // took logs this claim's picks at once
			b.report.Hold(store.HeldByGroupRate, untilAdmits(recent, r, b.now))
			return false
		}
	}
	return true
}

// untilAdmits is how long until a window holding times (all within it, in order) admits
// another claim under r: until enough of the oldest have slid out.
func untilAdmits(times []time.Time, r *store.RateLimit, now time.Time) time.Duration {
	if len(times) < r.Limit {
		return 0
	}
	return times[len(times)-r.Limit].Add(time.Duration(r.PerSeconds) * time.Second).Sub(now)
}

// explain fills in the claim report (store.ClaimReport, LIMITS.md rule 10) once the claim
// took n tasks: a setting held it back only if due tasks it could otherwise have taken
// were left (more). Group limits were noted as they refused (admits).
func (b *claimBudget) explain(n int, more bool) {
	if b.report == nil {
		return
	}
	if n >= b.limit || !more {
		b.report.Reset()
		return
	}
	switch {
	case b.set.Paused:
		b.report.Hold(store.HeldByPause, 0)
	case b.concurrencyRoom >= 0 && b.concurrencyRoom <= n:
		b.report.Hold(store.HeldByConcurrency, 0)
	}
	if b.rateRoom >= 0 && b.rateRoom <= n {
		b.report.Hold(store.HeldByRate, untilAdmits(b.log.queue, b.set.Rate, b.now))
	}
}

// took counts a task of group key the claim takes, and logs its claim time for the rates.
func (b *claimBudget) took(key string) {
	b.left--
	b.taken[key]++
	if b.log == nil {
		return
	}
	if b.set.Rate != nil {
		b.log.queue = append(b.log.queue, b.now)
	}
	if b.set.GroupRate != nil && key != "" {
		b.log.groups[key] = append(b.log.groups[key], b.now)
	}
}

// done ends the claim: it forgets the groups without a claim in their window once
// there are many of them.
func (b *claimBudget) done() {
	l := b.log
	if l == nil || len(l.groups) < l.sweepAt {
		return
	}
	for key, times := range l.groups {
		if b.set.GroupRate == nil {
			delete(l.groups, key)
			continue
		}
		if recent := inWindow(times, b.now, b.set.GroupRate.PerSeconds); len(recent) == 0 {
			delete(l.groups, key)
		} else {
			l.groups[key] = recent
		}
	}
	l.sweepAt = max(1024, 2*len(l.groups))
}

// limitsOf returns queue's settings when they may hold a claim back, else nil.
func (s *Store) limitsOf(queue string) *store.QueueSettings {
	if set := s.queues[queue]; set != nil && set.Limited() {
		return set
	}
	return nil
}

// claimLimited picks for a poll claim of a limited queue: tasks in turn, skipping the
// groups their limits hold back (they keep their turn for the next claim).
func (s *Store) claimLimited(cq *claimQueue, b *claimBudget) []*entry {
	var picked []*entry
	var aside []groupTurn
	for b.left > 0 {
		g, _, ok := cq.front(b.now)
		if !ok {
			break
		}
		if !b.admits(g.key) {
			aside = append(aside, cq.ready.setAside(g))
			continue
		}
		picked = append(picked, cq.ready.take(g).e)
		b.took(g.key)
	}
	cq.ready.restore(aside)
	return picked
}

// countGroupRunning keeps the PROCESSING count of each group (transition calls it).
func (s *Store) countGroupRunning(t *store.Task, from, to store.Status) {
	if t.GroupKey == "" || (from == store.StatusProcessing) == (to == store.StatusProcessing) {
		return
	}
	k := queueGroup{t.Queue, t.GroupKey}
	if to == store.StatusProcessing {
		s.groupRunning[k]++
		return
	}
	if s.groupRunning[k]--; s.groupRunning[k] <= 0 {
		delete(s.groupRunning, k)
	}
}

// sendBudget is how many due PENDING tasks of a limited queue EnqueueDue may send now
// (rule 9: nothing for a paused queue; no more than may run: the concurrency and the
// rate window's room, less what is running or sent and not yet claimed).
func (s *Store) sendBudget(set *store.QueueSettings, limit int, now time.Time) int {
	if set.Paused {
		return 0
	}
	counts := s.counts[set.Queue]
	sent := int(counts[store.StatusEnqueued])
	left := limit
	if set.Concurrency != nil {
		left = min(left, *set.Concurrency-int(counts[store.StatusProcessing])-sent)
	}
	if set.Rate != nil {
		l := s.claimLogOf(set.Queue)
		l.queue = inWindow(l.queue, now, set.Rate.PerSeconds)
		left = min(left, set.Rate.Limit-len(l.queue)-sent)
	}
	return max(left, 0)
}
