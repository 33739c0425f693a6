package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

var attemptTests = []testCase{
	{"HistoryInOrder", testAttemptsOrder},
}

func testAttemptsOrder(t *testing.T, s store.Store) {
	task := createOne(t, s, store.CreateParams{Kind: "k", MaxAttempts: 5})
	p := claimParams("default", 1)
	p.TaskIDs = []uuid.UUID{task.ID}
	p.WorkerID = "w-a"
	c1 := claim(t, s, p)[0]
	recordOK(t, s, outcome(c1, store.Retry, "e1"), store.StatusPending)
	p.WorkerID = "w-b"
	c2 := claim(t, s, p)[0]
	recordOK(t, s, outcome(c2, store.Fail, "e2"), store.StatusFailed)
	if _, err := s.ReplayTask(ctx(t), task.ID); err != nil {
		t.Fatal(err)
	}
	p.WorkerID = "w-c"
	c3 := claim(t, s, p)[0]

	a := attempts(t, s, task.ID)
	type row struct {
		attempt int
		worker  string
		token   uuid.UUID
		outcome store.AttemptOutcome
		err     string
		open    bool
	}
	want := []row{
		{1, "w-a", c1.LeaseToken, store.OutcomeRetried, "e1", false},
		{2, "w-b", c2.LeaseToken, store.OutcomeFailed, "e2", false},
		{2, "", uuid.Nil, store.OutcomeReplayed, "replayed from FAILED", false},
		{1, "w-c", c3.LeaseToken, "", "", true},
	}
	if len(a) != len(want) {
		t.Fatalf("%d attempt rows, want %d: %+v", len(a), len(want), a)
	}
	for i, w := range want {
		g := a[i]
		if g.TaskID != task.ID || g.Attempt != w.attempt || g.WorkerID != w.worker || g.LeaseToken != w.token ||
			g.Outcome != w.outcome || g.Error != w.err || (g.FinishedAt == nil) != w.open {
			t.Fatalf("attempt row %d = %+v, want %+v", i, g, w)
		}
		// Ended attempts have increasing ids; the running one has none yet (0).
		if w.open != (g.ID == 0) {
			t.Fatalf("attempt row %d: id %d, open %v", i, g.ID, w.open)
		}
		if i > 0 {
			if !w.open && g.ID <= a[i-1].ID {
				t.Fatalf("attempt ids not increasing: %d then %d", a[i-1].ID, g.ID)
			}
			if g.StartedAt.Before(a[i-1].StartedAt) {
				t.Fatalf("attempt %d started before attempt %d", i, i-1)
			}
		}
	}
	// Other tasks' attempts are not mixed in.
	createAndClaim(t, s, store.CreateParams{Kind: "other"})
	if got := attempts(t, s, task.ID); len(got) != len(want) {
		t.Fatalf("%d attempt rows after another task ran", len(got))
	}
	_, err := s.ListAttempts(ctx(t), store.NewID())
	wantErr(t, err, store.ErrNotFound, "ListAttempts of an unknown task")
	// A task that never ran has an empty history, not an error.
	fresh := createOne(t, s, store.CreateParams{Kind: "k"})
	if got := attempts(t, s, fresh.ID); len(got) != 0 {
		t.Fatalf("a new task has %d attempt rows", len(got))
	}
}

var deadLetterTests = []testCase{
	{"FiltersAndPaging", testDeadLettersList},
	{"InvalidParams", testDeadLettersInvalid},
}

