package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

var workerTests = []testCase{
	{"RegisterAndList", testWorkerRegisterAndList},
	{"RenewKeepsStart", testWorkerRenewKeepsStart},
	{"FilterByQueue", testWorkerFilterByQueue},
	{"MergeQueues", testWorkerMergeQueues},
	{"Deregister", testWorkerDeregister},
	{"Expiry", testWorkerExpiry},
	{"Invalid", testWorkerInvalid},
}

func register(t *testing.T, s store.Store, p store.RegisterParams) {
	t.Helper()
	if err := s.RegisterWorker(ctx(t), p); err != nil {
		t.Fatalf("RegisterWorker(%s): %v", p.Worker.ID, err)
	}
}

func listWorkers(t *testing.T, s store.Store, p store.WorkerListParams) []store.Worker {
	t.Helper()
	ws, err := s.ListWorkers(ctx(t), p)
	if err != nil {
		t.Fatalf("ListWorkers: %v", err)
	}
	return ws
}

func workerIDs(ws []store.Worker) []string {
	ids := []string{}
	for _, w := range ws {
		ids = append(ids, w.ID)
	}
	return ids
}

func testWorkerRegisterAndList(t *testing.T, s store.Store) {
	before := time.Now()
	register(t, s, store.RegisterParams{Worker: store.Worker{ID: "w2", Host: "h", PID: 42, Version: "v1",
		Mode: store.WorkerModePoll, Queues: []string{"b", "a"}, Kinds: []string{"sleep", "noop"},
		Concurrency: 10, Running: 3}})
	register(t, s, store.RegisterParams{Worker: store.Worker{ID: "w1", Mode: store.WorkerModeHTTP,
		Queues: []string{"a"}}}) // kinds nil: unknown
	ws := listWorkers(t, s, store.WorkerListParams{})
	if got := workerIDs(ws); !reflect.DeepEqual(got, []string{"w1", "w2"}) {
		t.Fatalf("ListWorkers ids = %v, want [w1 w2] (ordered by id)", got)
	}
	w1, w2 := ws[0], ws[1]
	if w1.Kinds != nil {
		t.Errorf("unknown kinds came back as %#v, want nil", w1.Kinds)
	}
	if !w1.Handles("anything") {
		t.Errorf("a worker of unknown kinds must handle any kind")
	}
	want := store.Worker{ID: "w2", Host: "h", PID: 42, Version: "v1", Mode: store.WorkerModePoll,
		Queues: []string{"a", "b"}, Kinds: []string{"noop", "sleep"}, Concurrency: 10, Running: 3,
		StartedAt: w2.StartedAt, LastSeenAt: w2.LastSeenAt}
	if !reflect.DeepEqual(w2, want) {
		t.Errorf("worker = %+v\nwant     %+v", w2, want)
	}
	if w2.Handles("fail") || !w2.Handles("noop") {
		t.Errorf("Handles: noop yes, fail no; kinds %v", w2.Kinds)
	}
	if d := w2.LastSeenAt.Sub(before); d < -clockSkew || d > clockSkew {
		t.Errorf("last_seen_at %s is not the store's now (test clock %s)", w2.LastSeenAt, before)
	}
}

func testWorkerRenewKeepsStart(t *testing.T, s store.Store) {
	p := store.RegisterParams{Worker: store.Worker{ID: "w", Queues: []string{"q"}, Kinds: []string{"k"}, Running: 1}}
	register(t, s, p)
	first := listWorkers(t, s, store.WorkerListParams{})[0]
	time.Sleep(5 * time.Millisecond) // so that a renewal's now() differs at microsecond precision
	p.Worker.Running, p.Worker.Kinds = 7, []string{}
	register(t, s, p)
	got := listWorkers(t, s, store.WorkerListParams{})
	if len(got) != 1 {
		t.Fatalf("a renewal must not add a row: %v", workerIDs(got))
	}
	w := got[0]
	if !w.StartedAt.Equal(first.StartedAt) || !w.LastSeenAt.After(first.LastSeenAt) {
		t.Errorf("renewal: started_at %s -> %s (must stay), last_seen_at %s -> %s (must advance)",
			first.StartedAt, w.StartedAt, first.LastSeenAt, w.LastSeenAt)
	}
	if w.Running != 7 || w.Kinds == nil || len(w.Kinds) != 0 {
		t.Errorf("renewal: running %d (want 7), kinds %#v (want empty, not unknown)", w.Running, w.Kinds)
	}
}

