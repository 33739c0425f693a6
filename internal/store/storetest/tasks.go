package storetest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

var createTests = []testCase{
	{"Defaults", testCreateDefaults},
	{"AllFields", testCreateAllFields},
	{"Delay", testCreateDelay},
	{"InvalidWritesNothing", testCreateInvalid},
	{"BatchAllOrNothing", testCreateBatchAllOrNothing},
	{"BatchInOrder", testCreateBatchInOrder},
	{"EmptyBatch", testCreateEmptyBatch},
	{"DuplicateIDConflict", testCreateDuplicateID},
	{"IdempotencyKeyReturnsExisting", testIdempotencyExisting},
	{"IdempotencyKeyWithinBatch", testIdempotencyWithinBatch},
	{"IdempotencyKeySucceededStillHeld", testIdempotencySucceeded},
	{"IdempotencyKeyReusableAfterTerminalFailure", testIdempotencyReusable},
}

func testCreateDefaults(t *testing.T, s store.Store) {
	res := create(t, s, store.CreateParams{Kind: "noop"})
	if res[0].Existing {
		t.Fatal("Existing = true for a new task")
	}
	task := res[0].Task
	if task.ID == uuid.Nil || task.ID.Version() != 7 {
		t.Fatalf("ID %s: want a version 7 UUID", task.ID)
	}
	if task.Queue != store.DefaultQueue {
		t.Fatalf("Queue = %q, want %q", task.Queue, store.DefaultQueue)
	}
	if task.Kind != "noop" {
		t.Fatalf("Kind = %q", task.Kind)
	}
	jsonEqual(t, "Payload", task.Payload, json.RawMessage(`{}`))
	if task.Status != store.StatusPending {
		t.Fatalf("Status = %s, want PENDING", task.Status)
	}
	if task.MaxAttempts != store.DefaultMaxAttempts {
		t.Fatalf("MaxAttempts = %d, want %d", task.MaxAttempts, store.DefaultMaxAttempts)
	}
	if task.AttemptCount != 0 || task.Priority != 0 || task.TimeoutSeconds != 0 {
		t.Fatalf("AttemptCount %d Priority %d TimeoutSeconds %d, want zeros", task.AttemptCount, task.Priority, task.TimeoutSeconds)
	}
	if task.IdempotencyKey != "" || task.WorkerID != "" || task.LastError != "" {
		t.Fatalf("IdempotencyKey %q WorkerID %q LastError %q, want empty", task.IdempotencyKey, task.WorkerID, task.LastError)
	}
	nearNow(t, "ScheduledFor", task.ScheduledFor)
	nearNow(t, "CreatedAt", task.CreatedAt)
	nearNow(t, "UpdatedAt", task.UpdatedAt)
	checkNoLease(t, task)
	isNil(t, "CancelRequestedAt", task.CancelRequestedAt)
	isNil(t, "EnqueuedAt", task.EnqueuedAt)
	isNil(t, "ProcessingStartedAt", task.ProcessingStartedAt)
	isNil(t, "CompletedAt", task.CompletedAt)

	sameTask(t, "GetTask after create", get(t, s, task.ID), task)
	if a := attempts(t, s, task.ID); len(a) != 0 {
		t.Fatalf("a new task has %d attempt rows, want 0", len(a))
	}
}

func testCreateAllFields(t *testing.T, s store.Store) {
	id := store.NewID()
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	p := store.CreateParams{
		ID:             id,
		Queue:          "emails",
		Kind:           "send.welcome",
		Payload:        json.RawMessage(`{"to": "a@example.com", "n": [1, 2.5, null], "nested": {"ok": true}}`),
		Priority:       7,
		ScheduledFor:   at,
		MaxAttempts:    3,
		IdempotencyKey: "welcome:42",
		TimeoutSeconds: 90,
	}
	task := createOne(t, s, p)
	if task.ID != id {
		t.Fatalf("ID = %s, want the given %s", task.ID, id)
	}
	if task.Queue != "emails" || task.Kind != "send.welcome" || task.Priority != 7 || task.MaxAttempts != 3 ||
		task.IdempotencyKey != "welcome:42" || task.TimeoutSeconds != 90 || task.Status != store.StatusPending {
		t.Fatalf("task %+v does not carry the given params", task)
	}
	jsonEqual(t, "Payload", task.Payload, p.Payload)
	near(t, "ScheduledFor", task.ScheduledFor, at, time.Millisecond)
	sameTask(t, "GetTask after create", get(t, s, id), task)

	// Negative priorities and a due time in the past are fine.
	past := createOne(t, s, store.CreateParams{Kind: "k", Priority: -store.MaxPriority, ScheduledFor: time.Now().Add(-time.Hour)})
	if past.Priority != -store.MaxPriority {
		t.Fatalf("Priority = %d, want %d", past.Priority, -store.MaxPriority)
	}
	near(t, "ScheduledFor in the past", past.ScheduledFor, time.Now().Add(-time.Hour), clockSkew)
}