func testDeadLettersList(t *testing.T, s store.Store) {
	type spec struct {
		queue, kind string
		reason      store.Status
	}
	specs := []spec{
		{"qa", "ka", store.StatusFailed}, {"qb", "ka", store.StatusDead}, {"qa", "kb", store.StatusDead},
		{"qb", "kb", store.StatusFailed}, {"qa", "ka", store.StatusFailed}, {"qb", "ka", store.StatusDead},
		{"qb", "kb", store.StatusFailed},
	}
	var tasks []*store.Task
	for _, sp := range specs {
		tasks = append(tasks, driveTo(t, s, store.CreateParams{Queue: sp.queue, Kind: sp.kind}, sp.reason))
	}
	// Noise that must not show up.
	driveTo(t, s, store.CreateParams{Queue: "qa", Kind: "ka"}, store.StatusSucceeded)
	driveTo(t, s, store.CreateParams{Queue: "qa", Kind: "ka"}, store.StatusCanceled)

	var got []store.DeadLetter
	var sizes []int
	p := store.DeadLetterParams{Limit: 3}
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("dead-letter paging does not end")
		}
		evs, next, err := s.ListDeadLetters(ctx(t), p)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(evs))
		got = append(got, evs...)
		if next == "" {
			break
		}
		p.Cursor = next
	}
	if !slices.Equal(sizes, []int{3, 3, 1}) {
		t.Fatalf("page sizes %v, want [3 3 1]", sizes)
	}
	for i, ev := range got {
		want := tasks[len(tasks)-1-i] // newest first
		sp := specs[len(specs)-1-i]
		if ev.TaskID != want.ID || ev.Queue != sp.queue || ev.Kind != sp.kind || ev.Reason != sp.reason {
			t.Fatalf("event %d = %+v, want task %s %s/%s %s", i, ev, want.ID, sp.queue, sp.kind, sp.reason)
		}
		if i > 0 && ev.ID >= got[i-1].ID {
			t.Fatalf("events not newest first: id %d after %d", ev.ID, got[i-1].ID)
		}
	}
	// Default limit.
	evs, next, err := s.ListDeadLetters(ctx(t), store.DeadLetterParams{})
	if err != nil || len(evs) != 7 || next != "" {
		t.Fatalf("default page: %d events, cursor %q, %v", len(evs), next, err)
	}

	count := func(p store.DeadLetterParams, want int) {
		t.Helper()
		p.Limit = 2
		evs := deadLetters(t, s, p)
		if len(evs) != want {
			t.Fatalf("ListDeadLetters(%+v): %d events, want %d", p, len(evs), want)
		}
		for _, ev := range evs {
			if (p.Queue != "" && ev.Queue != p.Queue) || (p.Kind != "" && ev.Kind != p.Kind) || (p.Reason != "" && ev.Reason != p.Reason) {
				t.Fatalf("ListDeadLetters(%+v) returned %+v", p, ev)
			}
		}
	}
	count(store.DeadLetterParams{Queue: "qa"}, 3)
	count(store.DeadLetterParams{Queue: "qb"}, 4)
	count(store.DeadLetterParams{Kind: "ka"}, 4)
	count(store.DeadLetterParams{Reason: store.StatusDead}, 3)
	count(store.DeadLetterParams{Reason: store.StatusFailed}, 4)
	count(store.DeadLetterParams{Queue: "qb", Reason: store.StatusFailed}, 2)
	count(store.DeadLetterParams{Queue: "qa", Kind: "ka", Reason: store.StatusFailed}, 2)
	count(store.DeadLetterParams{Queue: "nope"}, 0)
}

func testDeadLettersInvalid(t *testing.T, s store.Store) {
	driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusFailed)
	for _, p := range []store.DeadLetterParams{
		{Cursor: "%%%"},
		{Cursor: store.EncodeTaskCursor(store.NewID())},
		{Limit: -1},
		{Limit: store.MaxListLimit + 1},
		{Reason: store.StatusPending},
		{Reason: store.StatusCanceled},
		{Queue: "\x00"},
		{Kind: "\xff"},
		{Queue: "a b"},
	} {
		_, _, err := s.ListDeadLetters(ctx(t), p)
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("ListDeadLetters(%+v)", p))
	}
}

var statsTests = []testCase{
	{"CountsOldestDueExpired", testStats},
}

