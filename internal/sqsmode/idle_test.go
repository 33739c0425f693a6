package sqsmode_test

import (
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
)

// TestIdlePollWithNoFreeSlotGivesMessagesBack (issue 12 item 9): an idle queue's long
// poll holds no slot, so a message may arrive when the worker has none free; it is made
// visible again at once (not hidden for the lease), and its task runs as soon as a slot
// frees up.
func TestIdlePollWithNoFreeSlotGivesMessagesBack(t *testing.T) {
	e := newSQSEnv(t)
	qs := e.queues(true, "a", "b")
	m := sqsmode.NewMetrics(nil)
	// Long idle polls: b's is still waiting when a's task takes the only slot.
	src := e.source(qs, "w1", m, func(c *sqsmode.SourceConfig) { c.WaitSeconds = 20 })
	e.runWorker(e.worker(src, func(c *runtime.Config) { c.Concurrency = 1 }, "a", "b"))
	run(t, e.enqueuer(qs, m, nil).Run)
	time.Sleep(500 * time.Millisecond) // both queues' idle polls are waiting

	busy := e.create(store.CreateParams{Queue: "a", Kind: "sleep", Payload: []byte(`{"ms":3000}`)})
	e.waitAll(busy, store.StatusProcessing)
	late := e.create(store.CreateParams{Queue: "b", Kind: "noop"})
	waitFor(t, "b's message to be given back", func() bool { return m.Stats().Returned >= 1 })
	if got := e.get(late[0]).Status; got != store.StatusEnqueued {
		t.Fatalf("b's task is %s while the only slot is busy, want ENQUEUED", got)
	}
	e.waitAll(append(busy, late...), store.StatusSucceeded)
	e.checkSucceededOnce(append(busy, late...))
	if a, b := e.get(busy[0]), e.get(late[0]); b.ProcessingStartedAt.Before(*a.CompletedAt) {
		t.Errorf("b's task started at %s, before a's finished at %s: more than one slot was used", b.ProcessingStartedAt, a.CompletedAt)
	}
}
