package dashboard

import (
	"net/http"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// TestScheduleOverlapShown: the schedule page shows the overlap policy, the current and
// waiting runs, the skipped ticks and a held run as held (not at its far-future time);
// the list shows the policy and the skipped count.
func TestScheduleOverlapShown(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		if _, err := st.CreateSchedule(ctx(t), store.ScheduleParams{Name: "buf", CronSpec: "0 0 1 1 *",
			Overlap: store.OverlapBufferOne, Task: store.TaskTemplate{Kind: "noop", Queue: "buf"}}); err != nil {
			t.Fatal(err)
		}
		base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
		var runs []*store.Task
		for i := range 3 { // run, held run, skipped tick
			if _, err := st.RescheduleSchedule(ctx(t), "buf", base.Add(time.Duration(i)*time.Second)); err != nil {
				t.Fatal(err)
			}
			claims, err := st.ClaimDueSchedules(ctx(t), store.ClaimSchedulesParams{Limit: 10})
			if err != nil || len(claims) != 1 {
				t.Fatalf("claim %d: %v %v", i, claims, err)
			}
			runs = append(runs, claims[0].Runs...)
		}
		if len(runs) != 2 {
			t.Fatalf("%d runs, want the running one and the held one", len(runs))
		}
		b := newBrowser(t, newDashboard(t, Config{Store: st}))
		p := b.get("/schedules/buf").want(t, http.StatusOK)
		p.contains(t, `<dd class="overlap">buffer_one</dd>`,
			`<dd class="current-run"><a href="/tasks/`+runs[0].ID.String()+`">`,
			`<dd class="waiting-run"><a href="/tasks/`+runs[1].ID.String()+`">`,
			`<dd class="skipped-ticks">1 <span class="muted">(last</span>`,
			`<p class="skipped-note muted">1 tick got no run (catch-up one, overlap buffer_one)`,
			`<span class="badge badge-held">held</span>`)
		p.lacks(t, "9999-12-31")
		b.get("/schedules").want(t, http.StatusOK).contains(t,
			`<td class="overlap">buffer_one <span class="muted" title="ticks that got no run">(1 skipped)</span></td>`)
	})
}
