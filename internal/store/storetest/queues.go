package storetest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// queueSettingsTests cover the settings half of queues as objects (DESIGN.md section
// 11): storing and reading them. What the limits do to claims is in limitTests.
var queueSettingsTests = []testCase{
	{"DefaultsForUnconfiguredQueue", testQueueSettingsDefaults},
	{"PatchSetsAndKeeps", testQueueSettingsPatch},
	{"NullRemovesALimit", testQueueSettingsRemove},
	{"ListConfigured", testQueueSettingsList},
	{"InvalidChangesNothing", testQueueSettingsInvalid},
	{"GroupKeyStored", testGroupKeyStored},
	{"GroupKeyInvalid", testGroupKeyInvalid},
}

func intp(n int) *int { return &n }

func setLimit(n int) *store.Change[int] { return &store.Change[int]{To: &n} }

func setRate(limit, per int) *store.Change[store.RateLimit] {
	return &store.Change[store.RateLimit]{To: &store.RateLimit{Limit: limit, PerSeconds: per}}
}

func updateQueue(t *testing.T, s store.Store, queue string, p store.QueuePatch) *store.QueueSettings {
	t.Helper()
	q, err := s.UpdateQueueSettings(ctx(t), queue, p)
	if err != nil {
		t.Fatalf("UpdateQueueSettings(%s): %v", queue, err)
	}
	return q
}

func getQueue(t *testing.T, s store.Store, queue string) *store.QueueSettings {
	t.Helper()
	q, err := s.GetQueueSettings(ctx(t), queue)
	if err != nil {
		t.Fatalf("GetQueueSettings(%s): %v", queue, err)
	}
	return q
}

// sameSettings compares settings without UpdatedAt.
func sameSettings(t *testing.T, got *store.QueueSettings, want store.QueueSettings) {
	t.Helper()
	g := *got
	g.UpdatedAt = nil
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("settings = %+v, want %+v", describeSettings(&g), describeSettings(&want))
	}
}

func describeSettings(q *store.QueueSettings) map[string]any {
	m := map[string]any{"queue": q.Queue, "paused": q.Paused}
	if q.Concurrency != nil {
		m["concurrency"] = *q.Concurrency
	}
	if q.Rate != nil {
		m["rate"] = *q.Rate
	}
	if q.GroupConcurrency != nil {
		m["group_concurrency"] = *q.GroupConcurrency
	}
	if q.GroupRate != nil {
		m["group_rate"] = *q.GroupRate
	}
	return m
}

func testQueueSettingsDefaults(t *testing.T, s store.Store) {
	createN(t, s, "busy", "k", 1)
	for _, name := range []string{"busy", "never-used"} {
		q := getQueue(t, s, name)
		sameSettings(t, q, store.QueueSettings{Queue: name})
		if q.UpdatedAt != nil || q.Limited() {
			t.Errorf("%s: UpdatedAt = %v, Limited = %v; want nil, false for a queue nobody configured", name, q.UpdatedAt, q.Limited())
		}
	}
}

func testQueueSettingsPatch(t *testing.T, s store.Store) {
	before := time.Now()
	paused := true
	q := updateQueue(t, s, "q", store.QueuePatch{Paused: &paused, Concurrency: setLimit(5)})
	want := store.QueueSettings{Queue: "q", Paused: true, Concurrency: intp(5)}
	sameSettings(t, q, want)
	if q.UpdatedAt == nil || q.UpdatedAt.Before(before.Add(-clockSkew)) || q.UpdatedAt.After(time.Now().Add(clockSkew)) {
		t.Errorf("UpdatedAt = %v, want about now", q.UpdatedAt)
	}
	// A second patch changes only what it names.
	q = updateQueue(t, s, "q", store.QueuePatch{Rate: setRate(100, 1), GroupConcurrency: setLimit(2),
		GroupRate: setRate(10, 60)})
	want.Rate = &store.RateLimit{Limit: 100, PerSeconds: 1}
	want.GroupConcurrency = intp(2)
	want.GroupRate = &store.RateLimit{Limit: 10, PerSeconds: 60}
	sameSettings(t, q, want)
	sameSettings(t, getQueue(t, s, "q"), want)
	if !q.Limited() {
		t.Error("Limited() = false for a configured queue")
	}
	// An empty patch changes nothing.
	sameSettings(t, updateQueue(t, s, "q", store.QueuePatch{}), want)
	// Resume.
	resumed := false
	want.Paused = false
	sameSettings(t, updateQueue(t, s, "q", store.QueuePatch{Paused: &resumed}), want)
}

func testQueueSettingsRemove(t *testing.T, s store.Store) {
	updateQueue(t, s, "q", store.QueuePatch{Concurrency: setLimit(3), Rate: setRate(5, 2)})
	q := updateQueue(t, s, "q", store.QueuePatch{Concurrency: &store.Change[int]{},
		Rate: &store.Change[store.RateLimit]{}})
	sameSettings(t, q, store.QueueSettings{Queue: "q"})
	if q.Limited() {
		t.Error("Limited() = true after every limit was removed")
	}
}