func testStats(t *testing.T, s store.Store) {
	if all, err := s.Stats(ctx(t)); err != nil || len(all) != 0 {
		t.Fatalf("Stats of an empty store: %v, %v", all, err)
	}
	now := time.Now().Truncate(time.Millisecond)
	sa := create(t, s,
		store.CreateParams{Queue: "sa", Kind: "k", ScheduledFor: now.Add(-3 * time.Minute)},
		store.CreateParams{Queue: "sa", Kind: "k", ScheduledFor: now.Add(-2 * time.Minute)},
		store.CreateParams{Queue: "sa", Kind: "k", ScheduledFor: now.Add(-1 * time.Minute)},
		store.CreateParams{Queue: "sa", Kind: "k", ScheduledFor: now.Add(time.Hour)},
	)
	claimID(t, s, sa[0].Task, store.StatusPending, shortLease) // PROCESSING, lease expiring
	claimID(t, s, sa[2].Task, store.StatusPending, time.Hour)  // PROCESSING
	driveTo(t, s, store.CreateParams{Queue: "sb", Kind: "k"}, store.StatusSucceeded)
	driveTo(t, s, store.CreateParams{Queue: "sb", Kind: "k"}, store.StatusFailed)
	driveTo(t, s, store.CreateParams{Queue: "sb", Kind: "k"}, store.StatusDead)
	driveTo(t, s, store.CreateParams{Queue: "sb", Kind: "k"}, store.StatusCanceled)
	enq := createOne(t, s, store.CreateParams{Queue: "sb", Kind: "k"})
	wantHanded(t, "queue sb", enqueueAll(t, s, enqueueParams("sb")), enq.ID)
	createOne(t, s, store.CreateParams{Queue: "sc", Kind: "k", ScheduledFor: now.Add(time.Hour)})

	waitExpiredLeases(t, s, "sa", 1)
	all, err := s.Stats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Fatalf("Stats: %d queues, want 3 (sa, sb, sc)", len(all))
	}
	want := map[string]map[store.Status]int64{
		"sa": {store.StatusPending: 2, store.StatusProcessing: 2},
		"sb": {store.StatusSucceeded: 1, store.StatusFailed: 1, store.StatusDead: 1, store.StatusCanceled: 1, store.StatusEnqueued: 1},
		"sc": {store.StatusPending: 1},
	}
	for _, q := range all {
		w, ok := want[q.Queue]
		if !ok {
			t.Fatalf("Stats: unexpected queue %q", q.Queue)
		}
		for _, st := range store.AllStatuses {
			if q.Counts[st] != w[st] {
				t.Fatalf("Stats[%s][%s] = %d, want %d (counts %v)", q.Queue, st, q.Counts[st], w[st], q.Counts)
			}
		}
		switch q.Queue {
		case "sa":
			if q.OldestDueAt == nil {
				t.Fatal("sa: OldestDueAt is nil")
			}
			near(t, "sa OldestDueAt", *q.OldestDueAt, now.Add(-2*time.Minute), time.Millisecond)
			if q.ExpiredLeases != 1 {
				t.Fatalf("sa: ExpiredLeases = %d, want 1", q.ExpiredLeases)
			}
		default:
			isNil(t, q.Queue+" OldestDueAt", q.OldestDueAt)
			if q.ExpiredLeases != 0 {
				t.Fatalf("%s: ExpiredLeases = %d", q.Queue, q.ExpiredLeases)
			}
		}
	}
	reapUntil(t, s, store.ReapParams{Limit: 10, BackoffBase: time.Hour, BackoffMax: time.Hour}, 1)
	if st := statsOf(t, s, "sa"); st.ExpiredLeases != 0 || st.Counts[store.StatusProcessing] != 1 || st.Counts[store.StatusPending] != 3 {
		t.Fatalf("sa after reaping: %+v", st)
	}
}

var waitTests = []testCase{
	{"WakesOnDueInsert", testWaitWakes},
	{"ClosesWhenContextEnds", testWaitCloses},
	{"ListenHearsDueTasksAndCancelRequests", testListen},
	{"NextDue", testNextDue},
}