func testWorkerFilterByQueue(t *testing.T, s store.Store) {
	register(t, s, store.RegisterParams{Worker: store.Worker{ID: "a", Queues: []string{"q1", "q2"}}})
	register(t, s, store.RegisterParams{Worker: store.Worker{ID: "b", Queues: []string{"q2"}}})
	for q, want := range map[string][]string{"q1": {"a"}, "q2": {"a", "b"}, "q3": {}, "": {"a", "b"}} {
		if got := workerIDs(listWorkers(t, s, store.WorkerListParams{Queue: q})); !reflect.DeepEqual(got, want) {
			t.Errorf("workers of queue %q = %v, want %v", q, got, want)
		}
	}
}

func testWorkerMergeQueues(t *testing.T, s store.Store) {
	http := func(q string) store.RegisterParams {
		return store.RegisterParams{MergeQueues: true, Worker: store.Worker{ID: "h", Mode: store.WorkerModeHTTP, Queues: []string{q}}}
	}
	register(t, s, http("q2"))
	register(t, s, http("q1"))
	register(t, s, http("q2"))
	if got := listWorkers(t, s, store.WorkerListParams{})[0].Queues; !reflect.DeepEqual(got, []string{"q1", "q2"}) {
		t.Errorf("merged queues = %v, want [q1 q2]", got)
	}
	register(t, s, store.RegisterParams{Worker: store.Worker{ID: "h", Queues: []string{"q3"}}})
	if got := listWorkers(t, s, store.WorkerListParams{})[0].Queues; !reflect.DeepEqual(got, []string{"q3"}) {
		t.Errorf("without MergeQueues the queues are replaced: got %v, want [q3]", got)
	}
}

func testWorkerDeregister(t *testing.T, s store.Store) {
	register(t, s, store.RegisterParams{Worker: store.Worker{ID: "a", Queues: []string{"q"}}})
	register(t, s, store.RegisterParams{Worker: store.Worker{ID: "b", Queues: []string{"q"}}})
	for range 2 { // twice: deregistering a missing worker is no error
		if err := s.DeregisterWorker(ctx(t), "a"); err != nil {
			t.Fatalf("DeregisterWorker: %v", err)
		}
	}
	if got := workerIDs(listWorkers(t, s, store.WorkerListParams{})); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("after deregistering a: %v, want [b]", got)
	}
}

// testWorkerExpiry: a worker not renewed drops out of the list once it was last seen
// longer ago than LiveWithin (the store's clock decides).
func testWorkerExpiry(t *testing.T, s store.Store) {
	register(t, s, store.RegisterParams{Worker: store.Worker{ID: "old", Queues: []string{"q"}}})
	live := 300 * time.Millisecond
	if got := workerIDs(listWorkers(t, s, store.WorkerListParams{LiveWithin: time.Minute})); len(got) != 1 {
		t.Fatalf("a fresh worker must be live: %v", got)
	}
	deadline := time.Now().Add(waitTimeout)
	for len(listWorkers(t, s, store.WorkerListParams{LiveWithin: live})) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a worker unseen for %s is still listed as live within %s", waitTimeout, live)
		}
		time.Sleep(50 * time.Millisecond)
	}
	register(t, s, store.RegisterParams{Worker: store.Worker{ID: "new", Queues: []string{"q"}}})
	if got := workerIDs(listWorkers(t, s, store.WorkerListParams{LiveWithin: live})); !reflect.DeepEqual(got, []string{"new"}) {
		t.Errorf("live within %s: %v, want [new]", live, got)
	}
	if got := workerIDs(listWorkers(t, s, store.WorkerListParams{})); !reflect.DeepEqual(got, []string{"new", "old"}) {
		t.Errorf("live within the default %s: %v, want [new old]", store.DefaultWorkerExpiry, got)
	}
}

func testWorkerInvalid(t *testing.T, s store.Store) {
	for name, w := range map[string]store.Worker{
		"no id":          {Queues: []string{"q"}},
		"bad queue":      {ID: "w", Queues: []string{""}},
		"negative count": {ID: "w", Running: -1},
	} {
		if err := s.RegisterWorker(ctx(t), store.RegisterParams{Worker: w}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: RegisterWorker error = %v, want ErrInvalid", name, err)
		}
	}
	if got := listWorkers(t, s, store.WorkerListParams{}); len(got) != 0 {
		t.Errorf("invalid registrations wrote rows: %v", workerIDs(got))
	}
}
