package postgres

import (
	"context"
	"slices"
	"sync"
	"time"
)

// wakeTimeout bounds one wake-up statement; a wake-up that does not go out costs the
// workers at most their poll interval.
const wakeTimeout = 5 * time.Second

// wakeCooldown is the least time between the starts of two wake-up statements. Under a
// steady stream of one-task creates the statements went out back to back (2,000 creates
// a second sent 1,100-1,300 of them), and each wakes every listening connection of every
// worker; a millisecond apart they are about half as many, and a wake-up that waits
// waits at most this long (docs/performance.md "Session 13").
const wakeCooldown = time.Millisecond

// wakeSender sends the workers' wake-ups after CreateTasks commits (notify_tasks.sql)
// from one goroutine, so that concurrent creates share one statement: while a wake-up is
// being sent, the queues of the creates that commit meanwhile gather and go out together
// in the next, which starts no sooner than wakeCooldown after the one before. A create
// no longer waits for a second round trip, and a process enqueueing one task per call
// from many goroutines sends far fewer statements (River debounces its insert
// notifications the same way, by its FetchCooldown; this adds no delay to a wake-up
// that comes after a quiet moment).
//
// The goroutine starts with the first wake-up. Close sends what is still gathered and
// stops it; after Close a wake-up is sent by its caller, as before.
type wakeSender struct {
	send     func(ctx context.Context, queues []string) // one statement
	cooldown time.Duration                              // wakeCooldown

	mu      sync.Mutex
	queues  []string      // gathered, distinct
	kick    chan struct{} // buffer 1: queues were gathered
	started bool
	closed  bool
	done    chan struct{} // closed when the goroutine has returned
}

func newWakeSender(send func(ctx context.Context, queues []string)) *wakeSender {
	return &wakeSender{send: send, cooldown: wakeCooldown, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

// wake has queues' workers woken soon; it does not wait for the statement.
func (w *wakeSender) wake(queues []string) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.sendNow(queues)
		return
	}
	for _, q := range queues {
		if !slices.Contains(w.queues, q) {
			w.queues = append(w.queues, q)
		}
	}
	if !w.started {
		w.started = true
		go w.run()
	}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default: // a send is already due; it takes these queues too
	}
}

func (w *wakeSender) run() {
	defer close(w.done)
	var last time.Time
	for range w.kick {
		// At most one statement per cooldown: what is woken meanwhile goes out with it.
		if wait := w.cooldown - time.Since(last); wait > 0 {
			time.Sleep(wait)
		}
		last = time.Now()
		if !w.flush() {
			return
		}
	}
}

// flush sends the gathered queues; it reports false once the sender is closed and
// nothing is left.
func (w *wakeSender) flush() bool {
	w.mu.Lock()
	queues, closed := w.queues, w.closed
	w.queues = nil
	w.mu.Unlock()
	if len(queues) > 0 {
		w.sendNow(queues)
	}
	return !closed
}

func (w *wakeSender) sendNow(queues []string) {
	ctx, cancel := context.WithTimeout(context.Background(), wakeTimeout)
	defer cancel()
	w.send(ctx, queues)
}

// close sends what is gathered and stops the goroutine; later wake-ups are sent by their
// callers.
func (w *wakeSender) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	started := w.started
	w.mu.Unlock()
	if !started {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
	<-w.done
}
