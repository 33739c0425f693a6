package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// TestScheduleClaimWakesWorkersAfterCommit: a schedule claim's runs wake their workers
// through the store's wake sender once the claim has committed, one wake-up per queue
// with a due run, and the insert trigger stays silent in the claim's transaction
// (rota.notify_after_commit): a notifying transaction holds PostgreSQL's one notify lock
// through its commit's WAL flush, so concurrent claims committed one after another.
// Before, the trigger notified from inside the claim and the store sent nothing.
func TestScheduleClaimWakesWorkersAfterCommit(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	var (
		mu    sync.Mutex
		woken []string
	)
	postgres.SendWakeUpsTo(st, func(queues []string) {
		mu.Lock()
		defer mu.Unlock()
		woken = append(woken, queues...)
	})
	conn, err := pgx.Connect(ctx, pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `LISTEN rota_tasks`); err != nil {
		t.Fatal(err)
	}
	for i, queue := range []string{"a", "a", "b"} {
		if _, err := st.CreateSchedule(ctx, store.ScheduleParams{Name: fmt.Sprintf("wake-%d", i),
			CronSpec: "0 0 1 1 *", Task: store.TaskTemplate{Kind: "noop", Queue: queue}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE rota.schedules SET next_run_at = $1`, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}

	claims, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 3 {
		t.Fatalf("claimed %d schedules, want 3", len(claims))
	}
	// The wake sender sends from its own goroutine: wait for it, then for anything more.
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(slices.Values(woken))
	}
	eventually(t, 10*time.Second, "the store's wake-up", func() bool { return len(got()) >= 2 })
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if n, err := conn.WaitForNotification(wctx); err == nil {
		t.Errorf("the claim's transaction notified %q itself (the insert trigger)", n.Payload)
	}
	if w := got(); !slices.Equal(w, []string{"a", "b"}) {
		t.Errorf("the store woke %q after the claim, want a and b once each", w)
	}
}
