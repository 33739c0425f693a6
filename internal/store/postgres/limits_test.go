package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
)

// Flow control in the PostgreSQL claim (limits.go, migration 0022): never exceeded with
// many claimers racing (LIMITS.md rule 6), the report of a claim held back (rule 10),
// and fair claiming across groups (rule 8).

func setQueue(t *testing.T, st store.Store, queue string, patch store.QueuePatch) {
	t.Helper()
	if _, err := st.UpdateQueueSettings(context.Background(), queue, patch); err != nil {
		t.Fatalf("update queue settings: %v", err)
	}
}

func intChange(n int) *store.Change[int] { return &store.Change[int]{To: &n} }

func rateChange(limit, per int) *store.Change[store.RateLimit] {
	return &store.Change[store.RateLimit]{To: &store.RateLimit{Limit: limit, PerSeconds: per}}
}

func createN(t *testing.T, st store.Store, queue string, n int, group func(i int) string) []*store.Task {
	t.Helper()
	params := make([]store.CreateParams, n)
	for i := range params {
		params[i] = store.CreateParams{Queue: queue, Kind: "k", GroupKey: group(i)}
	}
	return mustCreate(t, st, params...)
}

func noGroup(int) string { return "" }

// raceClaims runs claimers goroutines against queue until stop is closed or the queue
// has no task left to claim: each claims up to 5 tasks (every third claimer by id,
// picking pending ids, as the SQS worker does), holds them a moment and finishes them
// with outcome. Returns how many tasks were claimed.
func raceClaims(t *testing.T, st store.Store, pool *pgxpool.Pool, queue string, claimers int, stop <-chan struct{}, outcome store.OutcomeKind) int64 {
	t.Helper()
	ctx := context.Background()
	var claimed atomic.Int64
	var wg sync.WaitGroup
	for c := range claimers {
		wg.Go(func() {
			worker := fmt.Sprintf("w%d", c)
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := store.ClaimParams{Queue: queue, From: store.StatusPending, WorkerID: worker,
					Limit: 5, LeaseDuration: time.Minute, Report: &store.ClaimReport{}}
				if c%3 == 2 {
					p.TaskIDs = pendingIDs(t, pool, queue, 8)
					if len(p.TaskIDs) == 0 {
						return
					}
				}
				tasks, err := st.ClaimTasks(ctx, p)
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if len(tasks) == 0 {
					if p.Report.HeldBack == "" && remaining(t, pool, queue) == 0 {
						return
					}
					time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond)
					continue
				}
				claimed.Add(int64(len(tasks)))
				time.Sleep(time.Duration(rand.IntN(4)) * time.Millisecond)
				outs := make([]store.Outcome, len(tasks))
				for i, task := range tasks {
					outs[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: outcome}
				}
				if _, err := st.RecordOutcomes(ctx, outs); err != nil {
					t.Errorf("record outcomes: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	return claimed.Load()
}

func pendingIDs(t *testing.T, pool *pgxpool.Pool, queue string, n int) []uuid.UUID {
	rows, err := pool.Query(context.Background(),
		`SELECT id FROM rota.tasks WHERE queue = $1 AND status = 'PENDING' ORDER BY random() LIMIT $2`, queue, n)
	if err != nil {
		t.Errorf("pending ids: %v", err)
		return nil
	}
	var ids []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			t.Errorf("pending ids: %v", err)
		}
		ids = append(ids, id)
	}
	return ids
}

func remaining(t *testing.T, pool *pgxpool.Pool, queue string) int {
	var n int
	if err := pool.QueryRow(context.Background(),
		`SELECT count(*) FROM rota.tasks WHERE queue = $1 AND status IN ('PENDING', 'PROCESSING')`, queue).Scan(&n); err != nil {
		t.Errorf("remaining: %v", err)
	}
	return n
}

// sampleMax reads sql (one integer) every millisecond until stop closes and returns the
// largest value seen. Each read is one statement: one consistent snapshot.
func sampleMax(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) (stop func() int) {
	done := make(chan struct{})
	result := make(chan int, 1)
	go func() {
		highest := 0
		for {
			select {
			case <-done:
				result <- highest
				return
			default:
			}
			var n *int
			if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
				t.Errorf("sample: %v", err)
			}
			if n != nil && *n > highest {
				highest = *n
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return func() int { close(done); return <-result }
}

func TestClaimRaceNeverExceedsConcurrency(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	const queue, limit = "conc", 3
	setQueue(t, st, queue, store.QueuePatch{Concurrency: intChange(limit)})
	createN(t, st, queue, 300, noGroup)

	stopSampling := sampleMax(t, pool,
		`SELECT count(*)::int FROM rota.tasks WHERE queue = $1 AND status = 'PROCESSING'`, queue)
	claimed := raceClaims(t, st, pool, queue, 12, nil, store.Succeed)
	if most := stopSampling(); most > limit {
		t.Fatalf("%d tasks PROCESSING at once, concurrency is %d", most, limit)
	} else if most == 0 {
		t.Fatalf("the sampler never saw a running task")
	}
	if claimed != 300 {
		t.Fatalf("claimed %d tasks, want all 300", claimed)
	}
}

func TestClaimRaceNeverExceedsGroupConcurrency(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	const queue, limit = "gconc", 2
	setQueue(t, st, queue, store.QueuePatch{GroupConcurrency: intChange(limit)})
	// Ungrouped tasks are not subject to group limits: they may run beyond it.
	createN(t, st, queue, 300, func(i int) string {
		if i%10 == 9 {
			return ""
		}
		return fmt.Sprintf("g%d", i%4)
	})

	stopSampling := sampleMax(t, pool, `SELECT max(n)::int FROM (SELECT count(*) AS n FROM rota.tasks
		WHERE queue = $1 AND status = 'PROCESSING' AND group_key IS NOT NULL GROUP BY group_key) g`, queue)
	claimed := raceClaims(t, st, pool, queue, 12, nil, store.Succeed)
	if most := stopSampling(); most > limit {
		t.Fatalf("%d tasks of one group PROCESSING at once, group_concurrency is %d", most, limit)
	}
	if claimed != 300 {
		t.Fatalf("claimed %d tasks, want all 300", claimed)
	}
}

// claimTimes returns every claim time of the queue's tasks (ended attempts and running
// ones) by group.
func claimTimes(t *testing.T, pool *pgxpool.Pool, queue string) map[string][]time.Time {
	rows, err := pool.Query(context.Background(), `
		SELECT coalesce(t.group_key, ''), a.started_at FROM rota.task_attempts a JOIN rota.tasks t ON t.id = a.task_id
		WHERE t.queue = $1 AND a.outcome <> 'REPLAYED'
		UNION ALL
		SELECT coalesce(group_key, ''), processing_started_at FROM rota.tasks WHERE queue = $1 AND status = 'PROCESSING'`, queue)
	if err != nil {
		t.Fatalf("claim times: %v", err)
	}
	defer rows.Close()
	out := map[string][]time.Time{}
	for rows.Next() {
		var g string
		var at time.Time
		if err := rows.Scan(&g, &at); err != nil {
			t.Fatalf("claim times: %v", err)
		}
		out[g] = append(out[g], at)
	}
	return out
}

// busiestWindow returns the most claim times in any window of length per (t-per, t].
func busiestWindow(times []time.Time, per time.Duration) int {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	most, lo := 0, 0
	for hi, at := range times {
		for !times[lo].After(at.Add(-per)) {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}

func TestClaimRaceNeverExceedsRate(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	const queue, limit = "rate", 15
	setQueue(t, st, queue, store.QueuePatch{Rate: rateChange(limit, 1)})
	createN(t, st, queue, 400, noGroup)

	// Retried at once: a task claimed again within the window counts twice (rule 3).
	stop := make(chan struct{})
	time.AfterFunc(2500*time.Millisecond, func() { close(stop) })
	claimed := raceClaims(t, st, pool, queue, 10, stop, store.Retry)
	var all []time.Time
	for _, ts := range claimTimes(t, pool, queue) {
		all = append(all, ts...)
	}
	if int64(len(all)) != claimed {
		t.Fatalf("%d claim times recorded, %d claims made", len(all), claimed)
	}
	if most := busiestWindow(all, time.Second); most > limit {
		t.Fatalf("%d claims within one second, rate is %d per second", most, limit)
	}
	if claimed < 2*limit {
		t.Fatalf("only %d claims in 2.5 s at %d per second", claimed, limit)
	}
}

func TestClaimRaceNeverExceedsGroupRate(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	const queue, limit = "grate", 4
	setQueue(t, st, queue, store.QueuePatch{GroupRate: rateChange(limit, 1)})
	createN(t, st, queue, 400, func(i int) string { return fmt.Sprintf("g%d", i%3) })

	stop := make(chan struct{})
	time.AfterFunc(2500*time.Millisecond, func() { close(stop) })
	claimed := raceClaims(t, st, pool, queue, 10, stop, store.Retry)
	for g, times := range claimTimes(t, pool, queue) {
		if most := busiestWindow(times, time.Second); most > limit {
			t.Fatalf("group %s: %d claims within one second, group_rate is %d per second", g, most, limit)
		}
	}
	if claimed < 3*limit {
		t.Fatalf("only %d claims in 2.5 s", claimed)
	}
}

func TestClaimReportsWhatHeldItBack(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	claim := func(queue string, limit int, ids ...uuid.UUID) ([]*store.Task, store.ClaimReport) {
		t.Helper()
		var r store.ClaimReport
		tasks := mustClaim(t, st, store.ClaimParams{Queue: queue, Limit: limit, TaskIDs: ids, Report: &r})
		return tasks, r
	}

	t.Run("paused", func(t *testing.T) {
		tasks := createN(t, st, "p", 2, noGroup)
		setQueue(t, st, "p", store.QueuePatch{Paused: new(true)})
		if got, r := claim("p", 5); len(got) != 0 || r.HeldBack != store.HeldByPause {
			t.Fatalf("claimed %d, report %+v; want none, paused", len(got), r)
		}
		if got, r := claim("p", 5, tasks[0].ID); len(got) != 0 || r.HeldBack != store.HeldByPause {
			t.Fatalf("by id: claimed %d, report %+v; want none, paused", len(got), r)
		}
		setQueue(t, st, "p", store.QueuePatch{Paused: new(false)})
		if got, r := claim("p", 5); len(got) != 2 || r.HeldBack != "" {
			t.Fatalf("resumed: claimed %d, report %+v; want 2, none", len(got), r)
		}
	})
	t.Run("concurrency", func(t *testing.T) {
		tasks := createN(t, st, "c", 5, noGroup)
		setQueue(t, st, "c", store.QueuePatch{Concurrency: intChange(2)})
		if got, r := claim("c", 5); len(got) != 2 || r.HeldBack != store.HeldByConcurrency || r.RetryIn != 0 {
			t.Fatalf("claimed %d, report %+v; want 2, concurrency", len(got), r)
		}
		if got, r := claim("c", 5, tasks[4].ID); len(got) != 0 || r.HeldBack != store.HeldByConcurrency {
			t.Fatalf("by id: claimed %d, report %+v; want none, concurrency", len(got), r)
		}
	})
	t.Run("rate", func(t *testing.T) {
		createN(t, st, "r", 5, noGroup)
		setQueue(t, st, "r", store.QueuePatch{Rate: rateChange(3, 60)})
		got, r := claim("r", 5)
		if len(got) != 3 || r.HeldBack != store.HeldByRate || r.RetryIn <= 50*time.Second || r.RetryIn > time.Minute {
			t.Fatalf("claimed %d, report %+v; want 3, rate in about a minute", len(got), r)
		}
		if got, r := claim("r", 5); len(got) != 0 || r.HeldBack != store.HeldByRate {
			t.Fatalf("claimed %d, report %+v; want none, rate", len(got), r)
		}
	})
	t.Run("group limits", func(t *testing.T) {
		createN(t, st, "g", 6, func(i int) string { return []string{"a", "b", ""}[i%3] })
		setQueue(t, st, "g", store.QueuePatch{GroupConcurrency: intChange(1)})
		// a, b and both ungrouped tasks (no group limit applies to them).
		if got, r := claim("g", 6); len(got) != 4 || r.HeldBack != store.HeldByGroupConcurrency {
			t.Fatalf("claimed %d, report %+v; want 4, group_concurrency", len(got), r)
		}
		createN(t, st, "gr", 4, func(int) string { return "a" })
		setQueue(t, st, "gr", store.QueuePatch{GroupRate: rateChange(1, 30)})
		got, r := claim("gr", 4)
		if len(got) != 1 || r.HeldBack != store.HeldByGroupRate || r.RetryIn <= 20*time.Second || r.RetryIn > 30*time.Second {
			t.Fatalf("claimed %d, report %+v; want 1, group_rate in about 30 s", len(got), r)
		}
	})
	t.Run("not held back", func(t *testing.T) {
		createN(t, st, "n", 2, noGroup)
		setQueue(t, st, "n", store.QueuePatch{Concurrency: intChange(10)})
		if got, r := claim("n", 5); len(got) != 2 || r.HeldBack != "" {
			t.Fatalf("claimed %d, report %+v; want 2, none", len(got), r)
		}
		if got, r := claim("unconfigured", 5); len(got) != 0 || r.HeldBack != "" {
			t.Fatalf("claimed %d, report %+v; want none, none", len(got), r)
		}
	})
}

// Fairness without any setting: a group with a big backlog, enqueued first, does not
// delay another group's tasks by more than one round; the turn rotates across claims;
// priorities come first.
func TestClaimTakesGroupsInTurn(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	// The ungrouped tasks first: in a queue with grouped tasks, the ungrouped turn looks
	// at the 100 oldest due tasks of the level (docs/architecture.md, "Flow control").
	createN(t, st, "fair", 2, noGroup)
	createN(t, st, "fair", 200, func(int) string { return "big" })
	createN(t, st, "fair", 4, func(int) string { return "small" })

	var order []string
	for range 8 {
		got := mustClaim(t, st, store.ClaimParams{Queue: "fair", Limit: 1})
		if len(got) != 1 {
			t.Fatalf("claimed %d, want 1", len(got))
		}
		order = append(order, got[0].GroupKey)
	}
	want := []string{"big", "small", "", "big", "small", "", "big", "small"}
	if !slices.Equal(order, want) {
		t.Fatalf("groups claimed in order %q, want %q", order, want)
	}

	// A bigger claim shares itself among the groups.
	got := mustClaim(t, st, store.ClaimParams{Queue: "fair", Limit: 6})
	per := map[string]int{}
	for _, task := range got {
		per[task.GroupKey]++
	}
	if len(got) != 6 || per["small"] != 1 || per["big"] != 5 { // small had one left, "" none
		t.Fatalf("claim of 6 took %v", per)
	}

	// Priorities first: a high-priority task of the big group beats every group below.
	mustCreate(t, st, store.CreateParams{Queue: "fair", Kind: "k", GroupKey: "big", Priority: 5})
	createN(t, st, "fair", 1, func(int) string { return "other" })
	if got := mustClaim(t, st, store.ClaimParams{Queue: "fair", Limit: 1}); got[0].Priority != 5 {
		t.Fatalf("claimed priority %d first, want 5", got[0].Priority)
	}
}

// Group and queue limits together: a claim takes what fits (rule 5).
func TestClaimGroupsUnderLimitsTakesWhatFits(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	setQueue(t, st, "mix", store.QueuePatch{Concurrency: intChange(10), GroupConcurrency: intChange(3)})
	createN(t, st, "mix", 50, func(i int) string { return fmt.Sprintf("g%d", i%2) })
	got := mustClaim(t, st, store.ClaimParams{Queue: "mix", Limit: 10})
	if len(got) != 6 { // 3 per group
		t.Fatalf("claimed %d, want 6 (group_concurrency 3, two groups)", len(got))
	}
	var running int
	if err := pool.QueryRow(context.Background(),
		`SELECT count(*) FROM rota.tasks WHERE queue = 'mix' AND status = 'PROCESSING'`).Scan(&running); err != nil {
		t.Fatal(err)
	}
	if running != 6 {
		t.Fatalf("%d running, want 6", running)
	}
}

// SQS mode's enqueuer sends no more than the queue's settings let run now (LIMITS.md
// rule 9): the claim would only turn the rest away, and the workers hide them again.
func TestEnqueueDueSendsWhatMayRun(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()
	send := func(queue string) int {
		t.Helper()
		n, err := st.EnqueueDue(ctx, store.EnqueueParams{Queue: queue, Limit: 50, RedeliverAfter: time.Hour},
			func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) { return ids, nil })
		if err != nil {
			t.Fatalf("enqueue due: %v", err)
		}
		return n
	}

	createN(t, st, "paused", 5, noGroup)
	setQueue(t, st, "paused", store.QueuePatch{Paused: new(true)})
	if n := send("paused"); n != 0 {
		t.Errorf("paused: sent %d, want none", n)
	}
	setQueue(t, st, "paused", store.QueuePatch{Paused: new(false)})
	if n := send("paused"); n != 5 {
		t.Errorf("resumed: sent %d, want 5", n)
	}

	createN(t, st, "conc", 10, noGroup)
	setQueue(t, st, "conc", store.QueuePatch{Concurrency: intChange(3)})
	if got := mustClaim(t, st, store.ClaimParams{Queue: "conc", Limit: 1}); len(got) != 1 {
		t.Fatalf("claimed %d, want 1", len(got))
	}
	if n := send("conc"); n != 2 { // 3 - 1 running
		t.Errorf("concurrency 3, one running: sent %d, want 2", n)
	}
	if n := send("conc"); n != 0 { // 1 running + 2 sent, unclaimed
		t.Errorf("concurrency 3, one running, two sent: sent %d, want none", n)
	}

	createN(t, st, "rate", 10, noGroup)
	setQueue(t, st, "rate", store.QueuePatch{Rate: rateChange(4, 60)})
	if got := mustClaim(t, st, store.ClaimParams{Queue: "rate", Limit: 1}); len(got) != 1 {
		t.Fatalf("claimed %d, want 1", len(got))
	}
	if n := send("rate"); n != 3 { // 4 - 1 claimed in the window
		t.Errorf("rate 4 per minute, one claim: sent %d, want 3", n)
	}
	if n := send("rate"); n != 0 {
		t.Errorf("rate 4 per minute, one claim, three sent: sent %d, want none", n)
	}

	createN(t, st, "free", 7, noGroup)
	if n := send("free"); n != 7 {
		t.Errorf("no settings: sent %d, want 7", n)
	}
}
