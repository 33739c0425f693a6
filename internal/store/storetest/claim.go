package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

var claimTests = []testCase{
	{"SetsLeaseAndRecordsAttempt", testClaimSetsLease},
	{"OnlyDueTasks", testClaimOnlyDue},
	{"PriorityThenScheduledForThenID", testClaimOrder},
	{"HintedClaimsKeepClaimOrder", testClaimHintedOrder},
	{"FutureHighPriorityDoesNotBlockDueTasks", testClaimFutureHighPriority},
	{"LimitRespected", testClaimLimit},
	{"QueueIsolation", testClaimQueueIsolation},
	{"FromRespected", testClaimFrom},
	{"TaskIDsRestriction", testClaimTaskIDs},
	{"FreshLeaseTokenEachClaim", testClaimFreshTokens},
	{"InvalidParams", testClaimInvalid},
	{"ReturnsTraceContext", testClaimTraceContext},
}

// testClaimTraceContext: the creating call's trace context comes back with the claim,
// by queue and by id, so the attempt continues the enqueuer's trace (issue 15).
func testClaimTraceContext(t *testing.T, s store.Store) {
	trace := map[string]string{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate":  "rojo=00f067aa0ba902b7",
	}
	traced := createOne(t, s, store.CreateParams{Kind: "k", TraceContext: trace})
	createOne(t, s, store.CreateParams{Kind: "k"}) // not traced
	byID := createOne(t, s, store.CreateParams{Kind: "k", Queue: "q2", TraceContext: trace})

	got := claim(t, s, claimParams("default", 10))
	if len(got) != 2 {
		t.Fatalf("claimed %d tasks, want 2", len(got))
	}
	for _, task := range got {
		want := map[string]string(nil)
		if task.ID == traced.ID {
			want = trace
		}
		if !maps.Equal(task.TraceContext, want) || (want == nil) != (task.TraceContext == nil) {
			t.Errorf("task %s (traced %v): trace context %v, want %v", task.ID, task.ID == traced.ID, task.TraceContext, want)
		}
	}
	p := claimParams("q2", 10)
	p.TaskIDs = []uuid.UUID{byID.ID}
	if got := claim(t, s, p); len(got) != 1 || !maps.Equal(got[0].TraceContext, trace) {
		t.Fatalf("claim by id: %d tasks, trace context %v", len(got), got)
	}

	huge := map[string]string{"traceparent": trace["traceparent"], "tracestate": strings.Repeat("a", store.MaxTraceContextBytes)}
	_, err := s.CreateTasks(t.Context(), []store.CreateParams{{Kind: "k", TraceContext: huge}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("create with a %d-byte trace context: %v, want ErrInvalid", store.MaxTraceContextBytes, err)
	}
}

func testClaimSetsLease(t *testing.T, s store.Store) {
	created := createN(t, s, "default", "k", 3)
	p := claimParams("default", 10)
	p.WorkerID = "host-1:42"
	p.LeaseDuration = 45 * time.Second
	got := claim(t, s, p)
	if !slices.Equal(sortedIDs(got), sortedIDs(created)) {
		t.Fatalf("claimed %v, want all of %v", ids(got), ids(created))
	}
	tokens := map[uuid.UUID]bool{}
	for _, task := range got {
		if task.Status != store.StatusProcessing || task.AttemptCount != 1 || task.WorkerID != "host-1:42" {
			t.Fatalf("claimed task: status %s attempt_count %d worker %q", task.Status, task.AttemptCount, task.WorkerID)
		}
		if task.LeaseToken == uuid.Nil || tokens[task.LeaseToken] {
			t.Fatalf("lease token %s is nil or not distinct", task.LeaseToken)
		}
		tokens[task.LeaseToken] = true
		nearNowPtr(t, "LeaseExpiresAt - lease", ptr(task.LeaseExpiresAt.Add(-45*time.Second)))
		nearNowPtr(t, "ProcessingStartedAt", task.ProcessingStartedAt)
		nearNow(t, "UpdatedAt", task.UpdatedAt)
		isNil(t, "CompletedAt", task.CompletedAt)
		sameTask(t, "GetTask after claim", get(t, s, task.ID), task)

		a := attempts(t, s, task.ID)
		if len(a) != 1 {
			t.Fatalf("%d attempt rows after one claim", len(a))
		}
		if a[0].TaskID != task.ID || a[0].Attempt != 1 || a[0].WorkerID != "host-1:42" || a[0].LeaseToken != task.LeaseToken ||
			a[0].Outcome != "" || a[0].Error != "" || a[0].FinishedAt != nil || a[0].ID != 0 {
			// ID 0: a running attempt gets its id when it ends.
			t.Fatalf("attempt after claim: %+v", a[0])
		}
		nearNow(t, "attempt StartedAt", a[0].StartedAt)
	}
	if more := claim(t, s, p); len(more) != 0 {
		t.Fatalf("claimed %d PROCESSING tasks again", len(more))
	}
}

func ptr[T any](v T) *T { return &v }

func testClaimOnlyDue(t *testing.T, s store.Store) {
	future := createOne(t, s, store.CreateParams{Kind: "k", ScheduledFor: time.Now().Add(time.Hour)})
	if got := claim(t, s, claimParams("default", 10)); len(got) != 0 {
		t.Fatalf("claimed a task due in an hour: %v", ids(got))
	}
	// Not even by id.
	p := claimParams("default", 1)
	p.TaskIDs = []uuid.UUID{future.ID}
	if got := claim(t, s, p); len(got) != 0 {
		t.Fatal("claimed a future task by id")
	}
	due := createOne(t, s, store.CreateParams{Kind: "k", ScheduledFor: time.Now().Add(-time.Second)})
	got := claim(t, s, claimParams("default", 10))
	if len(got) != 1 || got[0].ID != due.ID {
		t.Fatalf("claimed %v, want only the due task %s", ids(got), due.ID)
	}
	if f := get(t, s, future.ID); f.Status != store.StatusPending || f.AttemptCount != 0 {
		t.Fatalf("future task changed: %s attempt_count %d", f.Status, f.AttemptCount)
	}
	// A task due a moment from now becomes claimable when its time comes.
	soon := createOne(t, s, store.CreateParams{Kind: "k", ScheduledFor: time.Now().Add(300 * time.Millisecond)})
	var claimed []*store.Task
	waitFor(t, "the task to become due", func() bool {
		claimed = claim(t, s, claimParams("default", 10))
		return len(claimed) > 0
	})
	if len(claimed) != 1 || claimed[0].ID != soon.ID {
		t.Fatalf("claimed %v, want %s", ids(claimed), soon.ID)
	}
}

// testClaimHintedOrder: claims that each pass the last task of the previous one as the
// hint (ClaimParams.After, as a draining worker does) take tasks in the same order, from
// level to level, and still find a task of a higher level created meanwhile.
func testClaimHintedOrder(t *testing.T, s store.Store) {
	now := time.Now().Truncate(time.Millisecond)
	at := func(d time.Duration) time.Time { return now.Add(-d) }
	create(t, s,
		store.CreateParams{Kind: "p0-new", Priority: 0, ScheduledFor: at(1 * time.Minute)},
		store.CreateParams{Kind: "p5-new", Priority: 5, ScheduledFor: at(1 * time.Minute)},
		store.CreateParams{Kind: "p0-old", Priority: 0, ScheduledFor: at(3 * time.Minute)},
		store.CreateParams{Kind: "pneg", Priority: -3, ScheduledFor: at(time.Hour)},
		store.CreateParams{Kind: "p5-old", Priority: 5, ScheduledFor: at(2 * time.Minute)},
		store.CreateParams{Kind: "p9", Priority: 9, ScheduledFor: at(time.Second)},
	)
	want := []string{"p9", "p5-old", "p20", "p5-new", "p0-old", "p0-new", "pneg"}
	var got []string
	var after *store.ClaimKey
	for range want {
		if len(got) == 2 {
			create(t, s, store.CreateParams{Kind: "p20", Priority: 20, ScheduledFor: at(time.Second)})
		}
		p := claimParams("default", 1)
		p.After = after
		c := claim(t, s, p)
		if len(c) != 1 {
			t.Fatalf("hinted claim %d returned %d tasks, want 1", len(got)+1, len(c))
		}
		got = append(got, c[0].Kind)
		key := store.ClaimKeyOf(c[0])
		after = &key
	}
	if !slices.Equal(got, want) {
		t.Fatalf("hinted claim order %v, want %v", got, want)
	}
}

func testClaimOrder(t *testing.T, s store.Store) {
	now := time.Now().Truncate(time.Millisecond)
	at := func(d time.Duration) time.Time { return now.Add(-d) }
	same := at(time.Minute)
	// Created in an order unrelated to the claim order.
	params := []store.CreateParams{
		{Kind: "p0-new", Priority: 0, ScheduledFor: at(1 * time.Minute)},
		{Kind: "p5-new", Priority: 5, ScheduledFor: at(1 * time.Minute)},
		{Kind: "p0-old", Priority: 0, ScheduledFor: at(3 * time.Minute)},
		{Kind: "pneg", Priority: -3, ScheduledFor: at(time.Hour)},
		{Kind: "p5-old", Priority: 5, ScheduledFor: at(2 * time.Minute)},
		{Kind: "p9", Priority: 9, ScheduledFor: at(time.Second)},
		{Kind: "p2-tie-a", Priority: 2, ScheduledFor: same},
		{Kind: "p2-tie-b", Priority: 2, ScheduledFor: same},
		{Kind: "p2-tie-c", Priority: 2, ScheduledFor: same},
	}
	create(t, s, params...)
	want := []string{"p9", "p5-old", "p5-new", "p2-tie-a", "p2-tie-b", "p2-tie-c", "p0-old", "p0-new", "pneg"}
	var got []string
	for range want {
		c := claim(t, s, claimParams("default", 1))
		if len(c) != 1 {
			t.Fatalf("claim returned %d tasks, want 1", len(c))
		}
		got = append(got, c[0].Kind)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("claim order %v, want %v (priority desc, then scheduled_for, then id)", got, want)
	}
	// The same order decides which tasks a batch claim takes.
	create(t, s, params...)
	batch := claim(t, s, claimParams("default", 3))
	var kinds []string
	for _, task := range batch {
		kinds = append(kinds, task.Kind)
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"p5-new", "p5-old", "p9"}) {
		t.Fatalf("batch claim of 3 took %v, want p9, p5-old, p5-new", kinds)
	}
}

