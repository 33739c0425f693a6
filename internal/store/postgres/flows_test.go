package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

// TestFlowsUnderConcurrentBatches works many flows with concurrent workers that claim
// tasks of several flows at once and record their outcomes in one RecordOutcomes call
// each, as the committer does: siblings of a diamond and elements of a fan-out finish
// at the same moment in different transactions, and one statement ends tasks of several
// flows (whose flow rows must be locked in one order, or two batches deadlock). Every
// flow must end SUCCEEDED (or FAILED where a step fails), no call may fail, and no step
// may get a second task row: the join's inputs hold every output in element order.
func TestFlowsUnderConcurrentBatches(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	const fanOuts, diamonds, failing = 25, 25, 10
	fan := func(kindB string) store.FlowParams {
		return store.FlowParams{Queue: "race", Steps: []store.StepParams{
			{Name: "a", Kind: "emit"},
			{Name: "b", Kind: kindB, DependsOn: []string{"a"}, ForEach: "a"},
			{Name: "c", Kind: "join", DependsOn: []string{"b"}},
		}}
	}
	diamond := store.FlowParams{Queue: "race", Steps: []store.StepParams{
		{Name: "a", Kind: "work"},
		{Name: "b", Kind: "work", DependsOn: []string{"a"}},
		{Name: "c", Kind: "work", DependsOn: []string{"a"}},
		{Name: "d", Kind: "join", DependsOn: []string{"b", "c"}},
	}}
	var fanIDs, diamondIDs, failingIDs []uuid.UUID
	for i := range fanOuts + diamonds + failing {
		p := diamond
		switch {
		case i%3 == 0 && len(fanIDs) < fanOuts:
			p = fan("square")
		case i%3 == 1 && len(failingIDs) < failing:
			p = fan("square_or_fail")
		case len(diamondIDs) == diamonds:
			p = fan("square")
		}
		res, err := st.CreateFlow(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case p.Steps[1].Kind == "square_or_fail":
			failingIDs = append(failingIDs, res.Flow.ID)
		case p.Steps[1].Kind == "square":
			fanIDs = append(fanIDs, res.Flow.ID)
		default:
			diamondIDs = append(diamondIDs, res.Flow.ID)
		}
	}

	// outcomeFor is what a worker reports for a task: a emits 10 numbers, b squares its
	// item (element 5 of a square_or_fail step fails for good), the others echo their step.
	outcomeFor := func(task *store.Task) store.Outcome {
		o := store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}
		switch task.Kind {
		case "emit":
			o.Output = json.RawMessage(`[0,1,2,3,4,5,6,7,8,9]`)
		case "square", "square_or_fail":
			var n int
			if err := json.Unmarshal(task.Item, &n); err != nil {
				t.Errorf("task %s: item %s: %v", task.ID, task.Item, err)
			}
			if task.Kind == "square_or_fail" && n == 5 {
				return store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Fail, Error: "five"}
			}
			o.Output = json.RawMessage(fmt.Sprint(n * n))
		default:
			o.Output = json.RawMessage(`"` + task.Step + `"`)
		}
		return o
	}

	deadline := time.Now().Add(2 * time.Minute)
	var idle atomic.Int64
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			for time.Now().Before(deadline) && !t.Failed() {
				tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "race", From: store.StatusPending,
					WorkerID: fmt.Sprint("w", w), Limit: 1 + rnd.IntN(12), LeaseDuration: time.Minute})
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if len(tasks) == 0 {
					if idle.Add(1) > 200 {
						return
					}
					time.Sleep(5 * time.Millisecond)
					continue
				}
				idle.Store(0)
				rnd.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
				outcomes := make([]store.Outcome, len(tasks))
				for i, task := range tasks {
					outcomes[i] = outcomeFor(task)
				}
				res, err := st.RecordOutcomes(ctx, outcomes)
				if err != nil {
					t.Errorf("record %d outcomes: %v", len(outcomes), err)
					return
				}
				for _, r := range res {
					if r.Err != nil {
						t.Errorf("outcome of %s: %v", r.TaskID, r.Err)
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	squares := `[0,1,4,9,16,25,36,49,64,81]`
	for _, id := range fanIDs {
		f := getFlowOK(t, st, id)
		if f.Status != store.FlowSucceeded {
			t.Fatalf("fan-out flow %s is %s", id, f.Status)
		}
		c := mustGet(t, st, stepTaskIDs(t, f, "c", 1)[0])
		var inputs map[string]json.RawMessage
		if err := json.Unmarshal(c.Inputs, &inputs); err != nil || compactJSON(t, inputs["b"]) != squares {
			t.Fatalf("flow %s: c's inputs %s, want b = %s", id, c.Inputs, squares)
		}
		stepTaskIDs(t, f, "b", 10)
	}
	for _, id := range diamondIDs {
		f := getFlowOK(t, st, id)
		if f.Status != store.FlowSucceeded {
			t.Fatalf("diamond flow %s is %s", id, f.Status)
		}
		d := mustGet(t, st, stepTaskIDs(t, f, "d", 1)[0])
		if compactJSON(t, d.Inputs) != `{"b":"b","c":"c"}` {
			t.Fatalf("flow %s: d's inputs %s", id, d.Inputs)
		}
	}
	for _, id := range failingIDs {
		f := getFlowOK(t, st, id)
		if f.Status != store.FlowFailed {
			t.Fatalf("flow %s with a failing element is %s", id, f.Status)
		}
		stepTaskIDs(t, f, "b", 10)
		stepTaskIDs(t, f, "c", 0)
	}
	// The database agrees: one task row per (flow, step, element), none left waiting.
	var dup, waiting int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM rota.tasks WHERE flow_id IS NOT NULL
		GROUP BY flow_id, flow_step, flow_index HAVING count(*) > 1) d`).Scan(&dup); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.tasks WHERE status IN ('PENDING', 'ENQUEUED', 'PROCESSING')`).Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	if dup != 0 || waiting != 0 {
		t.Fatalf("%d elements with two task rows, %d tasks still waiting or running", dup, waiting)
	}
}

