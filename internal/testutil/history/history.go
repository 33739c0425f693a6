// Package history checks, from the database alone, that every task of a crash or chaos
// test ended as the test expects with one consistent story in its attempt rows. A CHECK
// constraint already keeps attempt_count within max_attempts, so comparing those two
// columns proves nothing; the attempt rows are what a double run, a lost outcome or a
// double write would disturb. The e2e crash and SQS chaos tests and the sqsmode tests
// end with it.
package history

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
)

// taskHistory is one task's row and its rota.task_attempts rows in the order written.
type taskHistory struct {
	status       store.Status
	attemptCount int
	maxAttempts  int
	rows         []attemptRow
}

// attemptRow is one rota.task_attempts row: a run's end, or a REPLAYED event.
type attemptRow struct {
	attempt  int
	outcome  store.AttemptOutcome // "" while open
	token    *uuid.UUID
	finished bool
}

// loadHistories reads every task of the database with its attempt rows.
func loadHistories(ctx context.Context, pool *pgxpool.Pool) (map[uuid.UUID]*taskHistory, error) {
	rows, err := pool.Query(ctx, `
		SELECT t.id, t.status, t.attempt_count, t.max_attempts,
		       a.attempt, coalesce(a.outcome, ''), a.lease_token, a.finished_at IS NOT NULL
		FROM rota.tasks t LEFT JOIN rota.task_attempts a ON a.task_id = t.id
		ORDER BY t.id, a.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[uuid.UUID]*taskHistory{}
	for rows.Next() {
		var (
			id       uuid.UUID
			h        taskHistory
			attempt  *int
			outcome  string
			token    *uuid.UUID
			finished bool
		)
		if err := rows.Scan(&id, &h.status, &h.attemptCount, &h.maxAttempts, &attempt, &outcome, &token, &finished); err != nil {
			return nil, err
		}
		cur := out[id]
		if cur == nil {
			cur = &h
			out[id] = cur
		}
		if attempt != nil { // the LEFT JOIN's row of a task without attempts has none
			cur.rows = append(cur.rows, attemptRow{attempt: *attempt, outcome: store.AttemptOutcome(outcome), token: token, finished: finished})
		}
	}
	return out, rows.Err()
}

// problems lists what is wrong with a task that should have ended in status want:
//   - its status is want (and terminal);
//   - exactly one SUCCEEDED attempt row if it succeeded, none otherwise;
//   - between REPLAYED events (a replay starts the count again at 1), attempt numbers run
//     1, 2, 3... without gaps or repeats, each a closed run with a lease token of its own;
//     a REPLAYED event carries the count it ended, and the runs since the last one are
//     attempt_count of them, at most max_attempts (a Release raises max_attempts with
//     the attempt it gives back, so released runs are allowed for);
//   - every run but the last of a stretch ended in a way that runs the task again
//     (RETRIED, LEASE_EXPIRED); the last one ended the task as its status says, and a
//     DEAD task used up every attempt.
func (h *taskHistory) problems(want store.Status) []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if h.status != want {
		add("status %s, want %s", h.status, want)
	}
	if !h.status.Terminal() {
		add("status %s is not final", h.status)
	}
	successes, runs := 0, 0
	tokens := map[uuid.UUID]bool{}
	for i, r := range h.rows {
		if r.outcome == store.OutcomeReplayed {
			if r.attempt != runs {
				add("a REPLAYED event after %d runs says %d", runs, r.attempt)
			}
			if runs > 0 && h.rows[i-1].outcome == store.OutcomeSucceeded {
				add("replayed after run %d SUCCEEDED", runs)
			}
			runs = 0
			continue
		}
		runs++
		if r.attempt != runs {
			add("run %d of its stretch is numbered %d (a gap or a repeat)", runs, r.attempt)
		}
		if !r.finished || r.outcome == "" {
			add("attempt %d is still open", r.attempt)
		}
		switch {
		case r.token == nil:
			add("attempt %d has no lease token", r.attempt)
		case tokens[*r.token]:
			add("attempt %d repeats the lease token of an earlier attempt (written twice)", r.attempt)
		default:
			tokens[*r.token] = true
		}
		if r.outcome == store.OutcomeSucceeded {
			successes++
		}
		if i+1 < len(h.rows) && h.rows[i+1].outcome != store.OutcomeReplayed && !runsAgain(r.outcome) {
			add("attempt %d ended %s, yet the task ran again", r.attempt, r.outcome)
		}
	}
	if want := boolInt(h.status == store.StatusSucceeded); successes != want {
		add("%d SUCCEEDED attempts, want %d", successes, want)
	}
	if runs != h.attemptCount {
		add("%d attempt rows since the last replay, but attempt_count %d", runs, h.attemptCount)
	}
	if runs > h.maxAttempts {
		add("%d runs counted, more than max_attempts %d", runs, h.maxAttempts)
	}
	var last store.AttemptOutcome // of the final stretch; "" when it has no run
	if n := len(h.rows); runs > 0 {
		last = h.rows[n-1].outcome
	}
	if !endedAs(h.status, last) {
		add("the last attempt ended %q, which does not leave a task %s", last, h.status)
	}
	if h.status == store.StatusDead && runs != h.maxAttempts {
		add("DEAD after %d of %d attempts", runs, h.maxAttempts)
	}
	return p
}

// runsAgain: an attempt that ended so leaves its task to run again.
func runsAgain(o store.AttemptOutcome) bool {
	return o == store.OutcomeRetried || o == store.OutcomeLeaseExpired
}

// endedAs reports whether a final stretch whose last run ended last ("" = no run) can
// leave a task in status.
func endedAs(status store.Status, last store.AttemptOutcome) bool {
	switch status {
	case store.StatusSucceeded:
		return last == store.OutcomeSucceeded
	case store.StatusFailed:
		return last == store.OutcomeFailed
	case store.StatusDead: // the reaper records the expired lease of a last attempt
		return last == store.OutcomeDead || last == store.OutcomeLeaseExpired
	case store.StatusCanceled: // or canceled while it waited: no run, or a retry
		return last != store.OutcomeSucceeded && last != store.OutcomeFailed && last != store.OutcomeDead
	}
	return true // not final: reported above
}

// Problems checks the tasks of want (task id -> the status it should have ended in)
// and returns the problems by task; a task of want missing from the database is one.
// With all, a task of the database not in want is one too (nothing was created twice).
func Problems(ctx context.Context, pool *pgxpool.Pool, want map[uuid.UUID]store.Status, all bool) (map[uuid.UUID][]string, error) {
	histories, err := loadHistories(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("load attempt histories: %w", err)
	}
	out := map[uuid.UUID][]string{}
	for id, status := range want {
		h, ok := histories[id]
		if !ok {
			out[id] = []string{"missing from the database"}
			continue
		}
		if p := h.problems(status); len(p) > 0 {
			out[id] = p
		}
	}
	if all {
		for id := range histories {
			if _, ok := want[id]; !ok {
				out[id] = []string{"a task the test did not create"}
			}
		}
	}
	return out, nil
}

// Assert fails t for every task of want whose attempt history is not consistent with
// ending in the status want gives it (see Problems).
func Assert(t testing.TB, pool *pgxpool.Pool, want map[uuid.UUID]store.Status) {
	t.Helper()
	report(t, pool, want, false)
}

// AssertAll is Assert, and fails t for every task of the database that want lacks.
func AssertAll(t testing.TB, pool *pgxpool.Pool, want map[uuid.UUID]store.Status) {
	t.Helper()
	report(t, pool, want, true)
}

func report(t testing.TB, pool *pgxpool.Pool, want map[uuid.UUID]store.Status, all bool) {
	t.Helper()
	problems, err := Problems(context.Background(), pool, want, all)
	if err != nil {
		t.Fatal(err)
	}
	shown := 0
	for id, p := range problems {
		if shown++; shown > 10 {
			t.Errorf("... and %d more tasks with problems", len(problems)-10)
			break
		}
		t.Errorf("task %s: %s", id, strings.Join(p, "; "))
	}
}

// All maps every id to one status.
func All(status store.Status, ids ...[]uuid.UUID) map[uuid.UUID]store.Status {
	out := map[uuid.UUID]store.Status{}
	for _, list := range ids {
		for _, id := range list {
			out[id] = status
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