// testNextDue: one call tells which idle queues have due PENDING tasks, and how soon the
// others will, across priority levels.
func testNextDue(t *testing.T, s store.Store) {
	hour := time.Now().Add(time.Hour)
	createOne(t, s, store.CreateParams{Queue: "now", Kind: "k"})
	create(t, s,
		store.CreateParams{Queue: "later", Kind: "k", ScheduledFor: hour},
		store.CreateParams{Queue: "later", Kind: "k", Priority: 5, ScheduledFor: hour.Add(time.Hour)},
		store.CreateParams{Queue: "mixed", Kind: "k", Priority: 9, ScheduledFor: hour},
		store.CreateParams{Queue: "mixed", Kind: "k", Priority: -3})
	claimed := createOne(t, s, store.CreateParams{Queue: "claimed", Kind: "k"})
	claimID(t, s, claimed, store.StatusPending, time.Minute)

	got, err := s.NextDue(ctx(t), []string{"now", "later", "mixed", "claimed", "empty"})
	if err != nil {
		t.Fatalf("NextDue: %v", err)
	}
	if d, ok := got["now"]; !ok || d > 0 {
		t.Errorf("queue now: %v %v, want due (<= 0)", d, ok)
	}
	if d, ok := got["mixed"]; !ok || d > 0 {
		t.Errorf("queue mixed (a due task below a delayed one): %v %v, want due (<= 0)", d, ok)
	}
	if d, ok := got["later"]; !ok || d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("queue later: %v %v, want about 1h", d, ok)
	}
	for _, q := range []string{"claimed", "empty"} {
		if d, ok := got[q]; ok {
			t.Errorf("queue %s without PENDING tasks reported due in %v", q, d)
		}
	}
	if got, err := s.NextDue(ctx(t), nil); err != nil || len(got) != 0 {
		t.Errorf("NextDue(no queues) = %v, %v; want nothing", got, err)
	}
}

// testListen: Listen reports due inserts by queue and a cancel request of a running task
// by id (the worker stops its handler at once instead of at its next heartbeat).
func testListen(t *testing.T, s store.Store) {
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	ch, err := s.Listen(c)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	createOne(t, s, store.CreateParams{Queue: "q1", Kind: "k"})
	hear(t, ch, store.Notification{Kind: store.TasksDue, Queue: "q1"})
	task := claim(t, s, claimParams("q1", 1))[0]
	if _, err := s.CancelTask(ctx(t), task.ID); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	hear(t, ch, store.Notification{Kind: store.CancelRequested, TaskID: task.ID})
	cancel()
	for range ch { // closed once ctx ends
	}
}

// hear waits for want on ch, ignoring other notifications.
func hear(t *testing.T, ch <-chan store.Notification, want store.Notification) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case n, ok := <-ch:
			if !ok {
				t.Fatalf("Listen channel closed while waiting for %+v", want)
			}
			if n == want {
				return
			}
		case <-timer.C:
			t.Fatalf("no %+v within %s", want, waitTimeout)
		}
	}
}

// receive waits for name on ch (ignoring other names).
func receive(t *testing.T, ch <-chan string, name string) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case q, ok := <-ch:
			if !ok {
				t.Fatalf("wake-up channel closed while waiting for %q", name)
			}
			if q == name {
				return
			}
		case <-timer.C:
			t.Fatalf("no wake-up for queue %q within %s", name, waitTimeout)
		}
	}
}

func testWaitWakes(t *testing.T, s store.Store) {
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	ch1, err := s.WaitForTasks(c)
	if err != nil {
		t.Fatalf("WaitForTasks: %v", err)
	}
	ch2, err := s.WaitForTasks(c)
	if err != nil {
		t.Fatalf("WaitForTasks: %v", err)
	}
	createOne(t, s, store.CreateParams{Queue: "q1", Kind: "k"})
	receive(t, ch1, "q1")
	receive(t, ch2, "q1")
	create(t, s, store.CreateParams{Queue: "q2", Kind: "k"}, store.CreateParams{Queue: "q3", Kind: "k"})
	receive(t, ch1, "q3")
	receive(t, ch2, "q2")
}

func testWaitCloses(t *testing.T, s store.Store) {
	c, cancel := context.WithCancel(ctx(t))
	ch, err := s.WaitForTasks(c)
	if err != nil {
		t.Fatalf("WaitForTasks: %v", err)
	}
	createOne(t, s, store.CreateParams{Queue: "q1", Kind: "k"})
	cancel()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				// The store keeps working for everyone else.
				createOne(t, s, store.CreateParams{Queue: "q1", Kind: "k"})
				return
			}
		case <-timer.C:
			t.Fatalf("channel not closed within %s of the context ending", waitTimeout)
		}
	}
}

var concurrencyTests = []testCase{
	{"DuplicateClaimRace_1000Tasks_20Claimers_EachClaimedExactlyOnce", testDuplicateClaimRace},
	{"ConcurrentOutcomesOneWins", testConcurrentOutcomes},
	{"ConcurrentIdempotentCreates", testConcurrentIdempotentCreates},
	{"CancelVersusClaim", testCancelVersusClaim},
	{"ReapVersusLateOutcome", testReapVersusOutcome},
}

