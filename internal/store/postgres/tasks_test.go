package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

func TestCreateTasksDefaultsAndGet(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	before := dbNow(t, pool)
	at := before.Add(time.Hour).Truncate(time.Microsecond)
	res, err := st.CreateTasks(ctx, []store.CreateParams{
		{Kind: "noop"},
		{Kind: "email", Queue: "mail", Payload: json.RawMessage(`{"to": "a@b.c"}`), Priority: 7,
			ScheduledFor: at, MaxAttempts: 3, IdempotencyKey: "k1", TimeoutSeconds: 9},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Existing || res[1].Existing {
		t.Fatalf("results = %+v", res)
	}
	a, b := res[0].Task, res[1].Task
	if a.Queue != store.DefaultQueue || string(a.Payload) != `{}` || a.MaxAttempts != store.DefaultMaxAttempts ||
		a.Status != store.StatusPending || a.AttemptCount != 0 || a.IdempotencyKey != "" || a.WorkerID != "" ||
		a.LeaseToken != uuid.Nil || a.LeaseExpiresAt != nil || a.CompletedAt != nil {
		t.Errorf("defaults: %+v", a)
	}
	if a.ScheduledFor.Before(before) || a.CreatedAt.Before(before) || a.ID.Version() != 7 {
		t.Errorf("scheduled_for %v / created_at %v before %v, or id %s not v7", a.ScheduledFor, a.CreatedAt, before, a.ID)
	}
	if b.Queue != "mail" || b.Kind != "email" || b.Priority != 7 || !b.ScheduledFor.Equal(at) || b.MaxAttempts != 3 ||
		b.IdempotencyKey != "k1" || b.TimeoutSeconds != 9 {
		t.Errorf("explicit fields: %+v", b)
	}
	var payload map[string]string
	if err := json.Unmarshal(b.Payload, &payload); err != nil || payload["to"] != "a@b.c" {
		t.Errorf("payload %s", b.Payload)
	}
	got := mustGet(t, st, b.ID)
	if got.ID != b.ID || !got.ScheduledFor.Equal(b.ScheduledFor) || got.IdempotencyKey != "k1" || got.ScheduledFor.Location() != time.UTC {
		t.Errorf("GetTask = %+v, want %+v", got, b)
	}

	explicit := store.NewID()
	if tasks := mustCreate(t, st, store.CreateParams{ID: explicit, Kind: "noop"}); tasks[0].ID != explicit {
		t.Errorf("explicit id %s became %s", explicit, tasks[0].ID)
	}
	if _, err := st.GetTask(ctx, store.NewID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTask(unknown) = %v, want ErrNotFound", err)
	}
	if res, err := st.CreateTasks(ctx, nil); err != nil || len(res) != 0 {
		t.Errorf("CreateTasks(nil) = %v, %v", res, err)
	}
}

func countTasks(t *testing.T, st interface {
	ListTasks(context.Context, store.ListParams) ([]*store.Task, string, error)
}) int {
	t.Helper()
	tasks, _, err := st.ListTasks(context.Background(), store.ListParams{Limit: store.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

func TestCreateTasksAllOrNothing(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()
	existing := mustCreate(t, st, store.CreateParams{Kind: "noop"})[0]

	// Invalid params: nothing written, ErrInvalid naming the task.
	_, err := st.CreateTasks(ctx, []store.CreateParams{{Kind: "ok"}, {Kind: "bad kind!"}})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "task 1") {
		t.Errorf("invalid batch: %v, want ErrInvalid about task 1", err)
	}
	for _, p := range []store.CreateParams{
		{Kind: "x", Payload: json.RawMessage(`{not json`)},
		{Kind: "x", MaxAttempts: -1},
		{Kind: "x", Priority: store.MaxPriority + 1},
		{Kind: "x", Queue: "white space"},
	} {
		if _, err := st.CreateTasks(ctx, []store.CreateParams{p}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateTasks(%+v) = %v, want ErrInvalid", p, err)
		}
	}
	// A database error half way (an id that exists) rolls the whole batch back.
	_, err = st.CreateTasks(ctx, []store.CreateParams{{Kind: "a"}, {ID: existing.ID, Kind: "b"}, {Kind: "c"}})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("batch with a taken id: %v, want ErrConflict", err)
	}
	// Also with idempotency keys in the batch.
	_, err = st.CreateTasks(ctx, []store.CreateParams{{Kind: "a", IdempotencyKey: "x"}, {Kind: "a", IdempotencyKey: "y"}, {ID: existing.ID, Kind: "b"}})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("keyed batch with a taken id: %v, want ErrConflict", err)
	}
	if n := countTasks(t, st); n != 1 {
		t.Errorf("%d tasks after failed creates, want 1", n)
	}
}

func TestCreateTasksIdempotency(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()

	first := mustCreate(t, st, store.CreateParams{Kind: "noop", IdempotencyKey: "k"})[0]
	res, err := st.CreateTasks(ctx, []store.CreateParams{
		{Kind: "other", IdempotencyKey: "k"}, // names the live task
		{Kind: "noop", IdempotencyKey: "n"},  // new
		{Kind: "noop"},                       // new, no key
		{Kind: "dup", IdempotencyKey: "n"},   // repeats a key of this batch: resolves to the first
		{Kind: "noop", IdempotencyKey: "k"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Existing || res[0].Task.ID != first.ID || res[0].Task.Kind != "noop" {
		t.Errorf("res[0] = %+v, want the existing task %s", res[0], first.ID)
	}
	if res[1].Existing || res[1].Task.IdempotencyKey != "n" || res[2].Existing {
		t.Errorf("res[1], res[2] = %+v, %+v: want new tasks", res[1], res[2])
	}
	if !res[3].Existing || res[3].Task.ID != res[1].Task.ID || res[3].Task == res[1].Task {
		t.Errorf("res[3] = %+v, want a copy of res[1] (%s) marked existing", res[3], res[1].Task.ID)
	}
	if !res[4].Existing || res[4].Task.ID != first.ID {
		t.Errorf("res[4] = %+v, want the existing task", res[4])
	}
	if n := countTasks(t, st); n != 3 {
		t.Errorf("%d tasks, want 3", n)
	}
	// The idempotent hit changed nothing visible.
	if got := mustGet(t, st, first.ID); !got.UpdatedAt.Equal(first.UpdatedAt) || got.Status != store.StatusPending {
		t.Errorf("existing task changed: %+v -> %+v", first, got)
	}

	// A succeeded task still holds its key; a canceled one releases it.
	claimed := mustClaim(t, st, store.ClaimParams{TaskIDs: []uuid.UUID{first.ID}})[0]
	if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: claimed.ID, LeaseToken: claimed.LeaseToken, Kind: store.Succeed}}); err != nil {
		t.Fatal(err)
	}
	if r := mustCreateResult(t, st, store.CreateParams{Kind: "noop", IdempotencyKey: "k"}); !r.Existing || r.Task.ID != first.ID {
		t.Errorf("key of a SUCCEEDED task: %+v, want the existing task", r)
	}
	if _, err := st.CancelTask(ctx, res[1].Task.ID); err != nil {
		t.Fatal(err)
	}
	if r := mustCreateResult(t, st, store.CreateParams{Kind: "noop", IdempotencyKey: "n"}); r.Existing || r.Task.ID == res[1].Task.ID {
		t.Errorf("key of a CANCELED task: %+v, want a new task", r)
	}
	// An explicit id repeated with its key is a retry of the same create.
	id := store.NewID()
	mustCreate(t, st, store.CreateParams{ID: id, Kind: "noop", IdempotencyKey: "retry"})
	if r := mustCreateResult(t, st, store.CreateParams{ID: id, Kind: "noop", IdempotencyKey: "retry"}); !r.Existing || r.Task.ID != id {
		t.Errorf("retried create: %+v, want existing %s", r, id)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.tasks WHERE idempotency_key = 'retry'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d tasks with key retry (%v), want 1", n, err)
	}
}

func mustCreateResult(t *testing.T, st store.Store, p store.CreateParams) store.CreateResult {
	t.Helper()
	res, err := st.CreateTasks(context.Background(), []store.CreateParams{p})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// TestCreateTasksIdempotencyRace: many creators race on the same keys (in batches that
// name them in different orders); exactly one task per key exists and everyone gets it.
func TestCreateTasksIdempotencyRace(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	const workers, keys = 12, 8
	ids := make([][keys]uuid.UUID, workers)
	fresh := make([]int, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			params := make([]store.CreateParams, keys)
			for k := range keys {
				key := (k + w) % keys // each worker starts at another key
				params[k] = store.CreateParams{Kind: "noop", IdempotencyKey: fmt.Sprintf("key-%d", key)}
			}
			res, err := st.CreateTasks(ctx, params)
			if err != nil {
				errs <- err
				return
			}
			for k, r := range res {
				ids[w][(k+w)%keys] = r.Task.ID
				if !r.Existing {
					fresh[w]++
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for w := range workers {
		total += fresh[w]
		if ids[w] != ids[0] {
			t.Errorf("worker %d got %v, worker 0 got %v", w, ids[w], ids[0])
		}
	}
	if total != keys {
		t.Errorf("%d creates reported a new task, want %d", total, keys)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.tasks`).Scan(&n); err != nil || n != keys {
		t.Errorf("%d tasks (%v), want %d", n, err, keys)
	}
}

func TestCreateTasksTx(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.CreateTasksTx(ctx, tx, []store.CreateParams{{Kind: "noop", IdempotencyKey: "tx"}})
	if err != nil {
		t.Fatal(err)
	}
	rolledBack := res[0].Task.ID
	// Inside the transaction the key is taken already.
	again, err := st.CreateTasksTx(ctx, tx, []store.CreateParams{{Kind: "noop", IdempotencyKey: "tx"}})
	if err != nil || !again[0].Existing || again[0].Task.ID != rolledBack {
		t.Errorf("second create in the tx: %+v, %v; want existing %s", again, err, rolledBack)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetTask(ctx, rolledBack); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("task of a rolled-back tx: %v, want ErrNotFound", err)
	}

	var committed uuid.UUID
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE rota_test_orders (id int)`); err != nil {
			return err
		}
		res, err := st.CreateTasksTx(ctx, tx, []store.CreateParams{{Kind: "noop", IdempotencyKey: "tx"}})
		if err != nil {
			return err
		}
		committed = res[0].Task.ID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, st, committed); got.IdempotencyKey != "tx" || committed == rolledBack {
		t.Errorf("committed task %+v", got)
	}
}

// TestCreateTasksWakeUps: CreateTasks sends the workers' wake-up itself, after its
// commit, once per queue with a due task, and the insert trigger stays silent for it
// (migration 0027); CreateTasksTx leaves the wake-up to the trigger, which sends it only
// when the caller commits. Tasks not due, and idempotent repeats, wake nobody.
func TestCreateTasksWakeUps(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `LISTEN rota_tasks`); err != nil {
		t.Fatal(err)
	}
	// heard collects the notifications that arrive within a short while.
	heard := func() []string {
		var got []string
		for {
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			n, err := conn.WaitForNotification(wctx)
			cancel()
			if err != nil {
				return got
			}
			got = append(got, n.Payload)
		}
	}

	mustCreate(t, st, store.CreateParams{Queue: "a", Kind: "k"}, store.CreateParams{Queue: "a", Kind: "k"},
		store.CreateParams{Queue: "b", Kind: "k", IdempotencyKey: "once"},
		store.CreateParams{Queue: "later", Kind: "k", Delay: time.Hour})
	if got := heard(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("CreateTasks woke %q, want one wake-up each for a and b", got)
	}
	mustCreate(t, st, store.CreateParams{Queue: "b", Kind: "k", IdempotencyKey: "once"})
	if got := heard(); len(got) != 0 {
		t.Errorf("an idempotent repeat woke %q", got)
	}

	// wakesOnCommit creates params in a caller's transaction: no wake-up before its
	// commit, one per queue of want at it.
	wakesOnCommit := func(what string, params []store.CreateParams, want ...string) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := st.CreateTasksTx(ctx, tx, params); err != nil {
			t.Fatal(err)
		}
		if got := heard(); len(got) != 0 {
			t.Errorf("%s woke %q before the caller committed", what, got)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := heard(); !slices.Equal(got, want) {
			t.Errorf("%s's commit woke %q, want %q", what, got, want)
		}
	}
	wakesOnCommit("CreateTasksTx", []store.CreateParams{{Queue: "tx", Kind: "k"}}, "tx")

	// The same for batches written by COPY (createcopy.go).
	copied := noops(postgres.CopyMinTasks(), store.CreateParams{Queue: "later", Kind: "k", ScheduledFor: time.Now().Add(time.Hour)})
	for i := range copied[:len(copied)-1] {
		copied[i].Queue = "c"
	}
	mustCreate(t, st, copied...)
	if got := heard(); !slices.Equal(got, []string{"c"}) {
		t.Errorf("a copied CreateTasks woke %q, want one wake-up for c", got)
	}
	wakesOnCommit("a copied CreateTasksTx", copied, "c")
}

// recordingTx is a transaction that keeps the text of every query it runs, and
// "COPY <table>" for a COPY.
type recordingTx struct {
	pgx.Tx
	queries []string
}

func (tx *recordingTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	tx.queries = append(tx.queries, sql)
	return tx.Tx.Query(ctx, sql, args...)
}

func (tx *recordingTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	tx.queries = append(tx.queries, "COPY "+table.Sanitize())
	return tx.Tx.CopyFrom(ctx, table, columns, src)
}

// noops is n-1 no-op tasks and last.
func noops(n int, last store.CreateParams) []store.CreateParams {
	ps := make([]store.CreateParams, n-1, n)
	for i := range ps {
		ps[i] = store.CreateParams{Kind: "noop"}
	}
	return append(ps, last)
}

// TestCreateTasksKeylessBatchIsACopy: a batch without idempotency keys or delays, of at
// least CopyMinTasks tasks, is written by one COPY (createcopy.go); a smaller one, or one
// with a delay, inserts without ON CONFLICT
// (an arbiter index makes every row a speculative insertion: a lock and a second WAL
// record per row); a batch with one key keeps the clause and still resolves that key to
// the existing task.
func TestCreateTasksKeylessBatchIsACopy(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	mustCreate(t, st, store.CreateParams{Kind: "noop", IdempotencyKey: "k"})
	const copied, inserted, upserted = "copy", "insert", "upsert"
	for _, tc := range []struct {
		name         string
		params       []store.CreateParams
		want         string
		wantExisting []bool
	}{
		{"keyless", noops(postgres.CopyMinTasks(), store.CreateParams{Kind: "noop", ScheduledFor: time.Now().Add(time.Hour)}), copied, nil},
		{"keyless, too few to copy", noops(postgres.CopyMinTasks()-2, store.CreateParams{Kind: "noop"}), inserted, nil},
		{"keyless with a delay", noops(postgres.CopyMinTasks(), store.CreateParams{Kind: "noop", Delay: time.Hour}), inserted, nil},
		{"one key", []store.CreateParams{{Kind: "noop"}, {Kind: "noop", IdempotencyKey: "k"}}, upserted, []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := pgx.BeginFunc(ctx, pool, func(ptx pgx.Tx) error {
				tx := &recordingTx{Tx: ptx}
				res, err := st.CreateTasksTx(ctx, tx, tc.params)
				if err != nil {
					return err
				}
				got := fmt.Sprint(tx.queries)
				switch {
				case len(tx.queries) == 1 && tx.queries[0] == `COPY "rota"."tasks"`:
					got = copied
				case len(tx.queries) == 1 && strings.Contains(tx.queries[0], "ON CONFLICT (idempotency_key)"):
					got = upserted
				case len(tx.queries) == 1 && strings.Contains(tx.queries[0], "INSERT INTO rota.tasks"):
					got = inserted
				}
				if got != tc.want {
					t.Errorf("the batch ran %s, want %s", got, tc.want)
				}
				for i, r := range res {
					if r.Existing != (tc.wantExisting != nil && tc.wantExisting[i]) {
						t.Errorf("task %d: Existing %v, want %v", i, r.Existing, tc.wantExisting[i])
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCreateTasksReturnsStoredRows: what CreateTasks and CreateTasksTx return is what a
// read of each row gives, field for field (the payload as JSON: a read returns jsonb's
// spelling of it), for a copied batch (createcopy.go builds its results without reading
// the rows back) and for an inserted one: defaults, explicit fields, a scheduled_for
// with nanoseconds (stored to the microsecond), the database's clock for created_at,
// updated_at and a due task's scheduled_for; the trace context is stored too.
func TestCreateTasksReturnsStoredRows(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	at := time.Now().Add(time.Hour + 123456789*time.Nanosecond).In(time.FixedZone("X", 3600))
	trace := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	// batch is big enough to be copied unless extra holds a delay or a key.
	batch := func(extra ...store.CreateParams) []store.CreateParams {
		ps := append([]store.CreateParams{
			{Kind: "noop"},
			{Kind: "email", Queue: "mail", Payload: json.RawMessage(`{"to":"a@b.c", "n": [1, 2.50, {"z": null}]}`), Priority: -3,
				ScheduledFor: at, MaxAttempts: 3, TimeoutSeconds: 9, GroupKey: "tenant-1", TraceContext: trace},
			{Kind: "noop", Queue: "mail", Payload: json.RawMessage(`"just a string"`), Priority: 5},
		}, extra...)
		for len(ps) < postgres.CopyMinTasks() {
			ps = append(ps, store.CreateParams{Kind: "noop"})
		}
		return ps
	}
	check := func(t *testing.T, res []store.CreateResult, wantTrace bool) {
		t.Helper()
		for i, r := range res {
			got := mustGet(t, st, r.Task.ID)
			want := *r.Task
			if !sameJSON(t, want.Payload, got.Payload) {
				t.Errorf("task %d: payload %s, stored %s", i, want.Payload, got.Payload)
			}
			want.Payload, got.Payload, got.ReadAt = nil, nil, time.Time{}
			if !reflect.DeepEqual(want, *got) {
				t.Errorf("task %d: returned\n%+v\nstored\n%+v", i, want, *got)
			}
			var stored pgtype.Text
			if err := pool.QueryRow(ctx, `SELECT trace_context->>'traceparent' FROM rota.tasks WHERE id = $1`, got.ID).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if hasTrace := i == 1 && wantTrace; stored.Valid != hasTrace || (hasTrace && stored.String != trace["traceparent"]) {
				t.Errorf("task %d: stored trace context %+v", i, stored)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		params []store.CreateParams
	}{
		{"copied", batch()},
		{"inserted", batch(store.CreateParams{Kind: "later", Delay: time.Minute})},
		{"upserted", batch(store.CreateParams{Kind: "keyed", IdempotencyKey: "k"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := st.CreateTasks(ctx, tc.params)
			if err != nil {
				t.Fatal(err)
			}
			check(t, res, true)
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				res, err = st.CreateTasksTx(ctx, tx, batch())
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			check(t, res, true)
		})
	}
	// One task per call takes create_task.sql: the same rows, each task created alone,
	// inside a caller's transaction too.
	t.Run("one per call", func(t *testing.T) {
		one := append(batch()[:3], store.CreateParams{Kind: "later", Delay: time.Minute, GroupKey: "g"},
			store.CreateParams{Kind: "keyed", IdempotencyKey: "k1"})
		for _, inTx := range []bool{false, true} {
			var res []store.CreateResult
			for _, p := range one {
				var r []store.CreateResult
				var err error
				if inTx {
					err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
						r, err = st.CreateTasksTx(ctx, tx, []store.CreateParams{p})
						return err
					})
				} else {
					r, err = st.CreateTasks(ctx, []store.CreateParams{p})
				}
				if err != nil {
					t.Fatal(err)
				}
				// The second pass finds the keyed task of the first.
				if len(r) != 1 || r[0].Existing != (inTx && p.IdempotencyKey != "") {
					t.Fatalf("created %+v alone (in a transaction: %v): %+v", p, inTx, r)
				}
				got := r[0].Task
				if got.Kind != p.Kind || got.GroupKey != p.GroupKey || got.IdempotencyKey != p.IdempotencyKey ||
					got.Priority != p.Priority || got.TimeoutSeconds != p.TimeoutSeconds ||
					(p.MaxAttempts != 0 && got.MaxAttempts != p.MaxAttempts) {
					t.Errorf("created %+v, got %+v", p, got)
				}
				switch {
				case p.Delay != 0 && !got.ScheduledFor.Equal(got.CreatedAt.Add(p.Delay)):
					t.Errorf("delay %s: scheduled for %s, created at %s", p.Delay, got.ScheduledFor, got.CreatedAt)
				case !p.ScheduledFor.IsZero() && !got.ScheduledFor.Equal(p.ScheduledFor.Truncate(time.Microsecond)):
					t.Errorf("scheduled for %s, got %s", p.ScheduledFor, got.ScheduledFor)
				}
				res = append(res, r...)
			}
			check(t, res, true)
		}
	})
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}
