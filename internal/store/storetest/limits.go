package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// limitTests cover what queue settings do to claims (DESIGN.md section 11; the rules of
// the flow-control contract): pause, concurrency and rate per queue and per group, a
// claim taking what fits, fair turns across groups, the SQS enqueuer sending no more
// than may run, and racing claimers never exceeding a limit. Rate tests use windows of
// one or two seconds and poll with deadlines; they check claim times (the
// processing_started_at a claim set, the store's clock) rather than the test's clock.
var limitTests = []testCase{
	{"PausedClaimsNothing", testLimitPaused},
	{"PausedClaimsNothingFromEnqueued", testLimitPausedEnqueued},
	{"ConcurrencyCapsAClaim", testLimitConcurrency},
	{"ConcurrencyCountsEveryWorker", testLimitConcurrencyEveryWorker},
	{"ConcurrencyCapsClaimsByID", testLimitConcurrencyByID},
	{"ConcurrencyCountsExpiredLeasesUntilReaped", testLimitConcurrencyExpired},
	{"RateSlidingWindow", testLimitRateWindow},
	{"RateCountsEndedAttempts", testLimitRateEnded},
	{"GroupConcurrencyPerKey", testLimitGroupConcurrency},
	{"GroupRatePerKey", testLimitGroupRate},
	{"GroupRateSlidingWindow", testLimitGroupRateWindow},
	{"SettingChangeAppliesToNextClaim", testLimitSettingChange},
	{"FairTurnsAcrossGroups", testLimitFairTurns},
	{"FairTurnRotatesAcrossClaims", testLimitFairRotation},
	{"FairnessUnderGroupLimits", testLimitFairWithLimits},
	{"PrioritiesBeforeGroups", testLimitPriorities},
	{"EnqueueDueSendsNothingWhenPaused", testLimitEnqueuePaused},
	{"EnqueueDueSendsWhatConcurrencyAdmits", testLimitEnqueueConcurrency},
	{"EnqueueDueSendsWhatRateAdmits", testLimitEnqueueRate},
	{"RacingClaimersNeverExceedConcurrency", testLimitRaceConcurrency},
	{"RacingClaimersNeverExceedGroupConcurrency", testLimitRaceGroupConcurrency},
	{"RacingClaimersNeverExceedRate", testLimitRaceRate},
	{"RacingClaimersNeverExceedGroupConcurrencyAlone", testLimitRaceGroupConcurrencyAlone},
	{"ReportPaused", testReportPaused},
	{"ReportConcurrency", testReportConcurrency},
	{"ReportRateWithRetryIn", testReportRate},
	{"ReportGroupLimits", testReportGroups},
	{"ReportEmptyWhenNothingHeldBack", testReportNothingHeld},
}

func boolp(b bool) *bool { return &b }

func pause(t *testing.T, s store.Store, queue string) {
	t.Helper()
	updateQueue(t, s, queue, store.QueuePatch{Paused: boolp(true)})
}

func resume(t *testing.T, s store.Store, queue string) {
	t.Helper()
	updateQueue(t, s, queue, store.QueuePatch{Paused: boolp(false)})
}

// createGroup creates n due tasks of group key in queue (one batch), in input order.
func createGroup(t *testing.T, s store.Store, queue, key string, n int) []*store.Task {
	t.Helper()
	params := make([]store.CreateParams, n)
	for i := range params {
		params[i] = store.CreateParams{Queue: queue, Kind: "k", GroupKey: key}
	}
	out := make([]*store.Task, n)
	for i, r := range create(t, s, params...) {
		out[i] = r.Task
	}
	return out
}

// claimByID claims the ids (poll worker, from PENDING unless from says otherwise) and
// returns what came back, possibly nothing.
func claimByID(t *testing.T, s store.Store, queue string, from store.Status, taskIDs ...uuid.UUID) []*store.Task {
	t.Helper()
	p := claimParams(queue, len(taskIDs))
	p.From = from
	p.TaskIDs = taskIDs
	return claim(t, s, p)
}

func succeedAll(t *testing.T, s store.Store, tasks []*store.Task) {
	t.Helper()
	for _, task := range tasks {
		recordOK(t, s, outcome(task, store.Succeed, ""), store.StatusSucceeded)
	}
}

func wantClaimed(t *testing.T, what string, got []*store.Task, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%s: claimed %d tasks, want %d", what, len(got), n)
	}
}

func statusOf(t *testing.T, s store.Store, tasks []*store.Task) map[store.Status]int {
	t.Helper()
	out := map[store.Status]int{}
	for _, task := range tasks {
		out[get(t, s, task.ID).Status]++
	}
	return out
}

func groupCounts(tasks []*store.Task) map[string]int {
	out := map[string]int{}
	for _, task := range tasks {
		out[task.GroupKey]++
	}
	return out
}

