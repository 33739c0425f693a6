package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// TestScheduleClaimKeepsToItsSlots: claims of a batch work only in their slots
// (queries/schedule_claim_lock.sql): while other claims hold every slot, a claim returns
// nothing, though schedules are due, and takes them once a slot is free. Small batches
// get many slots, a batch of 100 two. (Before, every claimer worked at once, and at
// batch 100 each claim lasted as long as all of them together.)
func TestScheduleClaimKeepsToItsSlots(t *testing.T) {
	t.Parallel()
	if got := []int{postgres.ScheduleClaimSlots(1), postgres.ScheduleClaimSlots(20), postgres.ScheduleClaimSlots(100),
		postgres.ScheduleClaimSlots(1000)}; got[0] != 200 || got[1] != 10 || got[2] != 2 || got[3] != 1 {
		t.Fatalf("slots at batch 1, 20, 100, 1000: %v, want 200, 10, 2, 1", got)
	}
	st, pool := newStore(t)
	ctx := context.Background()
	for i := range 3 {
		if _, err := st.CreateSchedule(ctx, store.ScheduleParams{Name: fmt.Sprintf("slot-%d", i),
			CronSpec: "0 0 1 1 *", Task: store.TaskTemplate{Kind: "noop", Queue: "slots"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE rota.schedules SET next_run_at = $1`, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	const limit = 1000 // one slot
	// Claims in progress, as far as the slots go: they hold every slot of the batch.
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) //nolint:errcheck // the test ends it below
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock(1919906913, $1 + s) FROM generate_series(0, $2 - 1) s`,
		postgres.ScheduleClaimStripes, postgres.ScheduleClaimSlots(limit)); err != nil {
		t.Fatal(err)
	}
	claims, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 0 {
		t.Fatalf("a claim beside holders of every slot took %d schedules, want none", len(claims))
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	claims, err = st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 3 {
		t.Fatalf("once a slot was free the claim took %d schedules, want 3", len(claims))
	}
}
