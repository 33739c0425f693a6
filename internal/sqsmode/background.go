package sqsmode

import "sync"

// background runs the SQS calls whose caller must not wait for them: the runtime calls
// Settle from its committer and Extend from its heartbeater, and a slow SQS (an outage,
// with the SDK retrying) must not hold up outcome writes or lease renewals in
// PostgreSQL. Each call is bounded by its own timeout, so the work always ends.
type background struct {
	slots chan struct{}
	wg    sync.WaitGroup
}

func newBackground(slots int) *background {
	return &background{slots: make(chan struct{}, slots)}
}

// goOrRun runs fn in a goroutine when a slot is free, and otherwise in the caller: when
// SQS is slow enough to fill every slot, the caller slows down rather than piling up
// goroutines without bound.
func (b *background) goOrRun(fn func()) {
	if !b.tryGo(fn) {
		fn()
	}
}

// tryGo runs fn in a goroutine when a slot is free and reports whether it did.
func (b *background) tryGo(fn func()) bool {
	select {
	case b.slots <- struct{}{}:
		b.wg.Add(1)
		warm.Go(func() {
			defer func() { <-b.slots; b.wg.Done() }()
			fn()
		})
		return true
	default:
		return false
	}
}

// wait waits for every running fn.
func (b *background) wait() { b.wg.Wait() }