// testDuplicateClaimRace is the acceptance test for "concurrent claimers never receive
// the same task": 1,000 due tasks, 20 goroutines claiming in batches until the queue is
// empty; every task must be claimed exactly once.
func testDuplicateClaimRace(t *testing.T, s store.Store) {
	const tasks, claimers = 1000, 20
	created := createN(t, s, "race", "k", tasks)
	c := ctx(t)
	results := race(t, "ClaimTasks", claimers, func(g int) func() ([]*store.Task, error) {
		p := claimParams("race", 1+g%13) // batch sizes 1..13
		p.WorkerID = fmt.Sprintf("claimer-%d", g)
		return func() ([]*store.Task, error) {
			got, err := s.ClaimTasks(c, p)
			if err == nil && len(got) > p.Limit {
				err = fmt.Errorf("claimed %d tasks with limit %d", len(got), p.Limit)
			}
			return got, err
		}
	})

	claimedBy := map[uuid.UUID]int{}
	tokens := map[uuid.UUID]bool{}
	for g, got := range results {
		for _, task := range got {
			if prev, dup := claimedBy[task.ID]; dup {
				t.Fatalf("task %s claimed twice: by claimer-%d and claimer-%d", task.ID, prev, g)
			}
			claimedBy[task.ID] = g
			if tokens[task.LeaseToken] {
				t.Fatalf("lease token %s handed out twice", task.LeaseToken)
			}
			tokens[task.LeaseToken] = true
			if task.WorkerID != fmt.Sprintf("claimer-%d", g) || task.AttemptCount != 1 || task.Status != store.StatusProcessing {
				t.Fatalf("claimed task %+v", task)
			}
		}
	}
	for _, task := range created {
		if _, ok := claimedBy[task.ID]; !ok {
			t.Fatalf("task %s never claimed", task.ID)
		}
	}
	if len(claimedBy) != tasks {
		t.Fatalf("%d tasks claimed, want %d", len(claimedBy), tasks)
	}
	processing := listAll(t, s, store.ListParams{Statuses: []store.Status{store.StatusProcessing}, Limit: store.MaxListLimit})
	if len(processing) != tasks {
		t.Fatalf("%d PROCESSING tasks in the store, want %d", len(processing), tasks)
	}
	for _, task := range processing {
		if task.AttemptCount != 1 || task.WorkerID != fmt.Sprintf("claimer-%d", claimedBy[task.ID]) {
			t.Fatalf("stored task %s: attempt_count %d worker %q, claimed by claimer-%d", task.ID, task.AttemptCount, task.WorkerID, claimedBy[task.ID])
		}
	}
	if st := statsOf(t, s, "race"); st == nil || st.Counts[store.StatusProcessing] != tasks || st.Counts[store.StatusPending] != 0 {
		t.Fatalf("stats after the race: %+v", st)
	}
}

// testConcurrentOutcomes: several goroutines record outcomes for the same leases at once
// (a committer retrying, a duplicate delivery); each lease is finished exactly once. Two
// batch sizes, on either side of 64: PostgreSQL runs batches of up to 64 outcomes on a
// plan made once per session and larger ones on a plan made for the batch (migration
// 0050), and both must lock the tasks in one order.
func testConcurrentOutcomes(t *testing.T, s store.Store) {
	for _, n := range []int{60, 100} {
		t.Run(fmt.Sprintf("batch=%d", n), func(t *testing.T) { concurrentOutcomes(t, s, n) })
	}
}