// testCreateDelay: a Delay is added to the store's own now() (the one created_at gets),
// never to the caller's clock (DESIGN.md section 9), so the difference is exact; a
// delayed task is not claimable before it is due.
func testCreateDelay(t *testing.T, s store.Store) {
	const delay = time.Hour + 2500*time.Microsecond
	task := createOne(t, s, store.CreateParams{Kind: "k", Delay: delay})
	if d := task.ScheduledFor.Sub(task.CreatedAt); d != delay {
		t.Fatalf("ScheduledFor %s is %s after CreatedAt, want exactly the Delay %s", task.ScheduledFor, d, delay)
	}
	if got := claim(t, s, claimParams(store.DefaultQueue, 10)); len(got) != 0 {
		t.Fatal("a task delayed by an hour was claimed")
	}
	// GetTask tells the store's clock at the read, so that a caller can tell a due task
	// from one not due yet without a process clock (the SQS verdict does).
	got := get(t, s, task.ID)
	sameTask(t, "GetTask after a delayed create", got, task)
	if got.ReadAt.Before(task.CreatedAt) || got.ScheduledFor.Sub(got.ReadAt) > delay {
		t.Fatalf("ReadAt %s: want the store's now, at or after CreatedAt %s", got.ReadAt, task.CreatedAt)
	}
	nearNow(t, "ReadAt", got.ReadAt)
}

func testCreateInvalid(t *testing.T, s store.Store) {
	bigPayload := json.RawMessage(`"` + strings.Repeat("x", store.MaxPayloadBytes) + `"`)
	cases := []struct {
		name string
		p    store.CreateParams
	}{
		{"empty kind", store.CreateParams{}},
		{"kind starting with a digit", store.CreateParams{Kind: "1abc"}},
		{"kind with a space", store.CreateParams{Kind: "has space"}},
		{"kind with a slash", store.CreateParams{Kind: "a/b"}},
		{"kind too long", store.CreateParams{Kind: "k" + strings.Repeat("x", store.MaxNameLength)}},
		{"malformed queue", store.CreateParams{Kind: "k", Queue: "bad queue"}},
		{"payload not JSON", store.CreateParams{Kind: "k", Payload: json.RawMessage(`{not json`)}},
		{"payload with trailing garbage", store.CreateParams{Kind: "k", Payload: json.RawMessage(`{} {}`)}},
		{"payload too big", store.CreateParams{Kind: "k", Payload: bigPayload}},
		{"max_attempts negative", store.CreateParams{Kind: "k", MaxAttempts: -1}},
		{"max_attempts too big", store.CreateParams{Kind: "k", MaxAttempts: store.MaxMaxAttempts + 1}},
		{"priority too high", store.CreateParams{Kind: "k", Priority: store.MaxPriority + 1}},
		{"priority too low", store.CreateParams{Kind: "k", Priority: -store.MaxPriority - 1}},
		{"idempotency key too long", store.CreateParams{Kind: "k", IdempotencyKey: strings.Repeat("i", store.MaxIdempotencyKeyLen+1)}},
		{"timeout negative", store.CreateParams{Kind: "k", TimeoutSeconds: -1}},
		{"timeout too long", store.CreateParams{Kind: "k", TimeoutSeconds: store.MaxTimeoutSeconds + 1}},
		{"negative delay", store.CreateParams{Kind: "k", Delay: -time.Second}},
		{"delay and scheduled_for", store.CreateParams{Kind: "k", Delay: time.Second, ScheduledFor: time.Now().Add(time.Hour)}},
	}
	for _, c := range cases {
		res, err := s.CreateTasks(ctx(t), []store.CreateParams{c.p})
		wantErr(t, err, store.ErrInvalid, "CreateTasks with "+c.name)
		if len(res) != 0 {
			t.Fatalf("CreateTasks with %s: returned %d results alongside the error", c.name, len(res))
		}
	}
	if n := countTasks(t, s); n != 0 {
		t.Fatalf("invalid creates wrote %d tasks", n)
	}
	// The limits themselves are valid.
	createOne(t, s, store.CreateParams{Kind: "k" + strings.Repeat("x", store.MaxNameLength-1), MaxAttempts: store.MaxMaxAttempts,
		Priority: store.MaxPriority, TimeoutSeconds: store.MaxTimeoutSeconds, IdempotencyKey: strings.Repeat("i", store.MaxIdempotencyKeyLen)})
}