func testQueueSettingsList(t *testing.T, s store.Store) {
	createN(t, s, "has-tasks", "k", 1) // tasks alone do not configure a queue
	updateQueue(t, s, "b", store.QueuePatch{Concurrency: setLimit(1)})
	updateQueue(t, s, "a", store.QueuePatch{GroupRate: setRate(1, 1)})
	qs, err := s.ListQueueSettings(ctx(t))
	if err != nil {
		t.Fatalf("ListQueueSettings: %v", err)
	}
	var names []string
	for _, q := range qs {
		names = append(names, q.Queue)
	}
	if !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Fatalf("ListQueueSettings names = %v, want [a b]", names)
	}
	sameSettings(t, qs[1], store.QueueSettings{Queue: "b", Concurrency: intp(1)})
}

func testQueueSettingsInvalid(t *testing.T, s store.Store) {
	updateQueue(t, s, "q", store.QueuePatch{Concurrency: setLimit(4)})
	bad := []struct {
		queue string
		patch store.QueuePatch
	}{
		{"q", store.QueuePatch{Concurrency: setLimit(0)}},
		{"q", store.QueuePatch{Concurrency: setLimit(-1)}},
		{"q", store.QueuePatch{Concurrency: setLimit(store.MaxQueueLimit + 1)}},
		{"q", store.QueuePatch{GroupConcurrency: setLimit(0)}},
		{"q", store.QueuePatch{Rate: setRate(0, 1)}},
		{"q", store.QueuePatch{Rate: setRate(1, 0)}},
		{"q", store.QueuePatch{Rate: setRate(1, store.MaxRatePeriod+1)}},
		{"q", store.QueuePatch{GroupRate: setRate(-5, 1)}},
		// A valid change beside an invalid one is not written either.
		{"q", store.QueuePatch{Concurrency: setLimit(9), GroupRate: setRate(1, -1)}},
		{"", store.QueuePatch{Concurrency: setLimit(1)}},
		{"bad name", store.QueuePatch{Concurrency: setLimit(1)}},
		{strings.Repeat("q", store.MaxNameLength+1), store.QueuePatch{}},
	}
	for _, b := range bad {
		if _, err := s.UpdateQueueSettings(ctx(t), b.queue, b.patch); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("UpdateQueueSettings(%q, %+v) error = %v, want ErrInvalid", b.queue, b.patch, err)
		}
	}
	if _, err := s.GetQueueSettings(ctx(t), "bad name"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("GetQueueSettings(bad name) error = %v, want ErrInvalid", err)
	}
	sameSettings(t, getQueue(t, s, "q"), store.QueueSettings{Queue: "q", Concurrency: intp(4)})
	if qs, err := s.ListQueueSettings(ctx(t)); err != nil || len(qs) != 1 {
		t.Fatalf("ListQueueSettings = %d queues, %v; want only q", len(qs), err)
	}
}

func testGroupKeyStored(t *testing.T, s store.Store) {
	key := "tenant:42/ü" // any characters
	task := createOne(t, s, store.CreateParams{Queue: "g", Kind: "k", GroupKey: key})
	plain := createOne(t, s, store.CreateParams{Queue: "g", Kind: "k"})
	if task.GroupKey != key || plain.GroupKey != "" {
		t.Fatalf("created group keys = %q, %q; want %q, \"\"", task.GroupKey, plain.GroupKey, key)
	}
	if got := get(t, s, task.ID); got.GroupKey != key {
		t.Errorf("GetTask group key = %q, want %q", got.GroupKey, key)
	}
	claimed := claim(t, s, claimParams("g", 10))
	if len(claimed) != 2 {
		t.Fatalf("claimed %d tasks, want 2", len(claimed))
	}
	for _, c := range claimed {
		want := ""
		if c.ID == task.ID {
			want = key
		}
		if c.GroupKey != want {
			t.Errorf("claimed task %s group key = %q, want %q", c.ID, c.GroupKey, want)
		}
	}
	tasks, _, err := s.ListTasks(ctx(t), store.ListParams{Queue: "g"})
	if err != nil {
		t.Fatalf("ListTasks: %v", err)
	}
	for _, lt := range tasks {
		if lt.ID == task.ID && lt.GroupKey != key {
			t.Errorf("ListTasks group key = %q, want %q", lt.GroupKey, key)
		}
	}
}

func testGroupKeyInvalid(t *testing.T, s store.Store) {
	for _, key := range []string{strings.Repeat("k", store.MaxGroupKeyLength+1), "nul\x00", "bad\xff"} {
		_, err := s.CreateTasks(ctx(t), []store.CreateParams{{Queue: "g", Kind: "k"}, {Queue: "g", Kind: "k", GroupKey: key}})
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("create with group key %q: error = %v, want ErrInvalid", key, err)
		}
	}
	// 128 characters (more bytes) is fine.
	createOne(t, s, store.CreateParams{Queue: "g", Kind: "k", GroupKey: strings.Repeat("é", store.MaxGroupKeyLength)})
	if st := statsOf(t, s, "g"); st == nil || st.Counts[store.StatusPending] != 1 {
		t.Errorf("stats of g = %+v, want 1 PENDING task: the invalid batches must write nothing", st)
	}
}
