package rota_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// testClient is one client under test; pool is nil for the memory client.
type testClient struct {
	*rota.Client
	pool *pgxpool.Pool
}

// eachClient runs fn against a fresh memory client and a fresh PostgreSQL client (own
// database), as parallel subtests.
func eachClient(t *testing.T, fn func(t *testing.T, c testClient)) {
	t.Helper()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		c := rota.NewMemoryClient()
		t.Cleanup(c.Close)
		fn(t, testClient{Client: c})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		c := rota.NewPostgresClient(pool)
		t.Cleanup(c.Close)
		fn(t, testClient{Client: c, pool: pool})
	})
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// assertNoTasks fails t unless the store holds no task at all.
func assertNoTasks(t *testing.T, ctx context.Context, c testClient) {
	t.Helper()
	tasks, _, err := c.List(ctx, rota.ListParams{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(tasks) != 0 {
		t.Fatalf("List returned %d tasks, want none: the first is %s %s", len(tasks), tasks[0].Kind, tasks[0].ID)
	}
}

func TestEnqueueDefaults(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		before := time.Now().Add(-time.Second)
		task, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "email.send"})
		if err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		if task.ID == uuid.Nil || task.ID.Version() != 7 {
			t.Errorf("ID = %s, want a v7 uuid", task.ID)
		}
		if task.Kind != "email.send" || task.Queue != rota.DefaultQueue || task.Status != rota.StatusPending {
			t.Errorf("kind/queue/status = %q/%q/%q, want email.send/default/PENDING", task.Kind, task.Queue, task.Status)
		}
		if task.MaxAttempts != rota.DefaultMaxAttempts || task.AttemptCount != 0 || task.Priority != 0 || task.TimeoutSeconds != 0 {
			t.Errorf("max_attempts/attempt_count/priority/timeout = %d/%d/%d/%d, want %d/0/0/0",
				task.MaxAttempts, task.AttemptCount, task.Priority, task.TimeoutSeconds, rota.DefaultMaxAttempts)
		}
		if string(task.Payload) != "{}" {
			t.Errorf("Payload = %s, want {}", task.Payload)
		}
		if task.ScheduledFor.Before(before) || task.ScheduledFor.After(time.Now().Add(time.Second)) {
			t.Errorf("ScheduledFor = %s, want about now", task.ScheduledFor)
		}

		got, err := c.Get(ctx, task.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if got.ID != task.ID || got.Status != rota.StatusPending {
			t.Errorf("Get = %s %s, want %s PENDING", got.ID, got.Status, task.ID)
		}
	})
}

func TestEnqueueFields(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		at := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
		task, err := c.Enqueue(ctx, rota.EnqueueParams{
			Kind:           "report.build",
			Queue:          "reports",
			Payload:        map[string]any{"id": 7},
			ScheduledFor:   at,
			MaxAttempts:    3,
			Priority:       5,
			IdempotencyKey: "report-7",
			Timeout:        90 * time.Second,
		})
		if err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		if task.Queue != "reports" || task.MaxAttempts != 3 || task.Priority != 5 ||
			task.IdempotencyKey != "report-7" || task.TimeoutSeconds != 90 {
			t.Errorf("task = %+v, want queue reports, max_attempts 3, priority 5, key report-7, timeout 90", task)
		}
		if !task.ScheduledFor.Equal(at) {
			t.Errorf("ScheduledFor = %s, want %s", task.ScheduledFor, at)
		}
		assertJSON(t, task.Payload, `{"id":7}`)

		delayed, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "later", Delay: time.Hour})
		if err != nil {
			t.Fatalf("Enqueue with Delay: %v", err)
		}
		// The store adds the delay to the now() it writes created_at with (DESIGN.md
		// section 9): exactly an hour, which this process's clock could not give.
		if d := delayed.ScheduledFor.Sub(delayed.CreatedAt); d != time.Hour {
			t.Errorf("ScheduledFor = %s, %s after CreatedAt, want exactly an hour", delayed.ScheduledFor, d)
		}
	})
}