func testClaimFutureHighPriority(t *testing.T, s store.Store) {
	create(t, s,
		store.CreateParams{Kind: "future-urgent", Priority: 100, ScheduledFor: time.Now().Add(time.Hour)},
		store.CreateParams{Kind: "due-low", Priority: -5},
	)
	got := claim(t, s, claimParams("default", 5))
	if len(got) != 1 || got[0].Kind != "due-low" {
		t.Fatalf("claimed %d tasks, want just the due low-priority one", len(got))
	}
}

func testClaimLimit(t *testing.T, s store.Store) {
	createN(t, s, "default", "k", 7)
	if got := claim(t, s, claimParams("default", 3)); len(got) != 3 {
		t.Fatalf("limit 3: claimed %d", len(got))
	}
	if got := claim(t, s, claimParams("default", 1)); len(got) != 1 {
		t.Fatalf("limit 1: claimed %d", len(got))
	}
	if got := claim(t, s, claimParams("default", 100)); len(got) != 3 {
		t.Fatalf("limit 100 with 3 left: claimed %d", len(got))
	}
	if got := claim(t, s, claimParams("default", 100)); len(got) != 0 {
		t.Fatalf("nothing left: claimed %d", len(got))
	}
}

func testClaimQueueIsolation(t *testing.T, s store.Store) {
	a := createN(t, s, "qa", "k", 3)
	b := createN(t, s, "qb", "k", 2)
	gotB := claim(t, s, claimParams("qb", 10))
	if !slices.Equal(sortedIDs(gotB), sortedIDs(b)) {
		t.Fatalf("claim from qb got %v, want %v", ids(gotB), ids(b))
	}
	if got := claim(t, s, claimParams("qc", 10)); len(got) != 0 {
		t.Fatalf("claim from an empty queue got %d tasks", len(got))
	}
	gotA := claim(t, s, claimParams("qa", 10))
	if !slices.Equal(sortedIDs(gotA), sortedIDs(a)) {
		t.Fatalf("claim from qa got %v, want %v", ids(gotA), ids(a))
	}
	for _, task := range gotA {
		if task.Queue != "qa" {
			t.Fatalf("task of queue %q claimed from qa", task.Queue)
		}
	}
}