func testCreateBatchAllOrNothing(t *testing.T, s store.Store) {
	batch := []store.CreateParams{
		{Kind: "ok", IdempotencyKey: "batch-a"},
		{Kind: "ok", Queue: "other"},
		{Kind: "bad", Payload: json.RawMessage(`[`)},
		{Kind: "ok", IdempotencyKey: "batch-b"},
	}
	res, err := s.CreateTasks(ctx(t), batch)
	wantErr(t, err, store.ErrInvalid, "CreateTasks with one invalid task")
	if len(res) != 0 {
		t.Fatalf("failed batch returned %d results", len(res))
	}
	if n := countTasks(t, s); n != 0 {
		t.Fatalf("a failed batch wrote %d tasks", n)
	}
	// The valid tasks' idempotency keys were not taken.
	again := create(t, s, batch[0], batch[3])
	for i, r := range again {
		if r.Existing {
			t.Fatalf("key of task %d was taken by a failed batch", i)
		}
	}
}

func testCreateBatchInOrder(t *testing.T, s store.Store) {
	params := make([]store.CreateParams, 10)
	for i := range params {
		params[i] = store.CreateParams{Kind: fmt.Sprintf("kind%d", i), Priority: i}
	}
	res := create(t, s, params...)
	seen := map[uuid.UUID]bool{}
	for i, r := range res {
		if r.Existing || r.Task.Kind != params[i].Kind || r.Task.Priority != i {
			t.Fatalf("result %d = %+v, want the task of params %d", i, r.Task, i)
		}
		if seen[r.Task.ID] {
			t.Fatalf("duplicate id %s in batch", r.Task.ID)
		}
		seen[r.Task.ID] = true
	}
	if n := countTasks(t, s); n != 10 {
		t.Fatalf("batch of 10 wrote %d tasks", n)
	}
}

func testCreateEmptyBatch(t *testing.T, s store.Store) {
	res, err := s.CreateTasks(ctx(t), nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("CreateTasks(nil) = %v, %v; want no results, no error", res, err)
	}
}

func testCreateDuplicateID(t *testing.T, s store.Store) {
	task := createOne(t, s, store.CreateParams{Kind: "k"})
	_, err := s.CreateTasks(ctx(t), []store.CreateParams{{Kind: "other"}, {ID: task.ID, Kind: "k2"}})
	wantErr(t, err, store.ErrConflict, "CreateTasks with an id that exists")
	if n := countTasks(t, s); n != 1 {
		t.Fatalf("failed batch left %d tasks, want 1", n)
	}
	if got := get(t, s, task.ID); got.Kind != "k" {
		t.Fatalf("existing task was overwritten: kind %q", got.Kind)
	}
}