func TestEnqueuePayloadForms(t *testing.T) {
	t.Parallel()
	type args struct {
		To    string `json:"to"`
		Count int    `json:"count"`
	}
	cases := []struct {
		name    string
		payload any
		want    string
	}{
		{"nil", nil, `{}`},
		{"struct", args{To: "a@example.com", Count: 2}, `{"to":"a@example.com","count":2}`},
		{"pointer", &args{To: "b"}, `{"to":"b","count":0}`},
		{"raw message", json.RawMessage(`{"x": [1, 2]}`), `{"x":[1,2]}`},
		{"bytes", []byte(`[1,2,3]`), `[1,2,3]`},
		{"empty raw message", json.RawMessage{}, `{}`},
		{"string", "hello", `"hello"`},
		{"number", 42, `42`},
	}
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		for _, tc := range cases {
			task, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "echo", Payload: tc.payload})
			if err != nil {
				t.Errorf("%s: Enqueue: %v", tc.name, err)
				continue
			}
			assertJSON(t, task.Payload, tc.want)
		}
	})
}

func TestEnqueueCopiesPayloadBytes(t *testing.T) {
	t.Parallel()
	c := rota.NewMemoryClient()
	defer c.Close()
	ctx := testContext(t)
	buf := []byte(`{"n":1}`)
	task, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "echo", Payload: buf})
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	copy(buf, `{"n":2}`)
	got, err := c.Get(ctx, task.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	assertJSON(t, got.Payload, `{"n":1}`)
}

func assertJSON(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("payload %s is not JSON: %v", got, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("payload = %s, want %s", got, want)
	}
}

// invalidParams are params that each break one rule; every Enqueue variant must reject
// them with ErrInvalid and write nothing.
var invalidParams = []struct {
	name   string
	params rota.EnqueueParams
	msg    string // a fragment of the error message
}{
	{"empty kind", rota.EnqueueParams{}, "kind is required"},
	{"malformed kind", rota.EnqueueParams{Kind: "bad kind!"}, "kind"},
	{"kind starting with a digit", rota.EnqueueParams{Kind: "1kind"}, "kind"},
	{"kind too long", rota.EnqueueParams{Kind: "k" + strings.Repeat("x", 200)}, "kind"},
	{"malformed queue", rota.EnqueueParams{Kind: "ok", Queue: "no/slash"}, "queue"},
	{"raw payload not JSON", rota.EnqueueParams{Kind: "ok", Payload: json.RawMessage(`{"a":`)}, "payload"},
	{"bytes payload not JSON", rota.EnqueueParams{Kind: "ok", Payload: []byte("hello")}, "payload"},
	{"payload not encodable", rota.EnqueueParams{Kind: "ok", Payload: make(chan int)}, "payload"},
	{"payload too large", rota.EnqueueParams{Kind: "ok", Payload: map[string]string{"s": strings.Repeat("x", rota.MaxPayloadBytes)}}, "payload"},
	{"max attempts negative", rota.EnqueueParams{Kind: "ok", MaxAttempts: -1}, "max_attempts"},
	{"max attempts too large", rota.EnqueueParams{Kind: "ok", MaxAttempts: rota.MaxMaxAttempts + 1}, "max_attempts"},
	{"negative delay", rota.EnqueueParams{Kind: "ok", Delay: -time.Second}, "delay"},
	{"delay and scheduled_for", rota.EnqueueParams{Kind: "ok", Delay: time.Minute, ScheduledFor: time.Now().Add(time.Hour)}, "not both"},
	{"negative timeout", rota.EnqueueParams{Kind: "ok", Timeout: -time.Second}, "timeout"},
	{"fractional timeout", rota.EnqueueParams{Kind: "ok", Timeout: 1500 * time.Millisecond}, "timeout"},
	{"timeout too long", rota.EnqueueParams{Kind: "ok", Timeout: 8 * 24 * time.Hour}, "timeout"},
	{"priority too high", rota.EnqueueParams{Kind: "ok", Priority: rota.MaxPriority + 1}, "priority"},
	{"idempotency key too long", rota.EnqueueParams{Kind: "ok", IdempotencyKey: strings.Repeat("k", 600)}, "idempotency_key"},
}