func testClaimFrom(t *testing.T, s store.Store) {
	// The only way to ENQUEUED: the enqueuer's send.
	enq := sendOnce(t, s, createOne(t, s, store.CreateParams{Kind: "k"}))
	pending := createOne(t, s, store.CreateParams{Kind: "k"})

	p := claimParams("default", 10)
	p.From = store.StatusEnqueued
	got := claim(t, s, p)
	if len(got) != 1 || got[0].ID != enq.ID {
		t.Fatalf("claim From=ENQUEUED got %v, want %s", ids(got), enq.ID)
	}
	if got[0].AttemptCount != 1 || got[0].Status != store.StatusProcessing {
		t.Fatalf("claimed ENQUEUED task: attempt_count %d status %s", got[0].AttemptCount, got[0].Status)
	}
	if got := claim(t, s, p); len(got) != 0 {
		t.Fatalf("claim From=ENQUEUED took a PENDING task: %v", ids(got))
	}
	got = claim(t, s, claimParams("default", 10))
	if len(got) != 1 || got[0].ID != pending.ID {
		t.Fatalf("claim From=PENDING got %v, want %s", ids(got), pending.ID)
	}
}

func testClaimTaskIDs(t *testing.T, s store.Store) {
	tasks := createN(t, s, "default", "k", 4)
	other := createOne(t, s, store.CreateParams{Kind: "k", Queue: "elsewhere"})
	p := claimParams("default", 10)
	p.TaskIDs = []uuid.UUID{tasks[2].ID, tasks[0].ID, store.NewID(), other.ID}
	got := claim(t, s, p)
	if !slices.Equal(sortedIDs(got), sortedIDs([]*store.Task{tasks[0], tasks[2]})) {
		t.Fatalf("claim with TaskIDs got %v, want only %s and %s (same queue, listed)", ids(got), tasks[0].ID, tasks[2].ID)
	}
	if o := get(t, s, other.ID); o.Status != store.StatusPending {
		t.Fatalf("task of another queue was claimed by id: %s", o.Status)
	}
	// Limit applies to TaskIDs too.
	p.TaskIDs = []uuid.UUID{tasks[1].ID, tasks[3].ID}
	p.Limit = 1
	if got := claim(t, s, p); len(got) != 1 {
		t.Fatalf("claim with 2 TaskIDs and limit 1 got %d", len(got))
	}
	// Limit 0 with TaskIDs: as many as were listed.
	rest := createN(t, s, "default", "k", 3)
	p.TaskIDs, p.Limit = ids(rest), 0
	if got := claim(t, s, p); len(got) != 3 {
		t.Fatalf("claim with 3 TaskIDs and limit 0 got %d, want 3", len(got))
	}
	p.Limit = 10
	// Already claimed: nothing.
	p.TaskIDs = []uuid.UUID{tasks[0].ID}
	if got := claim(t, s, p); len(got) != 0 {
		t.Fatalf("claimed a PROCESSING task by id again")
	}
}