func testIdempotencyExisting(t *testing.T, s store.Store) {
	first := createOne(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "order-1", Payload: json.RawMessage(`{"v":1}`)})
	res := create(t, s, store.CreateParams{Kind: "other", Queue: "q2", IdempotencyKey: "order-1", Payload: json.RawMessage(`{"v":2}`)})
	if !res[0].Existing {
		t.Fatal("second create with the same key: Existing = false")
	}
	sameTask(t, "idempotent create result", res[0].Task, first)
	jsonEqual(t, "payload of the existing task", res[0].Task.Payload, json.RawMessage(`{"v":1}`))

	// Live in any non-terminal status: PROCESSING too.
	claimID(t, s, first, store.StatusPending, 30*time.Second)
	res = create(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "order-1"})
	if !res[0].Existing || res[0].Task.ID != first.ID || res[0].Task.Status != store.StatusProcessing {
		t.Fatalf("create with the key of a PROCESSING task = %+v (existing %v), want that task", res[0].Task, res[0].Existing)
	}
	// A batch mixing a hit and a new task.
	res = create(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "order-1"}, store.CreateParams{Kind: "k", IdempotencyKey: "order-2"})
	if !res[0].Existing || res[0].Task.ID != first.ID || res[1].Existing || res[1].Task.ID == first.ID {
		t.Fatalf("mixed batch: got existing=%v/%v", res[0].Existing, res[1].Existing)
	}
	if n := countTasks(t, s); n != 2 {
		t.Fatalf("%d tasks, want 2", n)
	}
}

func testIdempotencyWithinBatch(t *testing.T, s store.Store) {
	res := create(t, s,
		store.CreateParams{Kind: "k", IdempotencyKey: "dup"},
		store.CreateParams{Kind: "k", IdempotencyKey: "other"},
		store.CreateParams{Kind: "k2", IdempotencyKey: "dup"},
	)
	if res[0].Existing || res[1].Existing {
		t.Fatal("first uses of the keys: Existing = true")
	}
	if !res[2].Existing || res[2].Task.ID != res[0].Task.ID || res[2].Task.Kind != "k" {
		t.Fatalf("repeated key within a batch: got %+v existing=%v, want the batch's first task", res[2].Task, res[2].Existing)
	}
	if n := countTasks(t, s); n != 2 {
		t.Fatalf("%d tasks, want 2", n)
	}
}

func testIdempotencySucceeded(t *testing.T, s store.Store) {
	done := driveTo(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "once"}, store.StatusSucceeded)
	res := create(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "once"})
	if !res[0].Existing || res[0].Task.ID != done.ID || res[0].Task.Status != store.StatusSucceeded {
		t.Fatalf("create with the key of a SUCCEEDED task = %+v existing=%v, want that task", res[0].Task, res[0].Existing)
	}
}

func testIdempotencyReusable(t *testing.T, s store.Store) {
	for _, status := range []store.Status{store.StatusDead, store.StatusFailed, store.StatusCanceled} {
		key := "reuse-" + string(status)
		old := driveTo(t, s, store.CreateParams{Kind: "k", IdempotencyKey: key}, status)
		res := create(t, s, store.CreateParams{Kind: "k", IdempotencyKey: key})
		if res[0].Existing || res[0].Task.ID == old.ID {
			t.Fatalf("key of a %s task: got existing=%v id %s, want a new task", status, res[0].Existing, res[0].Task.ID)
		}
		if res[0].Task.Status != store.StatusPending || res[0].Task.IdempotencyKey != key {
			t.Fatalf("new task: status %s key %q", res[0].Task.Status, res[0].Task.IdempotencyKey)
		}
		// Now the new task holds the key.
		again := create(t, s, store.CreateParams{Kind: "k", IdempotencyKey: key})
		if !again[0].Existing || again[0].Task.ID != res[0].Task.ID {
			t.Fatalf("key after reuse: existing=%v id %s, want the new task %s", again[0].Existing, again[0].Task.ID, res[0].Task.ID)
		}
		if got := get(t, s, old.ID); got.Status != status || got.IdempotencyKey != key {
			t.Fatalf("old task changed: status %s key %q", got.Status, got.IdempotencyKey)
		}
	}
}

var getTests = []testCase{
	{"NotFound", testGetNotFound},
	{"ReturnsCopies", testGetReturnsCopies},
}

func testGetNotFound(t *testing.T, s store.Store) {
	_, err := s.GetTask(ctx(t), store.NewID())
	wantErr(t, err, store.ErrNotFound, "GetTask of an unknown id")
}