// TestFlowStepTaskRowIsUnique: the index behind "a step never has two task rows for one
// element" refuses a second row whatever path would write it.
func TestFlowStepTaskRowIsUnique(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	res, err := st.CreateFlow(ctx, store.FlowParams{Steps: []store.StepParams{{Name: "a", Kind: "k"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO rota.tasks (id, queue, kind, flow_id, flow_step, flow_index)
		VALUES ($1, 'default', 'k', $2, 'a', 0)`, uuid.New(), res.Flow.ID)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "tasks_flow_step" {
		t.Fatalf("second task row for step a: %v, want a unique violation of tasks_flow_step", err)
	}
}

func getFlowOK(t *testing.T, st store.Store, id uuid.UUID) *store.Flow {
	t.Helper()
	f, err := st.GetFlow(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// stepTaskIDs returns the task ids of a step, which must have n.
func stepTaskIDs(t *testing.T, f *store.Flow, step string, n int) []uuid.UUID {
	t.Helper()
	for _, s := range f.Steps {
		if s.Name == step {
			if len(s.TaskIDs) != n {
				t.Fatalf("flow %s step %s has %d tasks, want %d", f.ID, step, len(s.TaskIDs), n)
			}
			return s.TaskIDs
		}
	}
	t.Fatalf("flow %s has no step %s", f.ID, step)
	return nil
}

func compactJSON(t *testing.T, v any) string {
	t.Helper()
	var raw json.RawMessage
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// TestFlowSimultaneousFailures: every element of a fan-out fails at the same moment, each
// in its own call. Each failure locks the flow's live tasks, among them the others being
// failed, so PostgreSQL may break a deadlock; the store runs the aborted statement again,
// and no call fails: the flow is FAILED once, every task ended.
func TestFlowSimultaneousFailures(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	for round := range 3 {
		res, err := st.CreateFlow(ctx, store.FlowParams{Queue: "fail", Steps: []store.StepParams{
			{Name: "a", Kind: "emit"},
			{Name: "b", Kind: "boom", DependsOn: []string{"a"}, ForEach: "a"},
			{Name: "c", Kind: "join", DependsOn: []string{"b"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		a := mustClaim(t, st, store.ClaimParams{Queue: "fail"})
		if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: a[0].ID, LeaseToken: a[0].LeaseToken,
			Kind: store.Succeed, Output: json.RawMessage(`[1,2,3,4,5,6]`)}}); err != nil {
			t.Fatal(err)
		}
		bs := mustClaim(t, st, store.ClaimParams{Queue: "fail"})
		if len(bs) != 6 {
			t.Fatalf("round %d: claimed %d of b's tasks", round, len(bs))
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, b := range bs {
			wg.Go(func() {
				<-start
				res, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: b.ID, LeaseToken: b.LeaseToken, Kind: store.Fail, Error: "boom"}})
				if err != nil {
					t.Errorf("round %d: record failure: %v", round, err)
				} else if res[0].Err != nil {
					t.Errorf("round %d: failure outcome: %v", round, res[0].Err)
				}
			})
		}
		close(start)
		wg.Wait()
		f := getFlowOK(t, st, res.Flow.ID)
		if f.Status != store.FlowFailed {
			t.Fatalf("round %d: flow is %s", round, f.Status)
		}
		var live int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.tasks WHERE flow_id = $1 AND status IN ('PENDING', 'ENQUEUED', 'PROCESSING')`, f.ID).Scan(&live); err != nil {
			t.Fatal(err)
		}
		if live != 0 {
			t.Fatalf("round %d: %d tasks of the failed flow still live", round, live)
		}
	}
}

// TestFlowLargeFanInAndInputs: a fan-in of more than 128 outputs and inputs of more than
// 1 MiB take the guarded paths of migration 0019 (which fail the step instead of the
// outcome statement should the result outgrow a jsonb value) and give the same results.
func TestFlowLargeFanInAndInputs(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()
	const n = 130
	res, err := st.CreateFlow(ctx, store.FlowParams{Queue: "big", Steps: []store.StepParams{
		{Name: "a", Kind: "emit"},
		{Name: "b", Kind: "square", DependsOn: []string{"a"}, ForEach: "a"},
		{Name: "x", Kind: "blob"},
		{Name: "y", Kind: "blob"},
		{Name: "c", Kind: "join", DependsOn: []string{"b", "x", "y"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]int, n)
	want := make([]int, n)
	for i := range items {
		items[i], want[i] = i, i*i
	}
	itemsJSON, _ := json.Marshal(items)
	blob := func(seed uint64) json.RawMessage { // about 0.9 MiB that does not compress
		rnd := rand.New(rand.NewPCG(seed, seed))
		b := make([]byte, 900_000)
		for i := range b {
			b[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[rnd.IntN(36)]
		}
		return json.RawMessage(`"` + string(b) + `"`)
	}
	for {
		tasks := mustClaim(t, st, store.ClaimParams{Queue: "big", Limit: 50})
		if len(tasks) == 0 {
			break
		}
		var outs []store.Outcome
		for _, task := range tasks {
			o := store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}
			switch task.Kind {
			case "emit":
				o.Output = itemsJSON
			case "square":
				o.Output = json.RawMessage(fmt.Sprint(*task.Index * *task.Index))
			case "blob":
				o.Output = blob(uint64(len(task.Step)) + uint64(task.Step[0]))
			default:
				var inputs map[string]json.RawMessage
				if err := json.Unmarshal(task.Inputs, &inputs); err != nil {
					t.Fatal(err)
				}
				if compactJSON(t, inputs["b"]) != compactJSON(t, want) || len(inputs["x"]) < 900_000 || len(inputs["y"]) < 900_000 {
					t.Fatalf("c's inputs: b %.80s..., x %d bytes, y %d bytes", inputs["b"], len(inputs["x"]), len(inputs["y"]))
				}
			}
			outs = append(outs, o)
		}
		if _, err := st.RecordOutcomes(ctx, outs); err != nil {
			t.Fatal(err)
		}
	}
	f := getFlowOK(t, st, res.Flow.ID)
	if f.Status != store.FlowSucceeded {
		t.Fatalf("flow is %s", f.Status)
	}
}

// TestPlainTasksNeverRunTheFlowTriggers: the flow triggers' WHEN clause leaves plain tasks
// out before any function is called, whatever ends them (success, retry, failure, death,
// cancel, the reaper, replay); a step task's end calls them. Function-call statistics
// (track_functions) count the calls on the store's only connection.
func TestPlainTasksNeverRunTheFlowTriggers(t *testing.T) {
	t.Parallel()
	pool := functionTrackingPool(t)
	st := postgres.New(pool)
	ctx := context.Background()
	calls := func() int64 {
		return functionCalls(t, pool, "tasks_flow_note", "tasks_flow_advance", "flow_advance", "flow_steps_ended")
	}

	// Plain tasks through every ending.
	tasks := mustCreate(t, st, store.CreateParams{Kind: "ok"}, store.CreateParams{Kind: "retry", MaxAttempts: 2},
		store.CreateParams{Kind: "fail"}, store.CreateParams{Kind: "cancel"}, store.CreateParams{Kind: "reaped", MaxAttempts: 1})
	claimed := mustClaim(t, st, store.ClaimParams{Limit: 4, LeaseDuration: time.Minute})
	var outs []store.Outcome
	for _, c := range claimed {
		kind := map[string]store.OutcomeKind{"ok": store.Succeed, "retry": store.Retry, "fail": store.Fail, "cancel": store.Succeed, "reaped": store.Succeed}[c.Kind]
		if c.Kind == "cancel" {
			if _, err := st.CancelTask(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
			kind = store.Cancel
		}
		outs = append(outs, store.Outcome{TaskID: c.ID, LeaseToken: c.LeaseToken, Kind: kind, Error: "x"})
	}
	if _, err := st.RecordOutcomes(ctx, outs); err != nil {
		t.Fatal(err)
	}
	reaped := mustClaim(t, st, store.ClaimParams{Limit: 10, LeaseDuration: time.Millisecond})
	if len(reaped) == 0 {
		t.Fatal("nothing left to reap")
	}
	// The 1 ms leases expire by the database's clock: reap until they all were.
	for n, deadline := 0, time.Now().Add(10*time.Second); n < len(reaped); {
		if time.Now().After(deadline) {
			t.Fatalf("reaped %d of %d expired leases", n, len(reaped))
		}
		got, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		n += got
	}
	for _, task := range tasks {
		if cur := mustGet(t, st, task.ID); cur.Status == store.StatusFailed {
			if _, err := st.ReplayTask(ctx, task.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := calls(); n != 0 {
		t.Fatalf("plain tasks called the flow trigger functions %d times", n)
	}

	// A step task's success calls them.
	res, err := st.CreateFlow(ctx, store.FlowParams{Queue: "f", Steps: []store.StepParams{{Name: "a", Kind: "k"}}})
	if err != nil {
		t.Fatal(err)
	}
	a := mustClaim(t, st, store.ClaimParams{Queue: "f"})
	if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: a[0].ID, LeaseToken: a[0].LeaseToken, Kind: store.Succeed}}); err != nil {
		t.Fatal(err)
	}
	if n := calls(); n != 1 {
		t.Fatalf("a step task's success called the flow functions %d times, want 1 (flow_steps_ended)", n)
	}
	if f := getFlowOK(t, st, res.Flow.ID); f.Status != store.FlowSucceeded {
		t.Fatalf("flow is %s", f.Status)
	}
}

// TestWideFanOutStartsInOneBoundedStatement: the success of a step whose output is a
// 10,000-element array starts the for_each step over it in the same statement, and that
// statement returns within a lease (30 s, the default; past it the worker's outcome
// would be retried for ever and the flow never move). The inputs are kept once, on the
// step's row: with them copied into every element task (the array into each of 10,000
// rows, quadratic) it took minutes. Every element task exists once, and an element's
// claim and GetTask still answer the whole inputs with its own item and index.
func TestWideFanOutStartsInOneBoundedStatement(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	const n = 10_000
	res, err := st.CreateFlow(ctx, store.FlowParams{Queue: "wide", Steps: []store.StepParams{
		{Name: "a", Kind: "emit"},
		{Name: "b", Kind: "each", DependsOn: []string{"a"}, ForEach: "a"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"row": i, "name": fmt.Sprintf("element-%05d", i)}
	}
	itemsJSON, _ := json.Marshal(items)
	a := mustClaim(t, st, store.ClaimParams{Queue: "wide"})
	lease, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := st.RecordOutcomes(lease, []store.Outcome{{TaskID: a[0].ID, LeaseToken: a[0].LeaseToken,
		Kind: store.Succeed, Output: itemsJSON}}); err != nil {
		t.Fatalf("recording a's success (which starts b's %d tasks): %v", n, err)
	}
	var count, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT flow_index) FROM rota.tasks
		WHERE flow_id = $1 AND flow_step = 'b' AND status = 'PENDING'`, res.Flow.ID).Scan(&count, &distinct); err != nil {
		t.Fatal(err)
	}
	if count != n || distinct != n {
		t.Fatalf("b has %d pending tasks (%d distinct elements), want %d", count, distinct, n)
	}

	b := mustClaim(t, st, store.ClaimParams{Queue: "wide", Limit: 2})
	for _, task := range b {
		for _, got := range []*store.Task{task, mustGet(t, st, task.ID)} {
			if got.Index == nil || compactJSON(t, got.Item) != compactJSON(t, items[*got.Index]) {
				t.Fatalf("task %s: index %v, item %s", got.ID, got.Index, got.Item)
			}
			var inputs map[string]json.RawMessage
			if err := json.Unmarshal(got.Inputs, &inputs); err != nil {
				t.Fatal(err)
			}
			if len(inputs) != 1 || compactJSON(t, inputs["a"]) != compactJSON(t, items) {
				t.Fatalf("task %s: inputs are not {\"a\": a's output} (%d bytes)", got.ID, len(got.Inputs))
			}
		}
	}
}

// TestFlowAdvanceIsPlannedWithTheTablesOfTheMoment: a session keeps PL/pgSQL's plans, and
// the flow functions' statements planned generically while rota.flows and
// rota.flow_steps were small scanned them whole ever after (steps got slower with every
// flow added). The session's plans are warmed on small tables, the tables then grow to
// 10,000 flows of 10 steps, and no statement run by the flow machinery for the next
// outcomes (auto_explain, nested statements, to the client) may scan either table.
func TestFlowAdvanceIsPlannedWithTheTablesOfTheMoment(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	var explaining atomic.Bool
	var mu sync.Mutex
	var plans []string
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if explaining.Load() {
			mu.Lock()
			plans = append(plans, n.Message)
			mu.Unlock()
		}
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `LOAD 'auto_explain';
			SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;
			SET auto_explain.log_level = 'notice'`)
		return err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st := postgres.New(pool)
	ctx := context.Background()
	steps := make([]store.StepParams, 10)
	for i := range steps {
		steps[i] = store.StepParams{Name: fmt.Sprint("s", i), Kind: "step"}
		if i > 0 {
			steps[i].DependsOn = []string{fmt.Sprint("s", i-1)}
		}
	}
	createFlows := func(queue string, n int) {
		for range n {
			if _, err := st.CreateFlow(ctx, store.FlowParams{Queue: queue, Steps: steps}); err != nil {
				t.Fatal(err)
			}
		}
	}
	drain := func(queue string, outcomes int) {
		for range outcomes {
			tasks := mustClaim(t, st, store.ClaimParams{Queue: queue, Limit: 10})
			if len(tasks) == 0 {
				return
			}
			outs := make([]store.Outcome, len(tasks))
			for i, task := range tasks {
				outs[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}
			}
			if _, err := st.RecordOutcomes(ctx, outs); err != nil {
				t.Fatal(err)
			}
		}
	}
	createFlows("warm", 10)
	drain("warm", 100) // 10 flows of 10 steps: the session's plans, on small tables
	// 10,000 ended flows of 10 steps, and 10 to work.
	exec(t, pool, `WITH f AS (
		INSERT INTO rota.flows (id, queue, status, steps_left, completed_at)
		SELECT gen_random_uuid(), 'old', 'SUCCEEDED', 0, now() FROM generate_series(1, 10000)
		RETURNING id)
	INSERT INTO rota.flow_steps (flow_id, name, position, kind, queue, payload, depends_on, max_attempts,
	                             priority, timeout_seconds, state, deps_left, tasks_left, task_count, inputs, output)
	SELECT f.id, 's' || i, i, 'step', 'old', '{}', '{}', 1, 0, 0, 'SUCCEEDED', 0, 0, 1, '{}', 'null'
	FROM f, generate_series(0, 9) AS i`)
	createFlows("big", 10)
	explaining.Store(true)
	drain("big", 3)
	explaining.Store(false)
	if len(plans) == 0 {
		t.Fatal("auto_explain reported no plan")
	}
	for _, p := range plans {
		if strings.Contains(p, "Seq Scan on flow_steps") || strings.Contains(p, "Seq Scan on flows ") {
			t.Errorf("a flow statement scans a flow table:\n%s", p)
		}
	}
}

// TestChainStepsLeaveTheFlowRowAlone: a chain's inner steps neither lock nor write their
// flow's row (migration 0025: no steps_left count-down, no lock where no other
// transaction can meet them); the last step ends the flow. The row's xmin (its last
// writer) and xmax (its last locker) stay those of its creation until then; with 0019's
// bookkeeping every step locked the row and counted it down. Also: the AFTER trigger
// runs once per statement, not once per ended step task (10 flows' steps in one
// RecordOutcomes: one call of flow_advance, ten of tasks_flow_note).
func TestChainStepsLeaveTheFlowRowAlone(t *testing.T) {
	t.Parallel()
	pool := functionTrackingPool(t)
	st := postgres.New(pool)
	ctx := context.Background()
	calls := func(fn string) int64 { return functionCalls(t, pool, fn) }
	rowVersion := func(id uuid.UUID) string {
		t.Helper()
		var v string
		if err := pool.QueryRow(ctx, `SELECT xmin::text || '/' || xmax::text FROM rota.flows WHERE id = $1`, id).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	chain := []store.StepParams{{Name: "s0", Kind: "k"}, {Name: "s1", Kind: "k", DependsOn: []string{"s0"}},
		{Name: "s2", Kind: "k", DependsOn: []string{"s1"}}}
	var flows []uuid.UUID
	for range 10 {
		res, err := st.CreateFlow(ctx, store.FlowParams{Queue: "chain", Steps: chain})
		if err != nil {
			t.Fatal(err)
		}
		flows = append(flows, res.Flow.ID)
	}
	created := map[uuid.UUID]string{}
	for _, id := range flows {
		created[id] = rowVersion(id)
	}
	succeedAll := func(want int) {
		t.Helper()
		tasks := mustClaim(t, st, store.ClaimParams{Queue: "chain"})
		if len(tasks) != want {
			t.Fatalf("claimed %d tasks, want %d", len(tasks), want)
		}
		outs := make([]store.Outcome, len(tasks))
		for i, task := range tasks {
			outs[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed, Output: json.RawMessage(`{"step": "` + task.Step + `"}`)}
		}
		if _, err := st.RecordOutcomes(ctx, outs); err != nil {
			t.Fatal(err)
		}
	}
	// rota.record_outcomes hands the statement's succeeded step tasks to
	// rota.flow_steps_ended once, grouped by step (migration 0031; 0027 handed them to
	// flow_advance, which read them back); the row trigger's WHEN leaves it uncalled.
	notes, advances, ended := calls("tasks_flow_note"), calls("flow_advance"), calls("flow_steps_ended")
	succeedAll(10) // s0 of each flow, in one statement
	if n := calls("tasks_flow_note") - notes; n != 0 {
		t.Errorf("tasks_flow_note ran %d times for 10 step tasks ended by record_outcomes, want 0", n)
	}
	if n := calls("flow_advance") - advances; n != 0 {
		t.Errorf("flow_advance ran %d times for a statement of successes, want 0", n)
	}
	if n := calls("flow_steps_ended") - ended; n != 1 {
		t.Errorf("flow_steps_ended ran %d times for one statement, want 1", n)
	}
	succeedAll(10) // s1
	for _, id := range flows {
		if v := rowVersion(id); v != created[id] {
			t.Errorf("flow %s: its row went from %s to %s (xmin/xmax) while inner chain steps succeeded", id, created[id], v)
		}
		f := getFlowOK(t, st, id)
		if f.Status != store.FlowRunning || f.Steps[1].Status != store.StepStatus(store.StatusSucceeded) || f.Steps[2].Status != store.StepStatus(store.StatusPending) {
			t.Fatalf("flow %s is %s with steps %s, %s", id, f.Status, f.Steps[1].Status, f.Steps[2].Status)
		}
	}
	succeedAll(10) // s2: the flows end
	for _, id := range flows {
		f := getFlowOK(t, st, id)
		if f.Status != store.FlowSucceeded || f.CompletedAt == nil {
			t.Fatalf("flow %s is %s after its last step", id, f.Status)
		}
		if got, want := compactJSON(t, f.Steps[2].Output), `{"step":"s2"}`; got != want {
			t.Errorf("s2's output is %s, want %s", got, want)
		}
	}
	task := mustClaim(t, st, store.ClaimParams{Queue: "chain"})
	if len(task) != 0 {
		t.Fatalf("%d tasks left after the flows ended", len(task))
	}
}

// TestFlowWithTwoLastStepsEndsOnce: a flow ends when a step nothing depends on succeeds
// and all its steps did (migration 0025, no count on the flow row). Two such steps
// finishing at the same moment in two transactions must still end their flow: each
// reads, under the flow's row lock, whether the other succeeded. 40 flows a -> (b, c),
// b's and c's tasks completed one at a time by two goroutines at once.
func TestFlowWithTwoLastStepsEndsOnce(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()
	steps := []store.StepParams{{Name: "a", Kind: "k"}, {Name: "b", Kind: "k", DependsOn: []string{"a"}},
		{Name: "c", Kind: "k", DependsOn: []string{"a"}}}
	const n = 40
	var flows []uuid.UUID
	for range n {
		res, err := st.CreateFlow(ctx, store.FlowParams{Queue: "two", Steps: steps})
		if err != nil {
			t.Fatal(err)
		}
		flows = append(flows, res.Flow.ID)
	}
	succeed := func(tasks []*store.Task) {
		for _, task := range tasks {
			if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}}); err != nil {
				t.Error(err)
			}
		}
	}
	succeed(mustClaim(t, st, store.ClaimParams{Queue: "two"})) // every a
	byStep := map[string][]*store.Task{}
	for _, task := range mustClaim(t, st, store.ClaimParams{Queue: "two"}) {
		byStep[task.Step] = append(byStep[task.Step], task)
	}
	if len(byStep["b"]) != n || len(byStep["c"]) != n {
		t.Fatalf("claimed %d b and %d c tasks, want %d each", len(byStep["b"]), len(byStep["c"]), n)
	}
	var wg sync.WaitGroup
	for _, step := range []string{"b", "c"} {
		wg.Go(func() { succeed(byStep[step]) })
	}
	wg.Wait()
	for _, id := range flows {
		if f := getFlowOK(t, st, id); f.Status != store.FlowSucceeded {
			t.Errorf("flow %s is %s after all its steps succeeded", id, f.Status)
		}
	}
}

// functionCalls is how many times the rota functions named have been called so far
// (pg_stat_user_functions; the caller's connections set track_functions).
func functionCalls(t *testing.T, pool *pgxpool.Pool, names ...string) int64 {
	t.Helper()
	exec(t, pool, `SELECT pg_stat_force_next_flush()`)
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_user_functions
		WHERE schemaname = 'rota' AND funcname = ANY ($1)`, names).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// functionTrackingPool is a one-connection pool on a new test database whose connection
// counts calls of PL/pgSQL functions (track_functions), for functionCalls.
func functionTrackingPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `SET track_functions = 'pl'`)
		return err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestOnlySinkEndsItsFlowUnchecked: a flow's only step that nothing depends on is marked
// ends_flow at create (migration 0051), and its success ends the flow without
// rota.flow_all_succeeded's look at every step: every other step is its ancestor, so it
// succeeded before this step's task existed. A flow with two such steps, and one created
// before the mark existed (ends_flow false), still end through the check.
func TestOnlySinkEndsItsFlowUnchecked(t *testing.T) {
	t.Parallel()
	pool := functionTrackingPool(t)
	st := postgres.New(pool)
	defer st.Close()
	ctx := context.Background()
	step := func(name string, deps ...string) store.StepParams {
		return store.StepParams{Name: name, Kind: "k", DependsOn: deps}
	}
	shapes := []struct {
		name  string
		steps []store.StepParams
		ends  string // the step marked ends_flow, "" for none
	}{
		{"single", []store.StepParams{step("a")}, "a"},
		{"chain", []store.StepParams{step("c"), step("a", "c"), step("b", "a")}, "b"},
		{"diamond", []store.StepParams{step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")}, "d"},
		{"two sinks", []store.StepParams{step("a"), step("b", "a"), step("c", "a")}, ""},
		{"two roots", []store.StepParams{step("a"), step("b"), step("c", "a", "b")}, "c"},
	}
	flows := map[string]uuid.UUID{}
	for _, s := range shapes {
		res, err := st.CreateFlow(ctx, store.FlowParams{Queue: "ends", Steps: s.steps})
		if err != nil {
			t.Fatal(err)
		}
		flows[s.name] = res.Flow.ID
		var marked []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(name), '{}') FROM rota.flow_steps WHERE flow_id = $1 AND ends_flow`,
			res.Flow.ID).Scan(&marked); err != nil {
			t.Fatal(err)
		}
		if want := []string{s.ends}; s.ends == "" && len(marked) != 0 || s.ends != "" && fmt.Sprint(marked) != fmt.Sprint(want) {
			t.Errorf("%s: ends_flow marks %v, want %q", s.name, marked, s.ends)
		}
	}
	// The chain again, as a flow created before migration 0051 left it.
	res, err := st.CreateFlow(ctx, store.FlowParams{Queue: "ends", Steps: shapes[1].steps})
	if err != nil {
		t.Fatal(err)
	}
	flows["chain, unmarked"] = res.Flow.ID
	exec(t, pool, `UPDATE rota.flow_steps SET ends_flow = false WHERE flow_id = $1`, res.Flow.ID)

	checks := functionCalls(t, pool, "flow_all_succeeded")
	for range 4 { // the longest path has 3 steps; one more round claims nothing
		tasks := mustClaim(t, st, store.ClaimParams{Queue: "ends"})
		outs := make([]store.Outcome, len(tasks))
		for i, task := range tasks {
			outs[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}
		}
		if _, err := st.RecordOutcomes(ctx, outs); err != nil {
			t.Fatal(err)
		}
	}
	for name, id := range flows {
		if f := getFlowOK(t, st, id); f.Status != store.FlowSucceeded || f.CompletedAt == nil {
			t.Errorf("flow %q is %s after all its steps succeeded", name, f.Status)
		}
	}
	// One check for "two sinks" (its b and c end in one statement, which checks a flow
	// once) and one for the unmarked chain; none for the four marked flows.
	if n := functionCalls(t, pool, "flow_all_succeeded") - checks; n != 2 {
		t.Errorf("flow_all_succeeded ran %d times, want 2 (two sinks, the unmarked chain)", n)
	}
}

// TestClaimsAnswerAStepsInputsOnce: a claim answers a step's inputs on its first task of
// the step only, and the store gives every other task of the step the same inputs, in a
// plain queue, a queue with a concurrency limit and a grouped one (rota.claim_limited,
// which answered them on every task before migration 0052: a claim of 500 elements of a
// fan-out carried its array 500 times).
func TestClaimsAnswerAStepsInputsOnce(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	limit := 1000
	if _, err := st.UpdateQueueSettings(ctx, "limited", store.QueuePatch{Concurrency: &store.Change[int]{To: &limit}}); err != nil {
		t.Fatal(err)
	}
	const width = 6
	output := `[0, 1, 2, 3, 4, 5]`
	for _, queue := range []string{"plain", "limited", "grouped"} {
		group := ""
		if queue == "grouped" {
			group = "g"
		}
		// Two flows, so that a claim holds two steps' elements.
		for range 2 {
			if _, err := st.CreateFlow(ctx, store.FlowParams{Queue: queue, Steps: []store.StepParams{
				{Name: "a", Kind: "emit"},
				{Name: "b", Kind: "item", DependsOn: []string{"a"}, ForEach: "a", GroupKey: group},
			}}); err != nil {
				t.Fatal(err)
			}
		}
		var outs []store.Outcome
		for _, a := range mustClaim(t, st, store.ClaimParams{Queue: queue}) {
			outs = append(outs, store.Outcome{TaskID: a.ID, LeaseToken: a.LeaseToken, Kind: store.Succeed, Output: json.RawMessage(output)})
		}
		if len(outs) != 2 {
			t.Fatalf("%s: claimed %d first steps, want 2", queue, len(outs))
		}
		if _, err := st.RecordOutcomes(ctx, outs); err != nil {
			t.Fatal(err)
		}
		if queue != "plain" {
			// What the function answers: the inputs on exactly one row of each step.
			var rows, answered, steps, answeredSteps int
			if err := pool.QueryRow(ctx, `SELECT count(*), count(flow_inputs), count(DISTINCT flow_id),
					count(DISTINCT flow_id) FILTER (WHERE flow_inputs IS NOT NULL)
				FROM rota.claim_limited_pending($1, 3, 'w', '1 minute', NULL) WHERE id IS NOT NULL`, queue).Scan(&rows, &answered, &steps, &answeredSteps); err != nil {
				t.Fatal(err)
			}
			if rows != 3 || answered != steps || answeredSteps != steps {
				t.Errorf("%s: rota.claim_limited_pending answered the inputs on %d of %d claimed step tasks, of %d of their %d steps; want one per step",
					queue, answered, rows, answeredSteps, steps)
			}
		}
		tasks := mustClaim(t, st, store.ClaimParams{Queue: queue, Limit: 2 * width})
		if queue != "plain" && len(tasks) != 2*width-3 || queue == "plain" && len(tasks) != 2*width {
			t.Fatalf("%s: claimed %d elements", queue, len(tasks))
		}
		for _, task := range tasks {
			if got := compactJSON(t, task.Inputs); got != `{"a":[0,1,2,3,4,5]}` {
				t.Errorf("%s: element %v of flow %s has inputs %s", queue, task.Index, task.FlowID, got)
			}
		}
	}
}

// TestFlowReplayMeetsAStepFinishingMeanwhile: a flow a -> b whose a failed, a's task
// replayed on its own (it runs again while the flow stays FAILED) and then the flow
// replayed. If a's task succeeds while the flow's replay is still open, neither may miss
// the other. Before migration 0053 both did: the success read the flow FAILED (a chain
// step reads it without a lock) and moved nothing, the replay's recount read a's task
// as not succeeded, and the flow came back RUNNING with a SUCCEEDED, b never started
// and the flow stuck for good (found in session 15's review). Now the success, having
// read the flow not RUNNING, waits for the flow's row, which the replay holds, and looks
// again once the replay has committed.
func TestFlowReplayMeetsAStepFinishingMeanwhile(t *testing.T) {
	t.Parallel()
	// Alone, the success goes through rota.flow_steps_ended; in a batch with a failure
	// (of another flow's task), through rota.flow_advance.
	for _, beside := range []bool{false, true} {
		t.Run(fmt.Sprintf("beside a failure=%v", beside), func(t *testing.T) {
			t.Parallel()
			replayMeetsAStepFinishing(t, beside)
		})
	}
}

func replayMeetsAStepFinishing(t *testing.T, besideAFailure bool) {
	st, pool := newStore(t)
	ctx := context.Background()
	res, err := st.CreateFlow(ctx, store.FlowParams{Queue: "replay", Steps: []store.StepParams{
		{Name: "a", Kind: "k", MaxAttempts: 1},
		{Name: "b", Kind: "k", DependsOn: []string{"a"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	flowID := res.Flow.ID
	claim := func() []*store.Task { return mustClaim(t, st, store.ClaimParams{Queue: "replay"}) }
	succeed := func(tasks []*store.Task) error {
		for _, task := range tasks {
			if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}}); err != nil {
				return err
			}
		}
		return nil
	}
	a := claim()
	if len(a) != 1 {
		t.Fatalf("claimed %d tasks, want a's", len(a))
	}
	if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: a[0].ID, LeaseToken: a[0].LeaseToken, Kind: store.Fail, Error: "boom"}}); err != nil {
		t.Fatal(err)
	}
	if f := getFlowOK(t, st, flowID); f.Status != store.FlowFailed {
		t.Fatalf("the flow is %s after a failed, want FAILED", f.Status)
	}
	if _, err := st.ReplayTask(ctx, a[0].ID); err != nil {
		t.Fatal(err)
	}

	// The flow's replay, done but not committed; meanwhile a worker claims a's task and
	// succeeds it.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var before string
	if err := tx.QueryRow(ctx, `SELECT rota.flow_replay($1)`, flowID).Scan(&before); err != nil || before != "FAILED" {
		t.Fatalf("flow_replay: %q, %v", before, err)
	}
	again := claim()
	if len(again) != 1 {
		t.Fatalf("claimed %d tasks while the replay is open, want a's", len(again))
	}
	outs := []store.Outcome{{TaskID: again[0].ID, LeaseToken: again[0].LeaseToken, Kind: store.Succeed}}
	if besideAFailure {
		other, err := st.CreateFlow(ctx, store.FlowParams{Queue: "other", Steps: []store.StepParams{{Name: "x", Kind: "k"}}})
		if err != nil {
			t.Fatal(err)
		}
		x := mustClaim(t, st, store.ClaimParams{Queue: "other"})
		if len(x) != 1 || x[0].FlowID != other.Flow.ID {
			t.Fatalf("claimed %d tasks of the other flow, want its one", len(x))
		}
		outs = append(outs, store.Outcome{TaskID: x[0].ID, LeaseToken: x[0].LeaseToken, Kind: store.Fail, Error: "boom"})
	}
	outcome := make(chan error, 1)
	go func() {
		_, err := st.RecordOutcomes(ctx, outs)
		outcome <- err
	}()
	// The outcome waits for the flow's row (the replay holds it); before 0053 it returned.
	poll.Until(t, "the outcome waiting for the replay's flow row", 30*time.Second, 5*time.Millisecond, func() bool {
		select {
		case err := <-outcome:
			outcome <- err
			return true
		default:
		}
		return waitingOnLock(t, pool, "-- RecordOutcomes:")
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-outcome; err != nil {
		t.Fatal(err)
	}

	// Then the worker goes on until nothing is due: b.
	for range 3 {
		if err := succeed(claim()); err != nil {
			t.Fatal(err)
		}
	}
	f := getFlowOK(t, st, flowID)
	if f.Status != store.FlowSucceeded {
		t.Fatalf("the flow is %s with steps a %s, b %s after the replay and every due task, want SUCCEEDED",
			f.Status, f.Steps[0].Status, f.Steps[1].Status)
	}
}

// TestRetentionKeepsAFlowWhoseTaskCameBack: retention deletes an ended flow with all of
// its tasks in one statement, choosing flows with no live task from its snapshot. A task
// of the flow replayed on its own (ReplayTask) after that snapshot, and claimed, was
// deleted all the same: the worker's outcome found its task gone (session 15's review).
// Now such a batch is rolled back, and the flow and the task stay.
func TestRetentionKeepsAFlowWhoseTaskCameBack(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	res, err := st.CreateFlow(ctx, store.FlowParams{Queue: "ret", Steps: []store.StepParams{
		{Name: "a", Kind: "k", MaxAttempts: 1},
		{Name: "z", Kind: "k", MaxAttempts: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	f := getFlowOK(t, st, res.Flow.ID)
	a, z := stepTaskIDs(t, f, "a", 1)[0], stepTaskIDs(t, f, "z", 1)[0]
	// a fails: the flow fails, and z, never claimed, is CANCELED.
	var lease uuid.UUID
	for _, task := range mustClaim(t, st, store.ClaimParams{Queue: "ret", Limit: 2}) {
		if task.ID == a {
			lease = task.LeaseToken
		} else if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Release}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: a, LeaseToken: lease, Kind: store.Fail, Error: "boom"}}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, st, z); got.Status != store.StatusCanceled {
		t.Fatalf("z is %s after the flow failed, want CANCELED", got.Status)
	}

	// Retention chooses the flow, then waits for a's row, which a transaction holds.
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) //nolint:errcheck // the test ends it below
	if _, err := holder.Exec(ctx, `SELECT FROM rota.tasks WHERE id = $1 FOR UPDATE`, a); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	retention := make(chan error, 1)
	go func() {
		_, err := st.DeleteFinishedTasks(ctx, store.RetentionParams{SucceededBefore: future, FailedBefore: future, Limit: 10})
		retention <- err
	}()
	poll.Until(t, "retention waiting for a's row", 30*time.Second, 5*time.Millisecond, func() bool {
		return waitingOnLock(t, pool, "-- DeleteFinishedTasks, for flows")
	})
	// Meanwhile z is replayed on its own and a worker claims it. (This assumes the
	// DELETE reaches a's row before z's, as it does in step and in row order: a's row
	// was written before z's was canceled. Had it deleted z first, the replay would wait
	// for the retention, which waits for the holder: the timeout says so.)
	replayCtx, cancelReplay := context.WithTimeout(ctx, 10*time.Second)
	defer cancelReplay()
	if _, err := st.ReplayTask(replayCtx, z); err != nil {
		t.Fatalf("replaying z while the retention waits: %v (did the retention reach z before a?)", err)
	}
	claimed := mustClaim(t, st, store.ClaimParams{Queue: "ret"})
	if len(claimed) != 1 || claimed[0].ID != z {
		t.Fatalf("claimed %d tasks, want z", len(claimed))
	}
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-retention; err != nil {
		t.Fatal(err)
	}

	// The flow and z are still there, and z's outcome is recorded.
	getFlowOK(t, st, res.Flow.ID)
	results, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: z, LeaseToken: claimed[0].LeaseToken, Kind: store.Succeed}})
	if err != nil || len(results) != 1 || results[0].Err != nil || results[0].Status != store.StatusSucceeded {
		t.Fatalf("z's outcome: %+v, %v; want SUCCEEDED", results, err)
	}
}
