package sqsmode

import (
	"sync"
	"time"
)

// warmGoroutines runs functions on goroutines that are kept alive between them. A call
// through the SQS SDK's middleware stack needs a goroutine stack of tens of KB; a
// goroutine started for one call begins with a few KB and grows by copying its stack,
// several times per call: runtime.copystack under the SDK's handlers was 7.8% of the
// Go CPU of the SQS drain (pprof, docs/performance.md "SQS mode (session 9)"). A kept
// goroutine grows once and keeps the stack for its next calls (until a garbage
// collection finds it idle and shrinks it a step). Idle goroutines end after
// warmIdleLife.
type warmGoroutines struct {
	handoff chan func() // unbuffered: a send succeeds only when a goroutine is idle
}

const warmIdleLife = 10 * time.Second

// warm is the package's pool, shared by every Source, sender and Enqueuer.
var warm = &warmGoroutines{handoff: make(chan func())}

// Go runs fn on an idle goroutine of the pool, or on a new one when none is idle; it
// never waits.
func (p *warmGoroutines) Go(fn func()) {
	select {
	case p.handoff <- fn:
	default:
		go p.serve(fn)
	}
}

func (p *warmGoroutines) serve(fn func()) {
	idle := time.NewTimer(warmIdleLife)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(warmIdleLife)
		select {
		case fn = <-p.handoff:
		case <-idle.C:
			return
		}
	}
}

// each runs fn(i) for every i below n on the pool, at most limit at once, and returns
// when all have.
func (p *warmGoroutines) each(n, limit int, fn func(i int)) {
	if n == 1 {
		fn(0) // nothing to overlap: the caller's goroutine makes the one call
		return
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(limit, 1))
	for i := range n {
		slots <- struct{}{}
		wg.Add(1)
		p.Go(func() {
			defer func() { <-slots; wg.Done() }()
			fn(i)
		})
	}
	wg.Wait()
}