func concurrentOutcomes(t *testing.T, s store.Store, n int) {
	const writers = 6
	queue := fmt.Sprintf("co%d", n)
	createN(t, s, queue, "k", n)
	claimed := claim(t, s, claimParams(queue, n))
	if len(claimed) != n {
		t.Fatalf("claimed %d of %d", len(claimed), n)
	}
	c := ctx(t)
	kinds := []store.OutcomeKind{store.Succeed, store.Retry, store.Fail, store.Cancel}
	results := make([][]store.OutcomeResult, writers)
	errs := make([]error, writers)
	start := make(chan struct{})
	done := make(chan struct{})
	for w := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			outs := make([]store.Outcome, n)
			for i, task := range claimed {
				// Writers disagree on the outcome; whichever lands first wins.
				outs[i] = outcome(task, kinds[(i+w)%len(kinds)], fmt.Sprintf("writer %d", w))
			}
			if w%2 == 1 {
				slices.Reverse(outs)
			}
			results[w], errs[w] = s.RecordOutcomes(c, outs)
		}()
	}
	close(start)
	for range writers {
		<-done
	}
	wins := map[uuid.UUID]store.OutcomeResult{}
	for w := range writers {
		if errs[w] != nil {
			t.Fatalf("writer %d: %v", w, errs[w])
		}
		for _, r := range results[w] {
			if r.Err == nil {
				if _, dup := wins[r.TaskID]; dup {
					t.Fatalf("task %s: two outcomes recorded for one lease", r.TaskID)
				}
				wins[r.TaskID] = r
			} else if !errors.Is(r.Err, store.ErrLeaseLost) {
				t.Fatalf("task %s: %v, want nil or ErrLeaseLost", r.TaskID, r.Err)
			}
		}
	}
	if len(wins) != n {
		t.Fatalf("%d tasks got an outcome, want %d", len(wins), n)
	}
	for id, r := range wins {
		task := get(t, s, id)
		if task.Status != r.Status {
			t.Fatalf("task %s is %s, the winning outcome said %s", id, task.Status, r.Status)
		}
		a := attempts(t, s, id)
		if len(a) != 1 || a[0].FinishedAt == nil {
			t.Fatalf("task %s attempts: %+v", id, a)
		}
		wantDL := 0
		if task.Status == store.StatusFailed {
			wantDL = 1
		}
		if got := len(deadLettersOf(t, s, id)); got != wantDL {
			t.Fatalf("task %s (%s): %d dead letters, want %d", id, task.Status, got, wantDL)
		}
	}
}

// testConcurrentIdempotentCreates: many producers create the same key at once; exactly
// one task is created and everyone gets it.
func testConcurrentIdempotentCreates(t *testing.T, s store.Store) {
	const producers, rounds = 16, 5
	c := ctx(t)
	for round := range rounds {
		key := fmt.Sprintf("race-key-%d", round)
		results := make([]store.CreateResult, producers)
		errs := make([]error, producers)
		start := make(chan struct{})
		done := make(chan struct{})
		for p := range producers {
			go func() {
				defer func() { done <- struct{}{} }()
				<-start
				res, err := s.CreateTasks(c, []store.CreateParams{{Kind: "k", IdempotencyKey: key}})
				if err == nil {
					results[p] = res[0]
				}
				errs[p] = err
			}()
		}
		close(start)
		for range producers {
			<-done
		}
		created := 0
		var id uuid.UUID
		for p := range producers {
			if errs[p] != nil {
				t.Fatalf("round %d producer %d: %v", round, p, errs[p])
			}
			if !results[p].Existing {
				created++
			}
			if id == uuid.Nil {
				id = results[p].Task.ID
			}
			if results[p].Task.ID != id {
				t.Fatalf("round %d: producers got different tasks for one key", round)
			}
		}
		if created != 1 {
			t.Fatalf("round %d: %d producers created a task, want exactly 1", round, created)
		}
	}
	if n := countTasks(t, s); n != rounds {
		t.Fatalf("%d tasks, want %d", n, rounds)
	}
}