func TestEnqueueInvalid(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		for _, tc := range invalidParams {
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, rota.ErrInvalid) {
					t.Errorf("%s %s: err = %v, want ErrInvalid", what, tc.name, err)
				} else if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("%s %s: err = %q, want it to mention %q", what, tc.name, err, tc.msg)
				}
			}
			task, err := c.Enqueue(ctx, tc.params)
			check("Enqueue", err)
			if task != nil {
				t.Errorf("Enqueue %s returned a task with its error", tc.name)
			}
			res, err := c.EnqueueWithResult(ctx, tc.params)
			check("EnqueueWithResult", err)
			if res.Task != nil {
				t.Errorf("EnqueueWithResult %s returned a task with its error", tc.name)
			}
			// One bad task in a batch rejects the whole batch.
			tasks, err := c.EnqueueMany(ctx, []rota.EnqueueParams{{Kind: "good"}, tc.params, {Kind: "good"}})
			check("EnqueueMany", err)
			if err != nil && !strings.Contains(err.Error(), "task 1") {
				t.Errorf("EnqueueMany %s: err = %q, want it to name task 1", tc.name, err)
			}
			if tasks != nil {
				t.Errorf("EnqueueMany %s returned tasks with its error", tc.name)
			}
			if c.pool != nil {
				tx, err := c.pool.Begin(ctx)
				if err != nil {
					t.Fatalf("Begin: %v", err)
				}
				_, err = c.EnqueueTx(ctx, tx, rota.EnqueueParams{Kind: "good"}, tc.params)
				check("EnqueueTx", err)
				// Even committing the transaction writes nothing.
				if err := tx.Commit(ctx); err != nil {
					t.Fatalf("Commit: %v", err)
				}
			}
			assertNoTasks(t, ctx, c)
		}
	})
}

func TestEnqueueIdempotent(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		p := rota.EnqueueParams{Kind: "charge", Payload: map[string]int{"cents": 100}, IdempotencyKey: "order-42"}
		first, err := c.EnqueueWithResult(ctx, p)
		if err != nil {
			t.Fatalf("first Enqueue: %v", err)
		}
		if first.Existing {
			t.Errorf("first enqueue reports Existing")
		}
		// A second enqueue with the same key returns the first task, even with other params.
		p.Payload = map[string]int{"cents": 999}
		second, err := c.EnqueueWithResult(ctx, p)
		if err != nil {
			t.Fatalf("second Enqueue: %v", err)
		}
		if !second.Existing || second.Task.ID != first.Task.ID {
			t.Errorf("second enqueue = %s Existing=%v, want %s Existing=true", second.Task.ID, second.Existing, first.Task.ID)
		}
		assertJSON(t, second.Task.Payload, `{"cents":100}`)
		plain, err := c.Enqueue(ctx, p)
		if err != nil || plain.ID != first.Task.ID {
			t.Errorf("Enqueue = %v, %v; want task %s", plain, err, first.Task.ID)
		}
		// In a batch too.
		tasks, err := c.EnqueueMany(ctx, []rota.EnqueueParams{{Kind: "other"}, p})
		if err != nil {
			t.Fatalf("EnqueueMany: %v", err)
		}
		if len(tasks) != 2 || tasks[1].ID != first.Task.ID || tasks[0].ID == first.Task.ID {
			t.Errorf("EnqueueMany returned %d tasks, want a new one then %s", len(tasks), first.Task.ID)
		}
		all, _, err := c.List(ctx, rota.ListParams{})
		if err != nil || len(all) != 2 {
			t.Fatalf("List = %d tasks, %v; want 2", len(all), err)
		}

		// Canceling the task frees its key.
		if _, err := c.Cancel(ctx, first.Task.ID); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		third, err := c.EnqueueWithResult(ctx, p)
		if err != nil {
			t.Fatalf("third Enqueue: %v", err)
		}
		if third.Existing || third.Task.ID == first.Task.ID {
			t.Errorf("enqueue after cancel = %s Existing=%v, want a new task", third.Task.ID, third.Existing)
		}
	})
}