func testGetReturnsCopies(t *testing.T, s store.Store) {
	task := createOne(t, s, store.CreateParams{Kind: "k", Payload: json.RawMessage(`{"a":1}`)})
	want := get(t, s, task.ID)
	// Scribble on everything the caller got back; the store must not notice.
	for _, got := range []*store.Task{task, get(t, s, task.ID)} {
		for i := range got.Payload {
			got.Payload[i] = ' '
		}
		got.Status = store.StatusSucceeded
		got.Kind = "mutated"
		got.ScheduledFor = time.Time{}
	}
	claimed := claimID(t, s, want, store.StatusPending, 30*time.Second)
	wantClaimed := get(t, s, task.ID)
	*claimed.LeaseExpiresAt = time.Time{}
	*claimed.ProcessingStartedAt = time.Time{}
	listed, _, err := s.ListTasks(ctx(t), store.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	listed[0].Payload[0] = 'x'
	a := attempts(t, s, task.ID)
	a[0].Outcome = store.OutcomeFailed

	after := get(t, s, task.ID)
	jsonEqual(t, "Payload", after.Payload, json.RawMessage(`{"a":1}`))
	if after.Kind != "k" || after.Status != store.StatusProcessing || after.ScheduledFor.IsZero() {
		t.Fatalf("store state changed through a returned value: %+v", after)
	}
	sameTask(t, "task after scribbling on returned copies", after, wantClaimed)
	if a := attempts(t, s, task.ID); a[0].Outcome != "" {
		t.Fatalf("attempt row changed through a returned value: %+v", a[0])
	}
}

var listTests = []testCase{
	{"PagingNewestFirst", testListPaging},
	{"Filters", testListFilters},
	{"InvalidParams", testListInvalid},
	{"PagesEndAtTheByteBudget", testListByteBudget},
}

// testListByteBudget: a page ends once its payloads reach MaxBytes, holds at least one
// task however large, and paging on from its cursor loses and repeats nothing.
func testListByteBudget(t *testing.T, s store.Store) {
	payload := json.RawMessage(`"` + strings.Repeat("x", 1000) + `"`) // 1,002 bytes
	var created []*store.Task
	for range 5 {
		created = append(created, createOne(t, s, store.CreateParams{Kind: "k", Queue: "big", Payload: payload}))
	}
	want := ids(created)
	slices.Reverse(want)
	for _, tc := range []struct {
		maxBytes  int
		pageSizes []int
	}{
		{2500, []int{3, 2}}, // 3 tasks reach 2,500 bytes (3,006)
		{3006, []int{3, 2}}, // exactly reached: the page ends there too
		{3007, []int{4, 1}},
		{10, []int{1, 1, 1, 1, 1}}, // each task alone is over: one per page
		{0, []int{5}},              // the default budget
	} {
		var got []uuid.UUID
		var sizes []int
		cursor := ""
		for {
			page, next, err := s.ListTasks(ctx(t), store.ListParams{Queue: "big", Cursor: cursor, MaxBytes: tc.maxBytes})
			if err != nil {
				t.Fatalf("ListTasks(MaxBytes %d): %v", tc.maxBytes, err)
			}
			got = append(got, ids(page)...)
			sizes = append(sizes, len(page))
			if next == "" {
				break
			}
			cursor = next
		}
		if !slices.Equal(got, want) || !slices.Equal(sizes, tc.pageSizes) {
			t.Fatalf("MaxBytes %d: pages of %v tasks, %v; want pages of %v, %v", tc.maxBytes, sizes, got, tc.pageSizes, want)
		}
	}
	if _, _, err := s.ListTasks(ctx(t), store.ListParams{MaxBytes: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("MaxBytes -1: %v, want ErrInvalid", err)
	}
}

func testListPaging(t *testing.T, s store.Store) {
	created := createN(t, s, "default", "k", 25)
	// Also tasks created one by one, which spread over time.
	for range 3 {
		created = append(created, createOne(t, s, store.CreateParams{Kind: "k"}))
	}
	want := ids(created)
	slices.Reverse(want) // ids are time-ordered: newest first is the reverse of creation

	var got []uuid.UUID
	var sizes []int
	p := store.ListParams{Limit: 10}
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("paging does not end")
		}
		tasks, next, err := s.ListTasks(ctx(t), p)
		if err != nil {
			t.Fatalf("ListTasks page %d: %v", page, err)
		}
		sizes = append(sizes, len(tasks))
		got = append(got, ids(tasks)...)
		if next == "" {
			break
		}
		p.Cursor = next
	}
	if !slices.Equal(sizes, []int{10, 10, 8}) {
		t.Fatalf("page sizes %v, want [10 10 8] (empty NextCursor on the last page)", sizes)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged ids (no duplicates, no gaps, newest first):\n got %v\nwant %v", got, want)
	}
	// The default limit.
	tasks, _, err := s.ListTasks(ctx(t), store.ListParams{})
	if err != nil || len(tasks) != 28 {
		t.Fatalf("ListTasks with the default limit: %d tasks, %v", len(tasks), err)
	}
	// A cursor past the end gives an empty page.
	last := created[0].ID
	tasks, next, err := s.ListTasks(ctx(t), store.ListParams{Cursor: store.EncodeTaskCursor(last)})
	if err != nil || len(tasks) != 0 || next != "" {
		t.Fatalf("page after the oldest task: %d tasks, cursor %q, %v", len(tasks), next, err)
	}
	// Listed tasks are whole tasks.
	all := listAll(t, s, store.ListParams{Limit: 5})
	for _, task := range all {
		sameTask(t, "listed task", task, get(t, s, task.ID))
	}
}