func testClaimFreshTokens(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	seen := map[uuid.UUID]bool{task.LeaseToken: true}
	for i := 2; i <= 4; i++ {
		recordOK(t, s, outcome(task, store.Retry, "again"), store.StatusPending)
		task = claimID(t, s, task, store.StatusPending, 30*time.Second)
		if seen[task.LeaseToken] || task.LeaseToken == uuid.Nil {
			t.Fatalf("claim %d reused lease token %s", i, task.LeaseToken)
		}
		seen[task.LeaseToken] = true
		if task.AttemptCount != i {
			t.Fatalf("claim %d: attempt_count %d", i, task.AttemptCount)
		}
	}
}

func testClaimInvalid(t *testing.T, s store.Store) {
	createN(t, s, "default", "k", 2)
	base := claimParams("default", 1)
	cases := map[string]func(p *store.ClaimParams){
		"From SUCCEEDED":  func(p *store.ClaimParams) { p.From = store.StatusSucceeded },
		"From PROCESSING": func(p *store.ClaimParams) { p.From = store.StatusProcessing },
		"Limit 0":         func(p *store.ClaimParams) { p.Limit = 0 },
		"Limit negative":  func(p *store.ClaimParams) { p.Limit = -1 },
		"no lease":        func(p *store.ClaimParams) { p.LeaseDuration = 0 },
		"negative lease":  func(p *store.ClaimParams) { p.LeaseDuration = -time.Second },
		"no worker id":    func(p *store.ClaimParams) { p.WorkerID = "" },
	}
	for name, mutate := range cases {
		p := base
		mutate(&p)
		_, err := s.ClaimTasks(ctx(t), p)
		wantErr(t, err, store.ErrInvalid, "ClaimTasks with "+name)
	}
	got := listAll(t, s, store.ListParams{Statuses: []store.Status{store.StatusPending}})
	if len(got) != 2 {
		t.Fatalf("invalid claims changed tasks: %d still PENDING, want 2", len(got))
	}
}