func TestEnqueueMany(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		empty, err := c.EnqueueMany(ctx, nil)
		if err != nil || len(empty) != 0 {
			t.Fatalf("EnqueueMany(nil) = %v, %v; want no tasks, no error", empty, err)
		}
		params := []rota.EnqueueParams{
			{Kind: "a", Payload: map[string]int{"n": 0}},
			{Kind: "b", Queue: "q2", Payload: map[string]int{"n": 1}},
			{Kind: "c", Delay: time.Minute},
		}
		tasks, err := c.EnqueueMany(ctx, params)
		if err != nil {
			t.Fatalf("EnqueueMany: %v", err)
		}
		if len(tasks) != len(params) {
			t.Fatalf("EnqueueMany returned %d tasks, want %d", len(tasks), len(params))
		}
		for i, task := range tasks {
			if task.Kind != params[i].Kind {
				t.Errorf("task %d kind = %q, want %q (results in order)", i, task.Kind, params[i].Kind)
			}
			if _, err := c.Get(ctx, task.ID); err != nil {
				t.Errorf("Get task %d: %v", i, err)
			}
		}
		if tasks[1].Queue != "q2" {
			t.Errorf("task 1 queue = %q, want q2", tasks[1].Queue)
		}
	})
}

func TestEnqueueTx(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	c := rota.NewPostgresClient(pool)
	defer c.Close()
	ctx := testContext(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE public.orders (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}

	// Rolled back: neither the caller's row nor the tasks exist.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO public.orders VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	rolledBack, err := c.EnqueueTx(ctx, tx, rota.EnqueueParams{Kind: "order.ship", Payload: map[string]int{"order": 1}},
		rota.EnqueueParams{Kind: "order.mail"})
	if err != nil {
		t.Fatalf("EnqueueTx: %v", err)
	}
	if len(rolledBack) != 2 {
		t.Fatalf("EnqueueTx returned %d tasks, want 2", len(rolledBack))
	}
	// Not visible outside the transaction before it commits.
	if _, err := c.Get(ctx, rolledBack[0].ID); !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("Get before commit: err = %v, want ErrNotFound", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for _, task := range rolledBack {
		if _, err := c.Get(ctx, task.ID); !errors.Is(err, rota.ErrNotFound) {
			t.Errorf("Get after rollback: err = %v, want ErrNotFound", err)
		}
	}
	assertNoTasks(t, ctx, testClient{Client: c})

	// Committed: both exist.
	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO public.orders VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	committed, err := c.EnqueueTx(ctx, tx, rota.EnqueueParams{Kind: "order.ship", Payload: map[string]int{"order": 2}})
	if err != nil {
		t.Fatalf("EnqueueTx: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, committed[0].ID)
	if err != nil {
		t.Fatalf("Get after commit: %v", err)
	}
	if got.Status != rota.StatusPending || got.Kind != "order.ship" {
		t.Errorf("task = %s %s, want order.ship PENDING", got.Kind, got.Status)
	}
	assertJSON(t, got.Payload, `{"order":2}`)
	tasks, _, err := c.List(ctx, rota.ListParams{})
	if err != nil || len(tasks) != 1 {
		t.Errorf("List = %d tasks, %v; want exactly the committed one", len(tasks), err)
	}

	// Degenerate calls.
	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := c.EnqueueTx(ctx, nil); !errors.Is(err, rota.ErrInvalid) {
		t.Errorf("EnqueueTx(nil tx): err = %v, want ErrInvalid", err)
	}
	if none, err := c.EnqueueTx(ctx, tx); err != nil || len(none) != 0 {
		t.Errorf("EnqueueTx with no params = %v, %v; want no tasks, no error", none, err)
	}
}

func TestEnqueueTxMemory(t *testing.T) {
	t.Parallel()
	c := rota.NewMemoryClient()
	defer c.Close()
	ctx := testContext(t)
	_, err := c.EnqueueTx(ctx, nil, rota.EnqueueParams{Kind: "x"})
	if !errors.Is(err, rota.ErrTxNotSupported) {
		t.Fatalf("EnqueueTx on a memory client: err = %v, want ErrTxNotSupported", err)
	}
	assertNoTasks(t, ctx, testClient{Client: c})
}

func TestGetNotFound(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		id := uuid.Must(uuid.NewV7())
		if _, err := c.Get(ctx, id); !errors.Is(err, rota.ErrNotFound) {
			t.Errorf("Get: err = %v, want ErrNotFound", err)
		}
		if _, err := c.Cancel(ctx, id); !errors.Is(err, rota.ErrNotFound) {
			t.Errorf("Cancel: err = %v, want ErrNotFound", err)
		}
		if _, err := c.Replay(ctx, id); !errors.Is(err, rota.ErrNotFound) {
			t.Errorf("Replay: err = %v, want ErrNotFound", err)
		}
	})
}

func TestCancelReplay(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		task, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "job"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Replay(ctx, task.ID); !errors.Is(err, rota.ErrIllegalTransition) {
			t.Errorf("Replay of a pending task: err = %v, want ErrIllegalTransition", err)
		}
		canceled, err := c.Cancel(ctx, task.ID)
		if err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		if canceled.Status != rota.StatusCanceled || !canceled.Status.Terminal() {
			t.Errorf("status after Cancel = %s, want CANCELED", canceled.Status)
		}
		// Canceling again is harmless.
		if again, err := c.Cancel(ctx, task.ID); err != nil || again.Status != rota.StatusCanceled {
			t.Errorf("second Cancel = %v, %v; want the canceled task", again, err)
		}
		replayed, err := c.Replay(ctx, task.ID)
		if err != nil {
			t.Fatalf("Replay: %v", err)
		}
		if replayed.Status != rota.StatusPending || replayed.AttemptCount != 0 {
			t.Errorf("after Replay: status %s, attempts %d; want PENDING, 0", replayed.Status, replayed.AttemptCount)
		}
		attempts, err := c.Attempts(ctx, task.ID)
		if err != nil {
			t.Fatalf("Attempts: %v", err)
		}
		if n := len(attempts); n == 0 || attempts[n-1].Outcome != rota.OutcomeReplayed {
			t.Errorf("Attempts = %+v, want the last to be a REPLAYED event", attempts)
		}
	})
}

