package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// TestScheduleClaimKeepsToFreeStripes: a claim passes over the stripes (id % 64) another
// claim holds, whole, instead of walking their rows (migration 0026,
// queries/schedule_claim.sql): with every stripe but one held, a claim takes only the
// due schedules of the free stripe and leaves the rest due; once the holder is gone, the
// next claim takes them. (Before 0026 every claim walked every due row.)
func TestScheduleClaimKeepsToFreeStripes(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	n := 2 * postgres.ScheduleClaimStripes // two per stripe
	for i := range n {
		if _, err := st.CreateSchedule(ctx, store.ScheduleParams{Name: fmt.Sprintf("stripe-%02d", i),
			CronSpec: "0 0 1 1 *", Task: store.TaskTemplate{Kind: "noop", Queue: "stripes"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE rota.schedules SET next_run_at = $1`, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	var free int
	if err := pool.QueryRow(ctx, `SELECT (id % $1)::int FROM rota.schedules WHERE name = 'stripe-07'`, postgres.ScheduleClaimStripes).Scan(&free); err != nil {
		t.Fatal(err)
	}
	var want []string
	rows, err := pool.Query(ctx, `SELECT name FROM rota.schedules WHERE id % $2 = $1 ORDER BY name`, free, postgres.ScheduleClaimStripes)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	if err := rows.Err(); err != nil || len(want) != 2 {
		t.Fatalf("schedules of stripe %d: %v, %v", free, want, err)
	}

	// Another claim in progress, as far as the stripes go: it holds every other stripe.
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) //nolint:errcheck // the test ends it below
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock(1919906913, s) FROM generate_series(0, $2 - 1) s WHERE s <> $1`,
		free, postgres.ScheduleClaimStripes); err != nil {
		t.Fatal(err)
	}

	claims, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range claims {
		got = append(got, c.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("claim beside a holder of every other stripe took %v, want the free stripe's %v", got, want)
	}

	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	claims, err = st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != n-2 {
		t.Fatalf("claim after the holder ended took %d schedules, want the other %d", len(claims), n-2)
	}
}