var heartbeatTests = []testCase{
	{"ExtendsLease", testHeartbeatExtends},
	{"WrongTokenLeaseLost", testHeartbeatWrongToken},
	{"NotFound", testHeartbeatNotFound},
	{"ReportsCancelRequested", testHeartbeatCancel},
	{"InvalidParams", testHeartbeatInvalid},
	{"ManyInOneCall", testHeartbeatMany},
	{"ManyInvalidExtendsNothing", testHeartbeatManyInvalid},
}

// testHeartbeatMany: one call extends every current lease, reports a cancel request,
// and says which leases are lost or unknown, in the order asked.
func testHeartbeatMany(t *testing.T, s store.Store) {
	a := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	b := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	canceled := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	if _, err := s.CancelTask(ctx(t), canceled.ID); err != nil {
		t.Fatal(err)
	}
	done := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	recordOK(t, s, outcome(done, store.Succeed, ""), store.StatusSucceeded)
	unknown := store.NewID()
	leases := []store.Lease{
		{TaskID: a.ID, LeaseToken: a.LeaseToken},
		{TaskID: done.ID, LeaseToken: done.LeaseToken},
		{TaskID: unknown, LeaseToken: uuid.New()},
		{TaskID: b.ID, LeaseToken: uuid.New()},
		{TaskID: canceled.ID, LeaseToken: canceled.LeaseToken},
		{TaskID: b.ID, LeaseToken: b.LeaseToken},
	}
	got, err := s.HeartbeatMany(ctx(t), store.HeartbeatManyParams{Leases: leases, LeaseDuration: time.Hour})
	if err != nil {
		t.Fatalf("HeartbeatMany: %v", err)
	}
	if len(got) != len(leases) {
		t.Fatalf("%d results for %d leases", len(got), len(leases))
	}
	for i, l := range leases {
		if got[i].TaskID != l.TaskID {
			t.Fatalf("result %d is of task %s, want %s (the order asked)", i, got[i].TaskID, l.TaskID)
		}
	}
	for _, i := range []int{0, 4, 5} {
		if got[i].Err != nil {
			t.Fatalf("lease %d: %v, want extended", i, got[i].Err)
		}
		near(t, fmt.Sprintf("lease %d's new expiry", i), got[i].LeaseExpiresAt, time.Now().Add(time.Hour), clockSkew)
		near(t, fmt.Sprintf("lease %d's stored expiry", i), *get(t, s, leases[i].TaskID).LeaseExpiresAt, time.Now().Add(time.Hour), clockSkew)
	}
	isNil(t, "CancelRequestedAt of a task not canceled", got[0].CancelRequestedAt)
	nearNowPtr(t, "CancelRequestedAt of the canceled task", got[4].CancelRequestedAt)
	wantErr(t, got[1].Err, store.ErrLeaseLost, "HeartbeatMany of a SUCCEEDED task")
	wantErr(t, got[2].Err, store.ErrNotFound, "HeartbeatMany of an unknown task")
	wantErr(t, got[3].Err, store.ErrLeaseLost, "HeartbeatMany with a wrong token")
	if empty, err := s.HeartbeatMany(ctx(t), store.HeartbeatManyParams{LeaseDuration: time.Minute}); err != nil || len(empty) != 0 {
		t.Fatalf("HeartbeatMany of no leases: %v, %v", empty, err)
	}
}

func testHeartbeatManyInvalid(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	_, err := s.HeartbeatMany(ctx(t), store.HeartbeatManyParams{
		Leases: []store.Lease{{TaskID: task.ID, LeaseToken: task.LeaseToken}}})
	wantErr(t, err, store.ErrInvalid, "HeartbeatMany without a lease duration")
	sameTask(t, "task after an invalid HeartbeatMany", get(t, s, task.ID), task)
}

