package metrics_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rotaqueue/rota/internal/metrics"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
	"github.com/rotaqueue/rota/internal/workers"
)

// rota_workers counts each queue's live workers; rota_queue_unserved is 1 for a queue
// with due tasks and no live worker.
func TestWorkerCollectorGauges(t *testing.T) {
	st := memory.New()
	t.Cleanup(st.Close)
	ctx := context.Background()
	for _, w := range []store.Worker{
		{ID: "a", Queues: []string{"default", "emails"}},
		{ID: "b", Queues: []string{"default"}, Mode: "http"},
	} {
		if err := st.RegisterWorker(ctx, store.RegisterParams{Worker: w}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateTasks(ctx, []store.CreateParams{{Kind: "k"}, {Queue: "orphans", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	c := metrics.NewWorkerCollector(metrics.WorkerCollectorConfig{Workers: workers.NewCache(st, workers.CacheConfig{}), Stats: st})
	want := `
# HELP rota_queue_unserved 1 when the queue has due tasks and no live worker (its tasks wait until one comes), else 0.
# TYPE rota_queue_unserved gauge
rota_queue_unserved{queue="default"} 0
rota_queue_unserved{queue="orphans"} 1
# HELP rota_workers Live workers (seen within 30 s) serving the queue, of every kind and mode.
# TYPE rota_workers gauge
rota_workers{queue="default"} 2
rota_workers{queue="emails"} 1
rota_workers{queue="orphans"} 0
# HELP rota_workers_up 1 when the last registry query for rota_workers succeeded, 0 when it failed.
# TYPE rota_workers_up gauge
rota_workers_up 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
