package storetest

import (
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// ServeQueues and RequeueUnserved: a queue is in SQS mode while an enqueuer serves it;
// the ENQUEUED tasks of a queue nobody serves go back to PENDING, where poll workers
// claim them.
var queueModeTests = []testCase{
	{"UnservedEnqueuedBackToPending", testRequeueUnserved},
	{"ServedQueueUntouched", testRequeueServed},
	{"WithdrawnOrLapsedServiceEnds", testRequeueWithdrawn},
	{"LimitRespected", testRequeueLimit},
	{"WakesPollWorkers", testRequeueWakes},
	{"OldMessageDeliversATaskBackInPending", testClaimByIDTakesPending},
	{"InvalidParams", testQueueModeInvalid},
}

// testClaimByIDTakesPending: a message sent before a retry brought its task back to
// PENDING still delivers it once due (claim by id from ENQUEUED), and marks it an
// SQS-mode task; a task not yet due is not taken.
func testClaimByIDTakesPending(t *testing.T, s store.Store) {
	task := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "old-msg", Kind: "k"}))
	first := claimID(t, s, task, store.StatusEnqueued, 30*time.Second)
	retried := recordOK(t, s, outcome(first, store.Retry, "again"), store.StatusPending)
	second := claimID(t, s, retried, store.StatusEnqueued, 30*time.Second)
	if second.AttemptCount != 2 {
		t.Fatalf("attempt_count %d", second.AttemptCount)
	}
	nearNowPtr(t, "EnqueuedAt of a task claimed through SQS", second.EnqueuedAt)

	later := createOne(t, s, store.CreateParams{Queue: "old-msg", Kind: "k", ScheduledFor: time.Now().Add(time.Hour)})
	p := claimParams("old-msg", 1)
	p.From = store.StatusEnqueued
	p.TaskIDs = ids([]*store.Task{later})
	if got := claim(t, s, p); len(got) != 0 {
		t.Fatalf("claimed a PENDING task due in an hour by id: %v", ids(got))
	}
}

func serve(t *testing.T, s store.Store, id string, d time.Duration, queues ...string) {
	t.Helper()
	if err := s.ServeQueues(ctx(t), store.ServeParams{EnqueuerID: id, Queues: queues, For: d}); err != nil {
		t.Fatalf("ServeQueues(%s, %v, %s): %v", id, queues, d, err)
	}
}

func requeue(t *testing.T, s store.Store, limit int) int {
	t.Helper()
	n, err := s.RequeueUnserved(ctx(t), limit)
	if err != nil {
		t.Fatalf("RequeueUnserved: %v", err)
	}
	return n
}

func testRequeueUnserved(t *testing.T, s store.Store) {
	sent := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "moved", Kind: "k"}))
	running := claimID(t, s, sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "moved", Kind: "k"})),
		store.StatusEnqueued, 30*time.Second)
	if n := requeue(t, s, 100); n != 1 {
		t.Fatalf("requeued %d, want the one ENQUEUED task", n)
	}
	got := get(t, s, sent.ID)
	if got.Status != store.StatusPending || got.EnqueuedAt != nil || got.AttemptCount != 0 {
		t.Fatalf("unserved ENQUEUED task: status %s enqueued_at %v attempts %d, want PENDING unsent", got.Status, got.EnqueuedAt, got.AttemptCount)
	}
	if a := attempts(t, s, sent.ID); len(a) != 0 {
		t.Fatalf("requeue wrote attempts: %+v", a)
	}
	if r := get(t, s, running.ID); r.Status != store.StatusProcessing || r.LeaseToken != running.LeaseToken {
		t.Fatalf("a running task was touched: %s", r.Status)
	}
	// A poll worker claims it now.
	if c := claim(t, s, claimParams("moved", 10)); len(c) != 1 || c[0].ID != sent.ID {
		t.Fatalf("poll claim after the requeue got %v, want %s", ids(c), sent.ID)
	}
	if n := requeue(t, s, 100); n != 0 {
		t.Fatalf("second requeue moved %d", n)
	}
}

func testRequeueServed(t *testing.T, s store.Store) {
	served := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "sqs", Kind: "k"}))
	orphan := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "orphan", Kind: "k"}))
	serve(t, s, "enqueuer-1", time.Minute, "sqs")
	if n := requeue(t, s, 100); n != 1 {
		t.Fatalf("requeued %d, want only the unserved queue's task", n)
	}
	if got := get(t, s, served.ID); got.Status != store.StatusEnqueued {
		t.Fatalf("a served queue's task is %s, want ENQUEUED", got.Status)
	}
	if got := get(t, s, orphan.ID); got.Status != store.StatusPending {
		t.Fatalf("an unserved queue's task is %s, want PENDING", got.Status)
	}
}

func testRequeueWithdrawn(t *testing.T, s store.Store) {
	a := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "wa", Kind: "k"}))
	b := sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "wb", Kind: "k"}))
	serve(t, s, "e1", time.Minute, "wa", "wb")
	serve(t, s, "e2", time.Minute, "wa")
	serve(t, s, "e1", 0, "wa", "wb") // e1 stops; e2 still serves wa
	if n := requeue(t, s, 100); n != 1 {
		t.Fatalf("requeued %d, want wb's task", n)
	}
	if got := get(t, s, a.ID); got.Status != store.StatusEnqueued {
		t.Fatalf("wa, still served by e2: %s", got.Status)
	}
	if got := get(t, s, b.ID); got.Status != store.StatusPending {
		t.Fatalf("wb, withdrawn: %s", got.Status)
	}
	// A service that lapses ends too.
	serve(t, s, "e2", time.Millisecond, "wa")
	waitFor(t, "a lapsed service to requeue", func() bool { return requeue(t, s, 100) == 1 })
	if got := get(t, s, a.ID); got.Status != store.StatusPending {
		t.Fatalf("wa after its service lapsed: %s", got.Status)
	}
}

func testRequeueLimit(t *testing.T, s store.Store) {
	for range 5 {
		createOne(t, s, store.CreateParams{Queue: "many", Kind: "k"})
	}
	enqueueAll(t, s, enqueueParams("many"))
	if n := requeue(t, s, 2); n != 2 {
		t.Fatalf("limit 2 requeued %d", n)
	}
	if n := requeue(t, s, 10); n != 3 {
		t.Fatalf("the rest: %d, want 3", n)
	}
}

func testRequeueWakes(t *testing.T, s store.Store) {
	sendOnce(t, s, createOne(t, s, store.CreateParams{Queue: "wake", Kind: "k"}))
	ch, err := s.WaitForTasks(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	requeue(t, s, 10)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case q := <-ch:
			if q == "wake" {
				return
			}
		case <-deadline:
			t.Fatal("no wake-up for the requeued queue")
		}
	}
}

func testQueueModeInvalid(t *testing.T, s store.Store) {
	for name, p := range map[string]store.ServeParams{
		"no enqueuer id": {Queues: []string{"q"}, For: time.Minute},
		"negative For":   {EnqueuerID: "e", Queues: []string{"q"}, For: -time.Second},
		"bad queue name": {EnqueuerID: "e", Queues: []string{""}, For: time.Minute},
	} {
		wantErr(t, s.ServeQueues(ctx(t), p), store.ErrInvalid, "ServeQueues with "+name)
	}
	_, err := s.RequeueUnserved(ctx(t), 0)
	wantErr(t, err, store.ErrInvalid, "RequeueUnserved with limit 0")
}