// claimTimes returns the claim times (processing_started_at) of claimed tasks.
func claimTimes(t *testing.T, tasks []*store.Task) []time.Time {
	t.Helper()
	out := make([]time.Time, len(tasks))
	for i, task := range tasks {
		if task.ProcessingStartedAt == nil {
			t.Fatalf("claimed task %s has no ProcessingStartedAt", task.ID)
		}
		out[i] = *task.ProcessingStartedAt
	}
	return out
}

// checkWindow checks that no window of per holds more than limit of the claim times:
// sorted, the (i+limit)-th claim is at least per after the i-th.
func checkWindow(t *testing.T, what string, times []time.Time, limit int, per time.Duration) {
	t.Helper()
	sorted := slices.Clone(times)
	slices.SortFunc(sorted, func(a, b time.Time) int { return a.Compare(b) })
	for i := 0; i+limit < len(sorted); i++ {
		if d := sorted[i+limit].Sub(sorted[i]); d < per {
			t.Fatalf("%s: %d claims within %s (claims %d..%d, %s apart), rate limit %d per %s",
				what, limit+1, per, i, i+limit, d, limit, per)
		}
	}
}

// --- pause ------------------------------------------------------------------------

func testLimitPaused(t *testing.T, s store.Store) {
	tasks := createN(t, s, "p", "k", 3)
	createN(t, s, "other", "k", 1)
	pause(t, s, "p")
	wantClaimed(t, "poll claim of a paused queue", claim(t, s, claimParams("p", 10)), 0)
	wantClaimed(t, "claim by id in a paused queue", claimByID(t, s, "p", store.StatusPending, tasks[0].ID), 0)
	if st := statusOf(t, s, tasks); st[store.StatusPending] != 3 {
		t.Fatalf("statuses after claims of a paused queue: %v, want 3 PENDING", st)
	}
	// Other queues are not affected.
	wantClaimed(t, "claim of another queue", claim(t, s, claimParams("other", 10)), 1)
	resume(t, s, "p")
	wantClaimed(t, "claim by id after resume", claimByID(t, s, "p", store.StatusPending, tasks[0].ID), 1)
	wantClaimed(t, "poll claim after resume", claim(t, s, claimParams("p", 10)), 2)
}

func testLimitPausedEnqueued(t *testing.T, s store.Store) {
	tasks := createN(t, s, "pe", "k", 3)
	if sent := enqueueAll(t, s, enqueueParams("pe")); len(sent) != 3 {
		t.Fatalf("sent %d tasks, want 3", len(sent))
	}
	pause(t, s, "pe")
	p := claimParams("pe", 10)
	p.From = store.StatusEnqueued
	wantClaimed(t, "claim from ENQUEUED of a paused queue", claim(t, s, p), 0)
	wantClaimed(t, "claim by id from ENQUEUED of a paused queue", claimByID(t, s, "pe", store.StatusEnqueued, tasks[1].ID), 0)
	if st := statusOf(t, s, tasks); st[store.StatusEnqueued] != 3 {
		t.Fatalf("statuses: %v, want 3 ENQUEUED", st)
	}
	resume(t, s, "pe")
	wantClaimed(t, "claim by id from ENQUEUED after resume", claimByID(t, s, "pe", store.StatusEnqueued, tasks[1].ID), 1)
	wantClaimed(t, "claim from ENQUEUED after resume", claim(t, s, p), 2)
}

// --- concurrency ------------------------------------------------------------------

func testLimitConcurrency(t *testing.T, s store.Store) {
	tasks := createN(t, s, "c", "k", 10)
	updateQueue(t, s, "c", store.QueuePatch{Concurrency: setLimit(3)})
	first := claim(t, s, claimParams("c", 10))
	wantClaimed(t, "first claim under concurrency 3", first, 3)
	// What did not fit stays due: PENDING, never failed.
	if st := statusOf(t, s, tasks); st[store.StatusPending] != 7 || st[store.StatusProcessing] != 3 {
		t.Fatalf("statuses after the capped claim: %v, want 7 PENDING and 3 PROCESSING", st)
	}
	wantClaimed(t, "claim while full", claim(t, s, claimParams("c", 10)), 0)
	succeedAll(t, s, first[:2])
	wantClaimed(t, "claim after two finished", claim(t, s, claimParams("c", 10)), 2)
	wantClaimed(t, "claim while full again", claim(t, s, claimParams("c", 1)), 0)
}

