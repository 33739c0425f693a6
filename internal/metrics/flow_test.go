package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rotaqueue/rota/internal/metrics"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

// runGrouped creates and claims n tasks of queue in group.
func runGrouped(t *testing.T, st store.Store, queue, group string, n int) {
	t.Helper()
	ctx := context.Background()
	for range n {
		if _, err := st.CreateTasks(ctx, []store.CreateParams{{Queue: queue, Kind: "k", GroupKey: group}}); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: queue, From: store.StatusPending, WorkerID: "w", Limit: 1000, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != n {
		t.Fatalf("claimed %d of %d: %v", len(claimed), n, err)
	}
}

// rota_queue_paused covers every configured queue; rota_group_running the busiest
// groups of queues with a group limit, the rest summed under "_other".
func TestFlowCollectorGauges(t *testing.T) {
	st := memory.New()
	t.Cleanup(st.Close)
	ctx := context.Background()
	paused := true
	five := 5
	for q, p := range map[string]store.QueuePatch{
		"stopped": {Paused: &paused},
		"tenants": {GroupConcurrency: &store.Change[int]{To: &five}},
		"plain":   {Concurrency: &store.Change[int]{To: &five}},
		"quiet":   {GroupRate: &store.Change[store.RateLimit]{To: &store.RateLimit{Limit: 1, PerSeconds: 1}}},
	} {
		if _, err := st.UpdateQueueSettings(ctx, q, p); err != nil {
			t.Fatal(err)
		}
	}
	runGrouped(t, st, "tenants", "big", 4)
	runGrouped(t, st, "tenants", "mid", 3)
	runGrouped(t, st, "tenants", "b-small", 2)
	runGrouped(t, st, "tenants", "a-small", 2)
	runGrouped(t, st, "tenants", "tiny", 1)
	runGrouped(t, st, "tenants", "_other", 1)
	runGrouped(t, st, "plain", "g", 2) // no group limit: no group series

	c := metrics.NewFlowCollector(metrics.FlowCollectorConfig{Store: st, TopGroups: 3})
	want := `
# HELP rota_group_running Running (PROCESSING) tasks of a group_key of a queue with a group limit: the busiest groups each, the rest summed under group="_other".
# TYPE rota_group_running gauge
rota_group_running{group="_other",queue="quiet"} 0
rota_group_running{group="_other",queue="tenants"} 4
rota_group_running{group="a-small",queue="tenants"} 2
rota_group_running{group="big",queue="tenants"} 4
rota_group_running{group="mid",queue="tenants"} 3
# HELP rota_queue_paused 1 while the queue is paused (no claims take its tasks), else 0; configured queues only.
# TYPE rota_queue_paused gauge
rota_queue_paused{queue="plain"} 0
rota_queue_paused{queue="quiet"} 0
rota_queue_paused{queue="stopped"} 1
rota_queue_paused{queue="tenants"} 0
# HELP rota_queue_settings_up 1 when the last store queries for rota_queue_paused and rota_group_running succeeded, 0 when one failed.
# TYPE rota_queue_settings_up gauge
rota_queue_settings_up 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// However many groups run, a queue exports at most TopGroups + 1 group series.
func TestFlowCollectorBoundsGroups(t *testing.T) {
	st := memory.New()
	t.Cleanup(st.Close)
	one := 1
	if _, err := st.UpdateQueueSettings(context.Background(), "q", store.QueuePatch{GroupConcurrency: &store.Change[int]{To: &one}}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		runGrouped(t, st, "q", fmt.Sprintf("tenant-%03d", i), 1)
	}
	c := metrics.NewFlowCollector(metrics.FlowCollectorConfig{Store: st})
	if n := testutil.CollectAndCount(c, "rota_group_running"); n != metrics.DefaultTopGroups+1 {
		t.Fatalf("%d rota_group_running series, want %d", n, metrics.DefaultTopGroups+1)
	}
}

type failingFlow struct{ metrics.FlowSource }

func (failingFlow) ListQueueSettings(context.Context) ([]*store.QueueSettings, error) {
	return nil, errors.New("down")
}

func TestFlowCollectorStoreDown(t *testing.T) {
	c := metrics.NewFlowCollector(metrics.FlowCollectorConfig{Store: failingFlow{}, Logger: quietLog})
	want := `
# HELP rota_queue_settings_up 1 when the last store queries for rota_queue_paused and rota_group_running succeeded, 0 when one failed.
# TYPE rota_queue_settings_up gauge
rota_queue_settings_up 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
