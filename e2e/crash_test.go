package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/history"
)

// collector is the loopback HTTP service the `http` tasks call; it counts the calls per
// task id. Calls can repeat (a worker killed after the call but before the commit makes the
// task run again: at-least-once side effects); successes in the database cannot.
type collector struct {
	mu   sync.Mutex
	hits map[string]int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Rota-Task-Id")
	c.mu.Lock()
	c.hits[id]++
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (c *collector) seen() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.hits))
	for k, v := range c.hits {
		out[k] = v
	}
	return out
}

// TestCrashKill9: 3 worker processes work 2,000 `http` tasks while one of them is killed
// with SIGKILL and restarted every ~300 ms. Nothing may be lost and nothing may succeed twice.
func TestCrashKill9(t *testing.T) {
	ctx := context.Background()
	dbURL, pool := newDB(t)
	col := &collector{hits: map[string]int{}}
	srv := httptest.NewServer(col)
	defer srv.Close()

	const n = 2000
	params := make([]store.CreateParams, n)
	payload, _ := json.Marshal(map[string]any{"url": srv.URL + "/hit", "method": "POST"})
	for i := range params {
		params[i] = store.CreateParams{Kind: "http", Payload: payload, MaxAttempts: 25}
	}
	st := postgres.New(pool)
	defer st.Close()
	created, err := st.CreateTasks(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uuid.UUID]store.Status{}
	for _, c := range created {
		want[c.Task.ID] = store.StatusSucceeded
	}

	// Short leases so that killed workers' tasks come back quickly; small concurrency so
	// that every kill lands while tasks are in flight.
	workerArgs := func(i, gen int) []string {
		return []string{"worker", "--mode", "poll", "--database-url", dbURL,
			"--worker-id", fmt.Sprintf("w%d-gen%d", i, gen),
			"--concurrency", "8", "--lease", "2s", "--reap-interval", "250ms",
			"--poll-interval", "100ms", "--shutdown-grace", "2s", "--log-level", "warn"}
	}
	workers := make([]*proc, 3)
	gens := make([]int, 3)
	for i := range workers {
		workers[i] = startProc(t, fmt.Sprintf("worker%d", i), nil, workerArgs(i, 0)...)
	}

	kills := 0
	deadline := time.Now().Add(3 * time.Minute)
	for {
		counts := statusCounts(t, pool)
		if counts["SUCCEEDED"] == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not all tasks succeeded before the deadline: %v (after %d kills)", counts, kills)
		}
		time.Sleep(300 * time.Millisecond)
		i := kills % len(workers)
		workers[i].kill()
		kills++
		gens[i]++
		workers[i] = startProc(t, fmt.Sprintf("worker%d-gen%d", i, gens[i]), nil, workerArgs(i, gens[i])...)
	}
	for _, w := range workers {
		w.stop(t, 10*time.Second)
	}
	t.Logf("all %d tasks succeeded after %d SIGKILLs", n, kills)
	if kills < 3 {
		t.Errorf("only %d kills happened; the test did not exercise crashes", kills)
	}

	// Exactly one successful attempt per task, and a consistent history of attempts.
	history.AssertAll(t, pool, want)
	var reaped int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.task_attempts WHERE outcome = 'LEASE_EXPIRED'`).Scan(&reaped); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d attempts were reaped after their worker died", reaped)

	// The collector saw every task.
	seen := col.seen()
	rows, err := pool.Query(ctx, `SELECT id::text FROM rota.tasks`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	repeats := 0
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		if seen[id] == 0 {
			t.Errorf("collector never saw task %s", id)
		}
		repeats += seen[id] - 1
	}
	t.Logf("collector saw %d repeated calls (side effects are at-least-once)", repeats)
}