func testLimitConcurrencyEveryWorker(t *testing.T, s store.Store) {
	createN(t, s, "cw", "k", 10)
	updateQueue(t, s, "cw", store.QueuePatch{Concurrency: setLimit(4)})
	// One task claimed in SQS mode (sent, then claimed from ENQUEUED by id) counts too.
	sent := enqueueAll(t, s, store.EnqueueParams{Queue: "cw", Limit: 1, RedeliverAfter: time.Hour})
	if len(sent) != 1 {
		t.Fatalf("sent %d tasks, want 1", len(sent))
	}
	wantClaimed(t, "SQS claim by id", claimByID(t, s, "cw", store.StatusEnqueued, sent[0]), 1)
	p := claimParams("cw", 2)
	p.WorkerID = "worker-a"
	wantClaimed(t, "worker-a", claim(t, s, p), 2)
	p.WorkerID = "worker-b"
	wantClaimed(t, "worker-b (one slot left)", claim(t, s, p), 1)
	p.WorkerID = "worker-c"
	wantClaimed(t, "worker-c (full)", claim(t, s, p), 0)
}

func testLimitConcurrencyByID(t *testing.T, s store.Store) {
	tasks := createN(t, s, "ci", "k", 4)
	updateQueue(t, s, "ci", store.QueuePatch{Concurrency: setLimit(2)})
	got := claimByID(t, s, "ci", store.StatusPending, tasks[0].ID, tasks[1].ID, tasks[2].ID)
	wantClaimed(t, "claim of 3 ids under concurrency 2", got, 2)
	wantClaimed(t, "claim by id while full", claimByID(t, s, "ci", store.StatusPending, tasks[3].ID), 0)
	if task := get(t, s, tasks[3].ID); task.Status != store.StatusPending {
		t.Fatalf("task held back by the limit is %s, want PENDING", task.Status)
	}
	succeedAll(t, s, got[:1])
	wantClaimed(t, "claim by id after one finished", claimByID(t, s, "ci", store.StatusPending, tasks[3].ID), 1)
}

func testLimitConcurrencyExpired(t *testing.T, s store.Store) {
	createN(t, s, "ce", "k", 2)
	updateQueue(t, s, "ce", store.QueuePatch{Concurrency: setLimit(1)})
	p := claimParams("ce", 1)
	p.LeaseDuration = 50 * time.Millisecond
	wantClaimed(t, "first claim", claim(t, s, p), 1)
	waitExpiredLeases(t, s, "ce", 1)
	wantClaimed(t, "claim while the expired lease is not reaped", claim(t, s, claimParams("ce", 1)), 0)
	reapUntil(t, s, store.ReapParams{Limit: 10}, 1)
	wantClaimed(t, "claim after the reap", claim(t, s, claimParams("ce", 1)), 1)
}

// --- rate -------------------------------------------------------------------------