func TestListAndStats(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		var ids []uuid.UUID
		for i, q := range []string{"default", "default", "mail"} {
			task, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "k" + string(rune('a'+i)), Queue: q})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, task.ID)
		}
		if _, err := c.Cancel(ctx, ids[0]); err != nil {
			t.Fatal(err)
		}

		pending, _, err := c.List(ctx, rota.ListParams{Statuses: []rota.Status{rota.StatusPending}})
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) != 2 || pending[0].ID != ids[2] || pending[1].ID != ids[1] {
			t.Errorf("List(PENDING) returned %d tasks, want ids[2], ids[1] (newest first)", len(pending))
		}
		mail, _, err := c.List(ctx, rota.ListParams{Queue: "mail"})
		if err != nil || len(mail) != 1 || mail[0].ID != ids[2] {
			t.Errorf("List(queue mail) = %d tasks, %v; want ids[2]", len(mail), err)
		}
		// Paging visits every task once.
		page1, cursor, err := c.List(ctx, rota.ListParams{Limit: 2})
		if err != nil || len(page1) != 2 || cursor == "" {
			t.Fatalf("List page 1 = %d tasks, cursor %q, %v; want 2 and a cursor", len(page1), cursor, err)
		}
		page2, _, err := c.List(ctx, rota.ListParams{Limit: 2, Cursor: cursor})
		if err != nil || len(page2) != 1 || page2[0].ID != ids[0] {
			t.Errorf("List page 2 = %d tasks, %v; want ids[0]", len(page2), err)
		}
		if _, _, err := c.List(ctx, rota.ListParams{Limit: -1}); !errors.Is(err, rota.ErrInvalid) {
			t.Errorf("List(limit -1): err = %v, want ErrInvalid", err)
		}

		stats, err := c.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]map[rota.Status]int64{}
		for _, s := range stats {
			counts[s.Queue] = s.Counts
		}
		if counts["default"][rota.StatusPending] != 1 || counts["default"][rota.StatusCanceled] != 1 || counts["mail"][rota.StatusPending] != 1 {
			t.Errorf("Stats = %+v, want default 1 pending 1 canceled, mail 1 pending", counts)
		}
	})
}
