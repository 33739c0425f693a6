package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return New() })
}

// backlog creates n due tasks in queue q with priorities cycling over 0..9 and due
// times spread over the past hour, plus n/10 high-priority tasks not yet due.
func backlog(tb testing.TB, s *Store, q string, n int) {
	tb.Helper()
	now := time.Now()
	const batch = 1000
	for start := 0; start < n; start += batch {
		params := make([]store.CreateParams, 0, batch)
		for i := start; i < min(n, start+batch); i++ {
			params = append(params, store.CreateParams{
				Queue: q, Kind: "k", Priority: i % 10,
				ScheduledFor: now.Add(-time.Duration(i%3600) * time.Second),
			})
			if i%10 == 0 {
				params = append(params, store.CreateParams{Queue: q, Kind: "later", Priority: 100, ScheduledFor: now.Add(time.Hour)})
			}
		}
		if _, err := s.CreateTasks(context.Background(), params); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestLargeBacklog claims a 100,000-task backlog in batches and checks the claim order
// and that claims stay cheap (no scan of the backlog per claim).
func TestLargeBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("large backlog")
	}
	const n = 100_000
	s := New()
	backlog(t, s, "big", n)
	ctx := context.Background()
	p := store.ClaimParams{Queue: "big", From: store.StatusPending, WorkerID: "w", Limit: 100, LeaseDuration: time.Minute}

	// One claim against the full backlog must be fast (a heap pop, not a scan). The
	// bound is generous for slow machines and the race detector.
	start := time.Now()
	first, err := s.ClaimTasks(ctx, store.ClaimParams{Queue: "big", From: store.StatusPending, WorkerID: "w", Limit: 10, LeaseDuration: time.Minute})
	if err != nil || len(first) != 10 {
		t.Fatalf("first claim: %d tasks, %v", len(first), err)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("claiming 10 of a %d-task backlog took %s", n, d)
	}

	total := len(first)
	prev := first[len(first)-1]
	for {
		got, err := s.ClaimTasks(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, task := range got {
			if task.Kind != "k" {
				t.Fatalf("claimed a task that is not due: %+v", task)
			}
			if task.Priority > prev.Priority || (task.Priority == prev.Priority && task.ScheduledFor.Before(prev.ScheduledFor)) {
				t.Fatalf("claim order broken: %d@%s after %d@%s", task.Priority, task.ScheduledFor, prev.Priority, prev.ScheduledFor)
			}
			prev = task
		}
		total += len(got)
	}
	if total != n {
		t.Fatalf("claimed %d tasks, want %d", total, n)
	}
}

func BenchmarkClaimFromLargeBacklog(b *testing.B) {
	s := New()
	backlog(b, s, "big", 100_000)
	ctx := context.Background()
	p := store.ClaimParams{Queue: "big", From: store.StatusPending, WorkerID: "w", Limit: 10, LeaseDuration: time.Minute}
	b.ResetTimer()
	for b.Loop() {
		got, err := s.ClaimTasks(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) == 0 {
			b.StopTimer()
			backlog(b, s, "big", 100_000)
			b.StartTimer()
		}
	}
}

// TestStaleIndexEntriesCompacted: tasks leaving the claim and lease indexes by other
// paths than the heap top (cancels, claims by id, heartbeats) do not grow them forever.
func TestStaleIndexEntriesCompacted(t *testing.T) {
	s := New()
	ctx := context.Background()
	const n = 5000
	params := make([]store.CreateParams, n)
	for i := range params {
		params[i] = store.CreateParams{Kind: "k"}
	}
	res, err := s.CreateTasks(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if _, err := s.CancelTask(ctx, r.Task.ID); err != nil {
			t.Fatal(err)
		}
	}
	// Each new task may trigger a compaction.
	for range 10 {
		if _, err := s.CreateTasks(ctx, []store.CreateParams{{Kind: "k"}}); err != nil {
			t.Fatal(err)
		}
	}
	cq := s.claimable[queueStatus{store.DefaultQueue, store.StatusPending}]
	if size := cq.ready.Len() + cq.future.Len(); size > 2048 {
		t.Fatalf("claim index holds %d items for %d live tasks", size, cq.live)
	}
	if cq.live != 10 {
		t.Fatalf("live = %d, want 10", cq.live)
	}

	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Queue: store.DefaultQueue, From: store.StatusPending, WorkerID: "w", Limit: 1, LeaseDuration: time.Hour})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	for range n {
		if _, err := s.Heartbeat(ctx, store.HeartbeatParams{TaskID: claimed[0].ID, LeaseToken: claimed[0].LeaseToken, LeaseDuration: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if s.leases.Len() > 2048 {
		t.Fatalf("lease index holds %d items for %d leases", s.leases.Len(), len(s.processing))
	}
}

// TestClockInjected drives due times and lease expiry with a fake clock.
func TestClockInjected(t *testing.T) {
	s := New()
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	ctx := context.Background()
	if _, err := s.CreateTasks(ctx, []store.CreateParams{
		{Kind: "a", ScheduledFor: now.Add(time.Minute)},
		{Kind: "b", ScheduledFor: now.Add(95 * time.Second), Priority: 5},
	}); err != nil {
		t.Fatal(err)
	}
	claimP := store.ClaimParams{Queue: store.DefaultQueue, From: store.StatusPending, WorkerID: "w", Limit: 10, LeaseDuration: 30 * time.Second}
	claimKinds := func() string {
		got, err := s.ClaimTasks(ctx, claimP)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, task := range got {
			out += task.Kind
		}
		return out
	}
	if got := claimKinds(); got != "" {
		t.Fatalf("claimed %q before anything was due", got)
	}
	now = now.Add(90 * time.Second)
	if got := claimKinds(); got != "a" {
		t.Fatalf("claimed %q, want a", got)
	}
	now = now.Add(10 * time.Second)
	if got := claimKinds(); got != "b" {
		t.Fatalf("claimed %q, want b", got)
	}
	if n, err := s.ReapExpiredLeases(ctx, store.ReapParams{Limit: 10}); n != 0 || err != nil {
		t.Fatalf("reaped %d live leases, %v", n, err)
	}
	now = now.Add(25 * time.Second) // a's lease expired 5s ago, b's expires in 5s
	s.rnd = func() float64 { return 0.5 }
	if n, _ := s.ReapExpiredLeases(ctx, store.ReapParams{Limit: 10, BackoffBase: time.Minute, BackoffMax: time.Hour}); n != 1 {
		t.Fatalf("reaped %d, want 1", n)
	}
	if a, _, _ := s.ListTasks(ctx, store.ListParams{Statuses: []store.Status{store.StatusPending}}); len(a) != 1 || !a[0].ScheduledFor.Equal(now.Add(30*time.Second)) {
		t.Fatalf("reaped task: %+v, want it due in 30s (half of the first retry's 1m ceiling)", a)
	}
	st, _ := s.Stats(ctx)
	if len(st) != 1 || st[0].Counts[store.StatusPending] != 1 || st[0].Counts[store.StatusProcessing] != 1 || st[0].OldestDueAt != nil {
		t.Fatalf("stats %+v, want a backing off and b running", st)
	}
}

func TestCloseClosesWaiters(t *testing.T) {
	s := New()
	ch, err := s.WaitForTasks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("got a wake-up instead of a closed channel")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("channel not closed by Close")
	}
	ch, err = s.WaitForTasks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ch; ok {
		t.Fatal("WaitForTasks after Close returned an open channel")
	}
}

func ExampleNew() {
	s := New()
	defer s.Close()
	ctx := context.Background()
	res, _ := s.CreateTasks(ctx, []store.CreateParams{{Kind: "email.send", Payload: []byte(`{"to":"a@example.com"}`)}})
	claimed, _ := s.ClaimTasks(ctx, store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w1", Limit: 1, LeaseDuration: time.Minute})
	out, _ := s.RecordOutcomes(ctx, []store.Outcome{{TaskID: claimed[0].ID, LeaseToken: claimed[0].LeaseToken, Kind: store.Succeed}})
	fmt.Println(res[0].Task.Status, claimed[0].Status, out[0].Status)
	// Output: PENDING PROCESSING SUCCEEDED
}

// groupedBacklog creates a big group of n tasks first, then small groups of 10 tasks.
func groupedBacklog(tb testing.TB, s *Store, q string, n, small int) {
	tb.Helper()
	var params []store.CreateParams
	for range n {
		params = append(params, store.CreateParams{Queue: q, Kind: "k", GroupKey: "big"})
	}
	for g := range small {
		for range 10 {
			params = append(params, store.CreateParams{Queue: q, Kind: "k", GroupKey: fmt.Sprintf("small-%d", g)})
		}
	}
	if _, err := s.CreateTasks(context.Background(), params); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkClaimFairGroupedBacklog: claims take groups in turn, under limits, without
// walking the big group's backlog (compare BenchmarkClaimFromLargeBacklog).
func BenchmarkClaimFairGroupedBacklog(b *testing.B) {
	for _, limited := range []bool{false, true} {
		b.Run(fmt.Sprintf("limited=%v", limited), func(b *testing.B) {
			s := New()
			if limited {
				ten := 10
				if _, err := s.UpdateQueueSettings(context.Background(), "g", store.QueuePatch{
					GroupConcurrency: &store.Change[int]{To: &ten}}); err != nil {
					b.Fatal(err)
				}
			}
			groupedBacklog(b, s, "g", 100_000, 100)
			ctx := context.Background()
			p := store.ClaimParams{Queue: "g", From: store.StatusPending, WorkerID: "w", Limit: 10, LeaseDuration: time.Minute}
			b.ResetTimer()
			for b.Loop() {
				got, err := s.ClaimTasks(ctx, p)
				if err != nil {
					b.Fatal(err)
				}
				outs := make([]store.Outcome, len(got))
				for i, task := range got {
					outs[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}
				}
				if _, err := s.RecordOutcomes(ctx, outs); err != nil {
					b.Fatal(err)
				}
				if len(got) == 0 {
					b.StopTimer()
					groupedBacklog(b, s, "g", 100_000, 100)
					b.StartTimer()
				}
			}
		})
	}
}

// TestResumeWakesWaiters: resuming a queue (or changing a limit) wakes the workers
// waiting for its tasks, which a paused claim sent back to waiting.
func TestResumeWakesWaiters(t *testing.T) {
	s := New()
	ctx := t.Context()
	paused, resumed := true, false
	if _, err := s.UpdateQueueSettings(ctx, "q", store.QueuePatch{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	ch, err := s.WaitForTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateQueueSettings(ctx, "q", store.QueuePatch{Paused: &resumed}); err != nil {
		t.Fatal(err)
	}
	select {
	case q := <-ch:
		if q != "q" {
			t.Fatalf("woken for queue %q, want q", q)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("resume woke no waiter")
	}
}