// drainTimes claims (finishing each task at once) until want claims were made or the
// deadline passes, and returns the claim times.
func drainTimes(t *testing.T, s store.Store, p store.ClaimParams, want int) []time.Time {
	t.Helper()
	var times []time.Time
	deadline := time.Now().Add(waitTimeout)
	for len(times) < want {
		if time.Now().After(deadline) {
			t.Fatalf("made %d claims in %s, want %d", len(times), waitTimeout, want)
		}
		got := claim(t, s, p)
		times = append(times, claimTimes(t, got)...)
		succeedAll(t, s, got)
		if len(got) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return times
}

func testLimitRateWindow(t *testing.T, s store.Store) {
	createN(t, s, "r", "k", 12)
	updateQueue(t, s, "r", store.QueuePatch{Rate: setRate(4, 1)})
	first := claim(t, s, claimParams("r", 10))
	wantClaimed(t, "first claim under rate 4/1s", first, 4)
	succeedAll(t, s, first)
	wantClaimed(t, "claim right after", claim(t, s, claimParams("r", 10)), 0)
	// The rest comes as the window slides, never more than 4 in any second.
	drainTimes(t, s, claimParams("r", 10), 8)
	all := listAll(t, s, store.ListParams{Queue: "r", Limit: store.MaxListLimit})
	checkWindow(t, "rate 4/1s", claimTimes(t, all), 4, time.Second)
}

func testLimitRateEnded(t *testing.T, s store.Store) {
	// Rate 2 per 2 s: a task claimed, retried at once and claimed again makes 2 claims.
	tasks := createN(t, s, "re", "k", 2)
	updateQueue(t, s, "re", store.QueuePatch{Rate: setRate(2, 2)})
	a := claimID(t, s, tasks[0], store.StatusPending, 30*time.Second)
	recordOK(t, s, outcome(a, store.Retry, "again"), store.StatusPending)
	a = claimID(t, s, tasks[0], store.StatusPending, 30*time.Second)
	first := *a.ProcessingStartedAt
	recordOK(t, s, outcome(a, store.Succeed, ""), store.StatusSucceeded)
	// Both attempts ended; they still count in the window.
	wantClaimed(t, "claim after 2 claims in the window", claim(t, s, claimParams("re", 10)), 0)
	wantClaimed(t, "claim by id after 2 claims in the window", claimByID(t, s, "re", store.StatusPending, tasks[1].ID), 0)
	var b []*store.Task
	waitFor(t, "the window to admit a claim", func() bool {
		b = claim(t, s, claimParams("re", 10))
		return len(b) > 0
	})
	wantClaimed(t, "claim once the window slid", b, 1)
	if d := b[0].ProcessingStartedAt.Sub(first); d < time.Second {
		t.Fatalf("third claim %s after the second, within a 2 s window holding 2 claims", d)
	}
}

// --- groups -----------------------------------------------------------------------

func testLimitGroupConcurrency(t *testing.T, s store.Store) {
	g1 := createGroup(t, s, "gc", "g1", 3)
	createGroup(t, s, "gc", "g2", 3)
	createGroup(t, s, "gc", "", 3) // ungrouped: no group limit
	updateQueue(t, s, "gc", store.QueuePatch{GroupConcurrency: setLimit(1)})
	got := claim(t, s, claimParams("gc", 10))
	if c := groupCounts(got); len(got) != 5 || c["g1"] != 1 || c["g2"] != 1 || c[""] != 3 {
		t.Fatalf("claim under group_concurrency 1 took %v (by group key), want g1: 1, g2: 1, ungrouped: 3", c)
	}
	wantClaimed(t, "claim while every group is full", claim(t, s, claimParams("gc", 10)), 0)
	wantClaimed(t, "claim by id of a full group", claimByID(t, s, "gc", store.StatusPending, g1[1].ID, g1[2].ID), 0)
	for _, task := range got {
		if task.GroupKey == "g1" {
			succeedAll(t, s, []*store.Task{task})
		}
	}
	next := claim(t, s, claimParams("gc", 10))
	if c := groupCounts(next); len(next) != 1 || c["g1"] != 1 {
		t.Fatalf("claim after g1's task finished took %v, want one task of g1", c)
	}
}

func testLimitGroupRate(t *testing.T, s store.Store) {
	createGroup(t, s, "gr", "g1", 3)
	createGroup(t, s, "gr", "g2", 3)
	createGroup(t, s, "gr", "", 2)
	// A window no test waits out: each group gets 2 claims.
	updateQueue(t, s, "gr", store.QueuePatch{GroupRate: setRate(2, 3600)})
	got := claim(t, s, claimParams("gr", 10))
	if c := groupCounts(got); len(got) != 6 || c["g1"] != 2 || c["g2"] != 2 || c[""] != 2 {
		t.Fatalf("claim under group_rate 2/h took %v (by group key), want 2 of each", c)
	}
	succeedAll(t, s, got) // ended attempts still count
	wantClaimed(t, "claim once every group used its rate", claim(t, s, claimParams("gr", 10)), 0)
}

func testLimitGroupRateWindow(t *testing.T, s store.Store) {
	createGroup(t, s, "grw", "a", 6)
	createGroup(t, s, "grw", "b", 6)
	updateQueue(t, s, "grw", store.QueuePatch{GroupRate: setRate(2, 1)})
	drainTimes(t, s, claimParams("grw", 10), 12)
	all := listAll(t, s, store.ListParams{Queue: "grw", Limit: store.MaxListLimit})
	byGroup := map[string][]*store.Task{}
	for _, task := range all {
		byGroup[task.GroupKey] = append(byGroup[task.GroupKey], task)
	}
	for key, tasks := range byGroup {
		checkWindow(t, "group_rate 2/1s of "+key, claimTimes(t, tasks), 2, time.Second)
	}
}

// --- settings changes -------------------------------------------------------------

func testLimitSettingChange(t *testing.T, s store.Store) {
	createN(t, s, "sc", "k", 10)
	updateQueue(t, s, "sc", store.QueuePatch{Concurrency: setLimit(1)})
	wantClaimed(t, "concurrency 1", claim(t, s, claimParams("sc", 10)), 1)
	updateQueue(t, s, "sc", store.QueuePatch{Concurrency: setLimit(3)})
	wantClaimed(t, "raised to 3", claim(t, s, claimParams("sc", 10)), 2)
	pause(t, s, "sc")
	wantClaimed(t, "paused", claim(t, s, claimParams("sc", 10)), 0)
	resume(t, s, "sc")
	updateQueue(t, s, "sc", store.QueuePatch{Concurrency: &store.Change[int]{}})
	wantClaimed(t, "limit removed", claim(t, s, claimParams("sc", 10)), 7)
}

// --- fairness ---------------------------------------------------------------------

// testLimitFairTurns: a big group enqueued first does not hold back small groups
// enqueued after it: claims in small batches take the groups in turn.
func testLimitFairTurns(t *testing.T, s store.Store) {
	createGroup(t, s, "f", "big", 60)
	createGroup(t, s, "f", "small-1", 3)
	createGroup(t, s, "f", "", 3) // ungrouped tasks take turns as one group
	var taken []*store.Task
	for len(taken) < 12 {
		got := claim(t, s, claimParams("f", 2))
		if len(got) == 0 {
			t.Fatal("claim came back empty with tasks due")
		}
		taken = append(taken, got...)
	}
	// Three groups in turn: 9 claims take every small group's 3 tasks (a round of slack).
	c := groupCounts(taken[:min(len(taken), 12)])
	if c["small-1"] != 3 || c[""] != 3 {
		t.Fatalf("the first 12 tasks claimed by group: %v, want all 3 of small-1 and all 3 ungrouped (groups in turn)", c)
	}
	if c["big"] > 6 {
		t.Fatalf("the first 12 tasks claimed by group: %v, the big group took more than its turns", c)
	}
}

// testLimitFairRotation: the turn carries over from one claim to the next: claims of
// one task each go round the groups instead of restarting at the same group.
func testLimitFairRotation(t *testing.T, s store.Store) {
	for _, key := range []string{"a", "b", "c"} {
		createGroup(t, s, "fr", key, 10)
	}
	for round := range 3 {
		seen := map[string]bool{}
		for range 3 {
			got := claim(t, s, claimParams("fr", 1))
			wantClaimed(t, "claim of one", got, 1)
			seen[got[0].GroupKey] = true
		}
		if len(seen) != 3 {
			t.Fatalf("round %d: three claims of one task took groups %v, want a, b and c in turn", round, seen)
		}
	}
}

// testLimitFairWithLimits: fairness holds under a group limit, and a group held back by
// its limit does not hold back the others.
func testLimitFairWithLimits(t *testing.T, s store.Store) {
	createGroup(t, s, "fl", "big", 50)
	createGroup(t, s, "fl", "small", 2)
	updateQueue(t, s, "fl", store.QueuePatch{Concurrency: setLimit(4), GroupConcurrency: setLimit(3)})
	got := claim(t, s, claimParams("fl", 10))
	if c := groupCounts(got); len(got) != 4 || c["small"] != 2 || c["big"] != 2 {
		t.Fatalf("claim took %v, want 2 of each group (turns, then the concurrency limit)", c)
	}
}

// testLimitPriorities: a higher priority level is served before any group of a lower
// one; within a level, groups take turns.
func testLimitPriorities(t *testing.T, s store.Store) {
	create(t, s, store.CreateParams{Queue: "fp", Kind: "k", GroupKey: "low", Priority: 0},
		store.CreateParams{Queue: "fp", Kind: "k", GroupKey: "low", Priority: 0})
	var high []store.CreateParams
	for range 4 {
		high = append(high, store.CreateParams{Queue: "fp", Kind: "k", GroupKey: "busy", Priority: 5})
	}
	high = append(high, store.CreateParams{Queue: "fp", Kind: "k", GroupKey: "quiet", Priority: 5})
	create(t, s, high...)
	got := claim(t, s, claimParams("fp", 2))
	if c := groupCounts(got); c["busy"] != 1 || c["quiet"] != 1 {
		t.Fatalf("first claim of 2 took %v, want one of each priority-5 group", c)
	}
	got = claim(t, s, claimParams("fp", 3))
	if c := groupCounts(got); c["busy"] != 3 {
		t.Fatalf("second claim of 3 took %v, want the rest of busy (priority 5) before low (priority 0)", c)
	}
	got = claim(t, s, claimParams("fp", 3))
	if c := groupCounts(got); c["low"] != 2 || len(got) != 2 {
		t.Fatalf("third claim took %v, want low's 2", c)
	}
}

// --- SQS mode: the enqueuer -------------------------------------------------------

func testLimitEnqueuePaused(t *testing.T, s store.Store) {
	tasks := createN(t, s, "ep", "k", 3)
	pause(t, s, "ep")
	handed, n, err := enqueueWith(t, s, enqueueParams("ep"), nil)
	if err != nil || n != 0 || len(handed) != 0 {
		t.Fatalf("EnqueueDue of a paused queue handed %d ids (marked %d, err %v), want none", len(handed), n, err)
	}
	for _, task := range tasks {
		checkUnsent(t, s, task.ID)
	}
	resume(t, s, "ep")
	if sent := enqueueAll(t, s, enqueueParams("ep")); len(sent) != 3 {
		t.Fatalf("after resume EnqueueDue sent %d, want 3", len(sent))
	}
}

func testLimitEnqueueConcurrency(t *testing.T, s store.Store) {
	createN(t, s, "ec", "k", 10)
	updateQueue(t, s, "ec", store.QueuePatch{Concurrency: setLimit(3)})
	sent := enqueueAll(t, s, enqueueParams("ec"))
	if len(sent) != 3 {
		t.Fatalf("EnqueueDue under concurrency 3 sent %d, want 3", len(sent))
	}
	// Sent but unclaimed tasks count: nothing more until one finishes.
	if more := enqueueAll(t, s, enqueueParams("ec")); len(more) != 0 {
		t.Fatalf("second EnqueueDue sent %d more, want 0 (3 sent and unclaimed)", len(more))
	}
	got := claimByID(t, s, "ec", store.StatusEnqueued, sent[0])
	wantClaimed(t, "SQS claim by id", got, 1)
	if more := enqueueAll(t, s, enqueueParams("ec")); len(more) != 0 {
		t.Fatalf("EnqueueDue with 1 PROCESSING and 2 sent sent %d, want 0", len(more))
	}
	succeedAll(t, s, got)
	if more := enqueueAll(t, s, enqueueParams("ec")); len(more) != 1 {
		t.Fatalf("EnqueueDue after one finished sent %d, want 1", len(more))
	}
}

func testLimitEnqueueRate(t *testing.T, s store.Store) {
	createN(t, s, "er", "k", 10)
	updateQueue(t, s, "er", store.QueuePatch{Rate: setRate(3, 3600)})
	sent := enqueueAll(t, s, enqueueParams("er"))
	if len(sent) == 0 || len(sent) > 3 {
		t.Fatalf("EnqueueDue under rate 3/h sent %d, want 1 to 3", len(sent))
	}
	// Use the window up: the enqueuer sends nothing more.
	for _, id := range sent {
		wantClaimed(t, "SQS claim by id", claimByID(t, s, "er", store.StatusEnqueued, id), 1)
	}
	for len(sent) < 3 {
		more := enqueueAll(t, s, enqueueParams("er"))
		if len(more) == 0 {
			t.Fatalf("EnqueueDue sent nothing with %d of 3 claims of the window used", len(sent))
		}
		for _, id := range more {
			wantClaimed(t, "SQS claim by id", claimByID(t, s, "er", store.StatusEnqueued, id), 1)
		}
		sent = append(sent, more...)
	}
	if more := enqueueAll(t, s, enqueueParams("er")); len(more) != 0 {
		t.Fatalf("EnqueueDue with the window full sent %d, want 0", len(more))
	}
}

// --- racing claimers --------------------------------------------------------------

// raceClaims runs claimers goroutines that claim (poll claims of 1 to 3 tasks, or by id
// of random due tasks, from PENDING or as SQS workers do) and finish each claimed task after a short while, until every task
// in tasks has succeeded. Each claim is checked by onClaim and each task is released with
// onFinish just before its outcome is recorded (so a counter kept by the two never
// undercounts what the store has PROCESSING).
func raceClaims(t *testing.T, s store.Store, queue string, tasks []*store.Task, claimers int,
	onClaim func([]*store.Task) error, onFinish func(*store.Task)) {
	t.Helper()
	c := ctx(t)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failure  error
		finished int
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failure == nil {
			failure = err
		}
	}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return failure != nil || finished == len(tasks)
	}
	deadline := time.Now().Add(waitTimeout * 2)
	for g := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := claimParams(queue, 1+g%3)
			p.WorkerID = fmt.Sprintf("claimer-%d", g)
			for !done() {
				if time.Now().After(deadline) {
					fail(fmt.Errorf("tasks not all finished in %s", waitTimeout*2))
					return
				}
				q := p
				if g%2 == 1 { // by id: any task, due or not (claims take only due ones)
					q.TaskIDs = []uuid.UUID{tasks[rand.IntN(len(tasks))].ID}
					q.Limit = 1
					if g%4 == 3 { // as an SQS worker does (it takes a due PENDING task too)
						q.From = store.StatusEnqueued
					}
				}
				got, err := s.ClaimTasks(c, q)
				if err != nil {
					fail(fmt.Errorf("ClaimTasks: %w", err))
					return
				}
				if err := onClaim(got); err != nil {
					fail(err)
					return
				}
				if len(got) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
				for _, task := range got {
					onFinish(task)
					res, err := s.RecordOutcomes(c, []store.Outcome{outcome(task, store.Succeed, "")})
					if err != nil || res[0].Err != nil {
						fail(fmt.Errorf("RecordOutcomes: %v %v", err, res))
						return
					}
					mu.Lock()
					finished++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
}

func testLimitRaceConcurrency(t *testing.T, s store.Store) {
	const limit = 5
	tasks := createN(t, s, "rc", "k", 300)
	updateQueue(t, s, "rc", store.QueuePatch{Concurrency: setLimit(limit)})
	var mu sync.Mutex
	running, peak := 0, 0
	raceClaims(t, s, "rc", tasks, 16, func(got []*store.Task) error {
		mu.Lock()
		defer mu.Unlock()
		running += len(got)
		peak = max(peak, running)
		if running > limit {
			return fmt.Errorf("%d tasks PROCESSING at once, concurrency %d", running, limit)
		}
		return nil
	}, func(*store.Task) {
		mu.Lock()
		running--
		mu.Unlock()
	})
	if peak < 2 {
		t.Fatalf("at most %d task ran at once: the race did not exercise the limit", peak)
	}
}

func testLimitRaceGroupConcurrency(t *testing.T, s store.Store) {
	const perGroup = 2
	var tasks []*store.Task
	for g := range 6 {
		tasks = append(tasks, createGroup(t, s, "rg", fmt.Sprintf("g%d", g), 40)...)
	}
	tasks = append(tasks, createGroup(t, s, "rg", "", 20)...)
	updateQueue(t, s, "rg", store.QueuePatch{GroupConcurrency: setLimit(perGroup), Concurrency: setLimit(10)})
	var mu sync.Mutex
	running := map[string]int{}
	total := 0
	raceClaims(t, s, "rg", tasks, 16, func(got []*store.Task) error {
		mu.Lock()
		defer mu.Unlock()
		for _, task := range got {
			running[task.GroupKey]++
			total++
			if task.GroupKey != "" && running[task.GroupKey] > perGroup {
				return fmt.Errorf("%d tasks of group %s PROCESSING at once, group_concurrency %d", running[task.GroupKey], task.GroupKey, perGroup)
			}
		}
		if total > 10 {
			return fmt.Errorf("%d tasks PROCESSING at once, concurrency 10", total)
		}
		return nil
	}, func(task *store.Task) {
		mu.Lock()
		running[task.GroupKey]--
		total--
		mu.Unlock()
	})
}

// testLimitRaceGroupConcurrencyAlone races claimers over a queue whose only limit is
// group_concurrency: the PostgreSQL store's claims of such a queue do not serialise on
// the queue (migration 0036: a lock per group, and the groups' counts taken again once
// their locks are held), so two claims may take tasks of one group at the same moment.
// Groups of one running task each, few groups and many claimers, poll claims of several
// tasks and claims by id, so claims of one group meet often.
func testLimitRaceGroupConcurrencyAlone(t *testing.T, s store.Store) {
	const perGroup = 1
	var tasks []*store.Task
	for g := range 4 {
		tasks = append(tasks, createGroup(t, s, "rga", fmt.Sprintf("g%d", g), 50)...)
	}
	tasks = append(tasks, createGroup(t, s, "rga", "", 10)...)
	updateQueue(t, s, "rga", store.QueuePatch{GroupConcurrency: setLimit(perGroup)})
	var mu sync.Mutex
	running := map[string]int{}
	peak := 0
	raceClaims(t, s, "rga", tasks, 16, func(got []*store.Task) error {
		mu.Lock()
		defer mu.Unlock()
		for _, task := range got {
			running[task.GroupKey]++
			if task.GroupKey == "" {
				continue
			}
			if running[task.GroupKey] > perGroup {
				return fmt.Errorf("%d tasks of group %s PROCESSING at once, group_concurrency %d", running[task.GroupKey], task.GroupKey, perGroup)
			}
		}
		busy := 0
		for g, n := range running {
			if g != "" && n > 0 {
				busy++
			}
		}
		peak = max(peak, busy)
		return nil
	}, func(task *store.Task) {
		mu.Lock()
		running[task.GroupKey]--
		mu.Unlock()
	})
	if peak < 2 {
		t.Fatalf("at most %d group ran at once: the race did not exercise the limit", peak)
	}
}

func testLimitRaceRate(t *testing.T, s store.Store) {
	tasks := createN(t, s, "rr", "k", 24)
	updateQueue(t, s, "rr", store.QueuePatch{Rate: setRate(8, 1)})
	raceClaims(t, s, "rr", tasks, 12, func([]*store.Task) error { return nil }, func(*store.Task) {})
	all := listAll(t, s, store.ListParams{Queue: "rr", Limit: store.MaxListLimit})
	checkWindow(t, "racing claimers under rate 8/1s", claimTimes(t, all), 8, time.Second)
}

// --- the claim report (store.ClaimReport) -----------------------------------------

// claimReported claims with a report (dirty on purpose: the store must reset it) and
// returns the tasks and the report.
func claimReported(t *testing.T, s store.Store, p store.ClaimParams) ([]*store.Task, store.ClaimReport) {
	t.Helper()
	r := &store.ClaimReport{HeldBack: store.HeldByGroupRate, RetryIn: time.Hour}
	p.Report = r
	got := claim(t, s, p)
	return got, *r
}

func wantReport(t *testing.T, what string, got store.ClaimReport, held store.HoldBack) {
	t.Helper()
	if got.HeldBack != held {
		t.Fatalf("%s: report %+v, want held back by %q", what, got, held)
	}
	if held != store.HeldByRate && held != store.HeldByGroupRate && got.RetryIn != 0 {
		t.Fatalf("%s: report %+v, want RetryIn 0 (not a rate)", what, got)
	}
}

func testReportPaused(t *testing.T, s store.Store) {
	tasks := createN(t, s, "rp", "k", 2)
	pause(t, s, "rp")
	_, r := claimReported(t, s, claimParams("rp", 10))
	wantReport(t, "poll claim of a paused queue", r, store.HeldByPause)
	p := claimParams("rp", 1)
	p.TaskIDs = []uuid.UUID{tasks[0].ID}
	_, r = claimReported(t, s, p)
	wantReport(t, "claim by id in a paused queue", r, store.HeldByPause)
}

func testReportConcurrency(t *testing.T, s store.Store) {
	tasks := createN(t, s, "rcc", "k", 5)
	updateQueue(t, s, "rcc", store.QueuePatch{Concurrency: setLimit(2)})
	got, r := claimReported(t, s, claimParams("rcc", 10))
	wantClaimed(t, "claim under concurrency 2", got, 2)
	wantReport(t, "claim cut short by concurrency", r, store.HeldByConcurrency)
	running := map[uuid.UUID]bool{got[0].ID: true, got[1].ID: true}
	for _, task := range tasks {
		if !running[task.ID] {
			p := claimParams("rcc", 1)
			p.TaskIDs = []uuid.UUID{task.ID}
			_, r = claimReported(t, s, p)
			wantReport(t, "claim by id while full", r, store.HeldByConcurrency)
			break
		}
	}
}

func testReportRate(t *testing.T, s store.Store) {
	createN(t, s, "rrt", "k", 5)
	updateQueue(t, s, "rrt", store.QueuePatch{Rate: setRate(2, 2)})
	got, r := claimReported(t, s, claimParams("rrt", 10))
	wantClaimed(t, "claim under rate 2/2s", got, 2)
	wantReport(t, "claim cut short by the rate", r, store.HeldByRate)
	if r.RetryIn <= 0 || r.RetryIn > 2*time.Second {
		t.Fatalf("RetryIn = %s, want in (0, 2s]", r.RetryIn)
	}
	_, r = claimReported(t, s, claimParams("rrt", 10))
	wantReport(t, "claim with the window full", r, store.HeldByRate)
	if r.RetryIn <= 0 || r.RetryIn > 2*time.Second {
		t.Fatalf("RetryIn = %s, want in (0, 2s]", r.RetryIn)
	}
	// Once RetryIn has passed, the window admits a claim.
	time.Sleep(r.RetryIn + 50*time.Millisecond)
	got, _ = claimReported(t, s, claimParams("rrt", 1))
	wantClaimed(t, "claim after RetryIn", got, 1)
}

func testReportGroups(t *testing.T, s store.Store) {
	createGroup(t, s, "rgc", "a", 3)
	updateQueue(t, s, "rgc", store.QueuePatch{GroupConcurrency: setLimit(1)})
	got, r := claimReported(t, s, claimParams("rgc", 10))
	wantClaimed(t, "claim under group_concurrency 1", got, 1)
	wantReport(t, "claim cut short by group_concurrency", r, store.HeldByGroupConcurrency)

	createGroup(t, s, "rgr", "a", 3)
	createGroup(t, s, "rgr", "b", 1)
	updateQueue(t, s, "rgr", store.QueuePatch{GroupRate: setRate(1, 2)})
	got, r = claimReported(t, s, claimParams("rgr", 10))
	wantClaimed(t, "claim under group_rate 1/2s", got, 2)
	wantReport(t, "claim cut short by group_rate", r, store.HeldByGroupRate)
	if r.RetryIn <= 0 || r.RetryIn > 2*time.Second {
		t.Fatalf("RetryIn = %s, want in (0, 2s]", r.RetryIn)
	}
}

func testReportNothingHeld(t *testing.T, s store.Store) {
	createN(t, s, "free", "k", 3)
	_, r := claimReported(t, s, claimParams("free", 10))
	wantReport(t, "claim of a queue without settings", r, "")
	// A limit that left nothing due behind held nothing back.
	createN(t, s, "roomy", "k", 2)
	updateQueue(t, s, "roomy", store.QueuePatch{Concurrency: setLimit(5)})
	got, r := claimReported(t, s, claimParams("roomy", 10))
	wantClaimed(t, "claim under a roomy limit", got, 2)
	wantReport(t, "claim that took every due task", r, "")
	// A claim that took its whole Limit was not held back either.
	createN(t, s, "full", "k", 5)
	updateQueue(t, s, "full", store.QueuePatch{Concurrency: setLimit(2)})
	got, r = claimReported(t, s, claimParams("full", 2))
	wantClaimed(t, "claim of exactly the limit", got, 2)
	wantReport(t, "claim that took its Limit", r, "")
}
