package sqsmode

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// claimBatcher merges the claims of a Source's concurrent fetches of one Rota queue: a
// fetch that would start its claim while another's is running waits for it and joins the
// next statement instead, together with every other fetch that arrived meanwhile. An
// idle queue's claim goes at once, as before; under load the fetch loops' receives of 10
// share one statement, which costs the database less per task than one each (every
// claim is planned afresh, and its statement and round trip cost the same for 10 ids as
// for 40).
//
// The fetch whose claim ends a statement's wait leads the next one: no goroutine of its
// own, nothing to stop.
type claimBatcher struct {
	// claim claims ids in one statement and says what held it back (store.ClaimReport).
	claim func(ctx context.Context, ids []uuid.UUID) ([]*store.Task, store.ClaimReport, error)

	mu      sync.Mutex
	running bool         // a statement is running; new calls wait in waiting
	waiting []*claimCall // in arrival order
}

// claimCall is one fetch's part of a statement.
type claimCall struct {
	ids   []uuid.UUID
	done  chan bool // true: served; false: lead the next statement
	tasks []*store.Task
	held  store.ClaimReport // the statement's: a setting may have held back some of ids
	err   error
}

// do claims the tasks of ids (no repeats) and returns those claimed, alone or merged
// with the claims of other fetches, and what held the statement back (the report is the
// whole statement's: with a setting named, any unclaimed id may be one it held back).
func (b *claimBatcher) do(ctx context.Context, ids []uuid.UUID) ([]*store.Task, store.ClaimReport, error) {
	c := &claimCall{ids: ids, done: make(chan bool, 1)}
	b.mu.Lock()
	b.waiting = append(b.waiting, c)
	lead := !b.running
	b.running = true
	b.mu.Unlock()
	if !lead && <-c.done {
		return c.tasks, c.held, c.err
	}

	b.mu.Lock()
	calls := b.waiting
	b.waiting = nil
	b.mu.Unlock()
	b.run(ctx, calls)
	for _, o := range calls {
		if o != c {
			o.done <- true
		}
	}
	b.mu.Lock()
	if len(b.waiting) > 0 {
		b.waiting[0].done <- false
	} else {
		b.running = false
	}
	b.mu.Unlock()
	return c.tasks, c.held, c.err
}

// run claims the ids of calls in one statement and gives each call its own tasks. An id
// two calls received (a duplicate message) is claimed once, for the first of them; the
// other's message is then judged like any unclaimed one.
func (b *claimBatcher) run(ctx context.Context, calls []*claimCall) {
	var all []uuid.UUID
	for _, c := range calls {
		all = append(all, c.ids...)
	}
	tasks, held, err := b.claim(ctx, all)
	for _, c := range calls {
		c.held = held
	}
	if err != nil {
		for _, c := range calls {
			c.err = err
		}
		return
	}
	owner := make(map[uuid.UUID]*claimCall, len(all))
	for _, c := range calls {
		for _, id := range c.ids {
			if _, taken := owner[id]; !taken {
				owner[id] = c
			}
		}
	}
	for _, t := range tasks { // in the claim's order: highest priority first
		if c := owner[t.ID]; c != nil {
			c.tasks = append(c.tasks, t)
		}
	}
}