func testHeartbeatExtends(t *testing.T, s store.Store) {
	task := claimID(t, s, createOne(t, s, store.CreateParams{Kind: "k"}), store.StatusPending, 5*time.Second)
	got, err := s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: task.ID, LeaseToken: task.LeaseToken, LeaseDuration: time.Hour})
	if err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	if got.ID != task.ID || got.Status != store.StatusProcessing || got.LeaseToken != task.LeaseToken ||
		got.AttemptCount != 1 || got.WorkerID != task.WorkerID {
		t.Fatalf("Heartbeat returned %+v", got)
	}
	near(t, "LeaseExpiresAt after heartbeat", *got.LeaseExpiresAt, time.Now().Add(time.Hour), clockSkew)
	isNil(t, "CancelRequestedAt", got.CancelRequestedAt)
	sameTask(t, "GetTask after heartbeat", get(t, s, task.ID), got)
	// The attempt is still the open one.
	if a := attempts(t, s, task.ID); len(a) != 1 || a[0].FinishedAt != nil {
		t.Fatalf("attempts after heartbeat: %+v", a)
	}
	// A heartbeat may also shorten the lease: it sets now + duration.
	got, err = s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: task.ID, LeaseToken: task.LeaseToken, LeaseDuration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "LeaseExpiresAt after a short heartbeat", *got.LeaseExpiresAt, time.Now().Add(10*time.Second), clockSkew)
}

func testHeartbeatWrongToken(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	_, err := s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: task.ID, LeaseToken: uuid.New(), LeaseDuration: time.Minute})
	wantErr(t, err, store.ErrLeaseLost, "Heartbeat with a wrong token")
	_, err = s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: task.ID, LeaseToken: uuid.Nil, LeaseDuration: time.Minute})
	wantErr(t, err, store.ErrLeaseLost, "Heartbeat with the nil token")
	sameTask(t, "task after rejected heartbeats", get(t, s, task.ID), task)

	// A stale token: the task was retried and claimed again.
	recordOK(t, s, outcome(task, store.Retry, "x"), store.StatusPending)
	_, err = s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: task.ID, LeaseToken: task.LeaseToken, LeaseDuration: time.Minute})
	wantErr(t, err, store.ErrLeaseLost, "Heartbeat of a PENDING task")
	again := claimID(t, s, task, store.StatusPending, 30*time.Second)
	_, err = s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: task.ID, LeaseToken: task.LeaseToken, LeaseDuration: time.Minute})
	wantErr(t, err, store.ErrLeaseLost, "Heartbeat with the previous claim's token")
	sameTask(t, "task after a stale heartbeat", get(t, s, task.ID), again)
	// Finished: ErrLeaseLost too.
	recordOK(t, s, outcome(again, store.Succeed, ""), store.StatusSucceeded)
	_, err = s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: task.ID, LeaseToken: again.LeaseToken, LeaseDuration: time.Minute})
	wantErr(t, err, store.ErrLeaseLost, "Heartbeat of a SUCCEEDED task")
}

func testHeartbeatNotFound(t *testing.T, s store.Store) {
	_, err := s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: store.NewID(), LeaseToken: uuid.New(), LeaseDuration: time.Minute})
	wantErr(t, err, store.ErrNotFound, "Heartbeat of an unknown task")
}

func testHeartbeatCancel(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	if _, err := s.CancelTask(ctx(t), task.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: task.ID, LeaseToken: task.LeaseToken, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatalf("Heartbeat after a cancel request: %v", err)
	}
	nearNowPtr(t, "CancelRequestedAt from Heartbeat", got.CancelRequestedAt)
	if got.Status != store.StatusProcessing {
		t.Fatalf("status %s, want PROCESSING until the worker records the cancel", got.Status)
	}
}

func testHeartbeatInvalid(t *testing.T, s store.Store) {
	task := createAndClaim(t, s, store.CreateParams{Kind: "k"})
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := s.Heartbeat(ctx(t), store.HeartbeatParams{TaskID: task.ID, LeaseToken: task.LeaseToken, LeaseDuration: d})
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("Heartbeat with lease %s", d))
	}
	sameTask(t, "task after invalid heartbeats", get(t, s, task.ID), task)
}