func testListFilters(t *testing.T, s store.Store) {
	a := createN(t, s, "qa", "alpha", 4)
	b := createN(t, s, "qb", "alpha", 3)
	c := createN(t, s, "qa", "beta", 2)
	claimID(t, s, a[0], store.StatusPending, 30*time.Second)
	claimID(t, s, a[1], store.StatusPending, 30*time.Second)
	canceled, err := s.CancelTask(ctx(t), b[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	done := driveTo(t, s, store.CreateParams{Queue: "qb", Kind: "beta"}, store.StatusSucceeded)

	check := func(p store.ListParams, want ...*store.Task) {
		t.Helper()
		p.Limit = 3 // paging under filters too
		got := listAll(t, s, p)
		if !slices.Equal(sortedIDs(got), sortedIDs(want)) {
			t.Fatalf("ListTasks(%+v): got %d tasks %v, want %d %v", p, len(got), ids(got), len(want), ids(want))
		}
		for i := 1; i < len(got); i++ {
			if compareIDs(got[i-1].ID, got[i].ID) <= 0 {
				t.Fatalf("ListTasks(%+v): not newest first", p)
			}
		}
	}
	check(store.ListParams{Queue: "qa"}, a[0], a[1], a[2], a[3], c[0], c[1])
	check(store.ListParams{Queue: "qb"}, b[0], b[1], b[2], done)
	check(store.ListParams{Kind: "beta"}, c[0], c[1], done)
	check(store.ListParams{Queue: "qa", Kind: "alpha"}, a...)
	check(store.ListParams{Statuses: []store.Status{store.StatusProcessing}}, a[0], a[1])
	check(store.ListParams{Statuses: []store.Status{store.StatusCanceled, store.StatusSucceeded}}, canceled, done)
	check(store.ListParams{Statuses: []store.Status{store.StatusPending}, Queue: "qa", Kind: "alpha"}, a[2], a[3])
	check(store.ListParams{Queue: "nope"})
	check(store.ListParams{Statuses: []store.Status{store.StatusDead}})
}

func testListInvalid(t *testing.T, s store.Store) {
	createN(t, s, "default", "k", 3)
	short := base64.RawURLEncoding.EncodeToString([]byte("abc"))
	for _, p := range []store.ListParams{
		{Cursor: "not a cursor!"},
		{Cursor: short},
		{Limit: -1},
		{Limit: store.MaxListLimit + 1},
		{Statuses: []store.Status{"BOGUS"}},
		// A filter that is not a valid name matches no task (names are checked on
		// create); PostgreSQL would refuse NUL and invalid UTF-8 outright.
		{Queue: "\x00"},
		{Kind: "\xff"},
		{Queue: "bad queue"},
		{Kind: strings.Repeat("k", store.MaxNameLength+1)},
	} {
		_, _, err := s.ListTasks(ctx(t), p)
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("ListTasks(%+v)", p))
	}
}
