package store

import "time"

// Why a claim came back short (LIMITS.md rule 10, DESIGN.md section 11). A claim never
// fails because of a queue's settings: it takes what fits and leaves the rest due. A
// caller that wants to know why it got fewer tasks than it asked for passes a
// *ClaimReport in ClaimParams.Report, and the store fills it in: the runtime waits on it
// instead of claiming a limited queue in a busy loop, and counts it in the metric
// rota_claims_held_back_total{queue,limit}.

// HoldBack names the setting that held a claim back.
type HoldBack string

const (
	HeldByPause            HoldBack = "paused"
	HeldByConcurrency      HoldBack = "concurrency"
	HeldByRate             HoldBack = "rate"
	HeldByGroupConcurrency HoldBack = "group_concurrency"
	HeldByGroupRate        HoldBack = "group_rate"
)

// HoldBacks lists every HoldBack, in the order a report prefers them when several held
// the same claim back (the queue's own settings before its groups').
var HoldBacks = []HoldBack{HeldByPause, HeldByConcurrency, HeldByRate, HeldByGroupConcurrency, HeldByGroupRate}

// ClaimReport is what a claim tells its caller besides the tasks. The store resets it at
// the start of every ClaimTasks call that carries it (a reused report never keeps an
// earlier claim's answer) and fills it in when the call returns without error.
type ClaimReport struct {
	// HeldBack is the setting that kept the claim from taking tasks it would otherwise
	// have taken (the claim took fewer than its Limit, and due tasks of the queue, or of
	// the ids asked for, were left because of it); "" when no setting held it back. When
	// several did, the first of HoldBacks among them.
	HeldBack HoldBack
	// RetryIn is, when HeldBack is HeldByRate or HeldByGroupRate, how long until the
	// window admits another claim, by the store's clock (for group_rate: the soonest of
	// the held groups); 0 otherwise. A claim started after it has passed may take more.
	// For concurrency limits there is no such time: a slot frees when a running task of
	// the queue (or group) ends, so retry when one does, and otherwise after a short
	// interval.
	RetryIn time.Duration
}

// Reset clears r for a new claim; a nil r is a no-op.
func (r *ClaimReport) Reset() {
	if r != nil {
		*r = ClaimReport{}
	}
}

// Hold records that h held the claim back, with retryIn (rates) until the window admits
// another claim; the first of HoldBacks wins when several are recorded, and among rates
// of the same kind the soonest retryIn. A nil r is a no-op.
func (r *ClaimReport) Hold(h HoldBack, retryIn time.Duration) {
	if r == nil || h == "" {
		return
	}
	if r.HeldBack != "" && holdRank(r.HeldBack) < holdRank(h) {
		return
	}
	if r.HeldBack == h && r.RetryIn > 0 && r.RetryIn <= retryIn {
		return
	}
	if retryIn < 0 {
		retryIn = 0
	}
	r.HeldBack, r.RetryIn = h, retryIn
	if h != HeldByRate && h != HeldByGroupRate {
		r.RetryIn = 0
	}
}

func holdRank(h HoldBack) int {
	for i, v := range HoldBacks {
		if v == h {
			return i
		}
	}
	return len(HoldBacks)
}