// testCancelVersusClaim: a cancel racing a claim either cancels the task before anyone
// runs it, or finds it PROCESSING and leaves the cancel to the worker.
func testCancelVersusClaim(t *testing.T, s store.Store) {
	const n = 100
	tasks := createN(t, s, "cc", "k", n)
	c := ctx(t)
	var claimed []*store.Task
	canceled := make([]*store.Task, n)
	var claimErr error
	cancelErrs := make([]error, n)
	start := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer func() { done <- struct{}{} }()
		<-start
		for {
			got, err := s.ClaimTasks(c, claimParams("cc", 3))
			if err != nil {
				claimErr = err
				return
			}
			if len(got) == 0 {
				return
			}
			claimed = append(claimed, got...)
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		<-start
		for i := n - 1; i >= 0; i-- { // from the other end of the queue
			canceled[i], cancelErrs[i] = s.CancelTask(c, tasks[i].ID)
		}
	}()
	close(start)
	<-done
	<-done
	if claimErr != nil {
		t.Fatalf("ClaimTasks: %v", claimErr)
	}
	wasClaimed := map[uuid.UUID]bool{}
	for _, task := range claimed {
		wasClaimed[task.ID] = true
	}
	for i, task := range tasks {
		if cancelErrs[i] != nil {
			t.Fatalf("CancelTask(%s): %v", task.ID, cancelErrs[i])
		}
		now := get(t, s, task.ID)
		if wasClaimed[task.ID] {
			if canceled[i].Status != store.StatusProcessing || now.Status != store.StatusProcessing || now.CancelRequestedAt == nil {
				t.Fatalf("claimed task: cancel saw %s, now %s (cancel requested %v)", canceled[i].Status, now.Status, now.CancelRequestedAt)
			}
		} else if canceled[i].Status != store.StatusCanceled || now.Status != store.StatusCanceled || now.AttemptCount != 0 {
			t.Fatalf("unclaimed task: cancel saw %s, now %s", canceled[i].Status, now.Status)
		}
	}
}

// testReapVersusOutcome: the reaper and a slow worker whose lease expired race; exactly
// one of them decides the attempt.
func testReapVersusOutcome(t *testing.T, s store.Store) {
	const n = 40
	tasks := createN(t, s, "rv", "k", n)
	var claimed []*store.Task
	for _, task := range tasks {
		claimed = append(claimed, claimID(t, s, task, store.StatusPending, shortLease))
	}
	waitExpiredLeases(t, s, "rv", n)
	c := ctx(t)
	var reaped int
	var reapErr error
	results := make([]store.OutcomeResult, n)
	var outErr error
	start := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer func() { done <- struct{}{} }()
		<-start
		for {
			k, err := s.ReapExpiredLeases(c, store.ReapParams{Limit: 3})
			if err != nil {
				reapErr = err
				return
			}
			if k == 0 {
				return
			}
			reaped += k
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		<-start
		for i, task := range claimed {
			r, err := s.RecordOutcomes(c, []store.Outcome{outcome(task, store.Succeed, "")})
			if err != nil {
				outErr = err
				return
			}
			results[i] = r[0]
		}
	}()
	close(start)
	<-done
	<-done
	if reapErr != nil || outErr != nil {
		t.Fatalf("reap: %v; outcomes: %v", reapErr, outErr)
	}
	succeeded := 0
	for i, task := range claimed {
		now := get(t, s, task.ID)
		a := attempts(t, s, task.ID)
		if len(a) != 1 || a[0].FinishedAt == nil {
			t.Fatalf("task %s attempts: %+v", task.ID, a)
		}
		switch {
		case results[i].Err == nil:
			succeeded++
			if now.Status != store.StatusSucceeded || a[0].Outcome != store.OutcomeSucceeded {
				t.Fatalf("outcome won but task is %s, attempt %s", now.Status, a[0].Outcome)
			}
		case errors.Is(results[i].Err, store.ErrLeaseLost):
			if now.Status != store.StatusPending || a[0].Outcome != store.OutcomeLeaseExpired {
				t.Fatalf("reaper won but task is %s, attempt %s", now.Status, a[0].Outcome)
			}
		default:
			t.Fatalf("outcome: %v", results[i].Err)
		}
	}
	if succeeded+reaped != n {
		t.Fatalf("%d outcomes won and %d tasks were reaped, want %d in total", succeeded, reaped, n)
	}
}

// race starts callers goroutines at once; caller g calls the take that next(g) returns
// until it takes nothing or fails. It returns what each caller took, in order, and fails
// the test (after all have stopped) if any failed.
func race[T any](t *testing.T, what string, callers int, next func(g int) func() ([]T, error)) [][]T {
	t.Helper()
	start := make(chan struct{})
	took := make([][]T, callers)
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for g := range callers {
		take := next(g)
		wg.Go(func() {
			<-start
			for {
				got, err := take()
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				took[g] = append(took[g], got...)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%s: %v", what, err)
	}
	return took
}
