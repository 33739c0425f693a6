package sqsmode_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
)

// TestSQSOutageHeals kills fauxqs mid-run and restarts it empty: every queue and message
// is gone. The enqueuer and the workers create the queues again (create-queues is on),
// tasks whose messages were lost are sent again after the redelivery timeout, tasks
// created during the outage are sent once SQS is back, and every task finishes once.
func TestSQSOutageHeals(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	m := sqsmode.NewMetrics(nil)
	run(t, e.enqueuer(qs, m, func(c *sqsmode.EnqueuerConfig) { c.RedeliverAfter = 2 * time.Second }).Run)
	for i := range 2 {
		e.runWorker(e.worker(e.source(qs, "worker-"+string(rune('a'+i)), m, nil), nil))
	}

	slow := store.CreateParams{Kind: "sleep", Payload: json.RawMessage(`{"ms": 100}`)}
	before := e.createN(200, slow)
	waitFor(t, "some tasks to finish before the outage", func() bool { return m.Stats().DeletedSettled >= 20 })
	e.srv.Kill()
	during := e.createN(50, slow)
	waitFor(t, "sends to fail during the outage", func() bool { return m.Stats().SendFailures > 0 })
	e.srv.Restart()

	all := append(append([]uuid.UUID{}, before...), during...)
	e.waitAll(all, store.StatusSucceeded)
	e.checkSucceededOnce(all)
	if st := m.Stats(); st.Sent <= int64(len(all)) {
		t.Errorf("stats %+v: want more sends than tasks (lost messages sent again)", st)
	}
}
