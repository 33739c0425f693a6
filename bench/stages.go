package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// pickupStages splits Rota's pickup (insert commit -> handler start) into where the time
// goes, per job, on this process's clock:
//
//   - wake: the commit -> the first rota_tasks notification this harness hears after it,
//     on a LISTEN connection of its own (as the worker's listener would hear it);
//   - wait: the commit -> its claim statement's start (the claim's now(), which the
//     database takes on the same machine's clock): the wake-up and any claim in flight
//     before it;
//   - claim: the claim statement's start -> the claim returned to the worker;
//   - start: the claim returned -> the handler started (the executor's hand-over).
//
// Each is a percentile of its own distribution, so the stages' p50s need not add up to
// the pickup's.
type pickupStages struct {
	WakeP50ms   float64 `json:"wake_p50_ms"`
	WakeP99ms   float64 `json:"wake_p99_ms"`
	WaitP50ms   float64 `json:"wait_p50_ms"`
	WaitP99ms   float64 `json:"wait_p99_ms"`
	ClaimP50ms  float64 `json:"claim_p50_ms"`
	ClaimP99ms  float64 `json:"claim_p99_ms"`
	StartP50ms  float64 `json:"start_p50_ms"`
	StartP99ms  float64 `json:"start_p99_ms"`
	Claims      int     `json:"claims"` // distinct claim statements that returned the jobs
	TasksPerRun float64 `json:"tasks_per_claim"`

	// After the pickup: the handler's start -> its SUCCEEDED committed (the handler is a
	// no-op, so this is the outcome's wait in the committer plus its write), and the
	// outcome writes themselves (Observer.CommitDone: one RecordOutcomes call each).
	DoneP50ms  float64 `json:"done_p50_ms"`
	DoneP99ms  float64 `json:"done_p99_ms"`
	WriteP50ms float64 `json:"write_p50_ms"`
	WriteP99ms float64 `json:"write_p99_ms"`
	Writes     int     `json:"writes"`
	PerWrite   float64 `json:"outcomes_per_write"`
}

// stageRecorder collects the moments pickupStages needs.
type stageRecorder struct {
	base          time.Time
	claimStarted  []atomic.Int64 // ns since base, by seq
	claimReturned []atomic.Int64

	mu       sync.Mutex
	notified []int64 // ns since base, in arrival order
	writes   []time.Duration
	written  int
}

// commitDone records one outcome write of n outcomes that took took.
func (r *stageRecorder) commitDone(n int, took time.Duration) {
	r.mu.Lock()
	r.writes = append(r.writes, took)
	r.written += n
	r.mu.Unlock()
}

func newStageRecorder(base time.Time, n int) *stageRecorder {
	return &stageRecorder{base: base, claimStarted: make([]atomic.Int64, n+1), claimReturned: make([]atomic.Int64, n+1)}
}

func (r *stageRecorder) claimed(seq int, started, returned time.Time) {
	if seq < 1 || seq >= len(r.claimStarted) {
		return
	}
	// started carries no monotonic reading (it came from the database): Sub uses the
	// wall clock, as the database did.
	r.claimStarted[seq].Store(int64(started.Sub(r.base)))
	r.claimReturned[seq].Store(int64(returned.Sub(r.base)))
}

// listen records the arrival of every notification on channel until ctx ends; it
// returns once the connection listens.
func (r *stageRecorder) listen(ctx context.Context, d *database, channel string) (wait func(), err error) {
	conn, err := pgx.ConnectConfig(ctx, d.cfg.ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = conn.Close(context.Background()) }()
		for {
			if _, err := conn.WaitForNotification(ctx); err != nil {
				return
			}
			at := int64(time.Since(r.base))
			r.mu.Lock()
			r.notified = append(r.notified, at)
			r.mu.Unlock()
		}
	}()
	return func() { <-done }, nil
}

// stages computes pickupStages from the commits, handler starts and successes (ns since
// base, by seq).
func (r *stageRecorder) stages(committed, started, succeeded []atomic.Int64) *pickupStages {
	n := len(committed) - 1
	var wake, wait, claim, start, done []time.Duration
	claims := map[int64]bool{}
	r.mu.Lock()
	notified := slices.Clone(r.notified)
	writes, written := slices.Clone(r.writes), r.written
	r.mu.Unlock()
	for seq := 1; seq <= n; seq++ {
		in, cs, cr := committed[seq].Load(), r.claimStarted[seq].Load(), r.claimReturned[seq].Load()
		if cr == 0 {
			continue
		}
		claims[cs] = true
		wait = append(wait, max(0, time.Duration(cs-in)))
		claim = append(claim, max(0, time.Duration(cr-cs)))
		start = append(start, max(0, time.Duration(started[seq].Load()-cr)))
		done = append(done, max(0, time.Duration(succeeded[seq].Load()-started[seq].Load())))
		if i, _ := slices.BinarySearch(notified, in); i < len(notified) {
			wake = append(wake, time.Duration(notified[i]-in))
		}
	}
	if len(wait) == 0 {
		return nil
	}
	p := func(d []time.Duration, q float64) float64 {
		if len(d) == 0 {
			return 0
		}
		slices.Sort(d)
		return ms(pct(d, q))
	}
	return &pickupStages{
		WakeP50ms: p(wake, 50), WakeP99ms: p(wake, 99),
		WaitP50ms: p(wait, 50), WaitP99ms: p(wait, 99),
		ClaimP50ms: p(claim, 50), ClaimP99ms: p(claim, 99),
		StartP50ms: p(start, 50), StartP99ms: p(start, 99),
		Claims: len(claims), TasksPerRun: float64(len(wait)) / float64(len(claims)),
		DoneP50ms: p(done, 50), DoneP99ms: p(done, 99),
		WriteP50ms: p(writes, 50), WriteP99ms: p(writes, 99),
		Writes: len(writes), PerWrite: float64(written) / float64(max(1, len(writes))),
	}
}

func (s *pickupStages) String() string {
	return fmt.Sprintf("stages p50/p99 ms: wake %.2f/%.2f  commit->claim start %.2f/%.2f  claim %.2f/%.2f  claimed->handler %.2f/%.2f  (%d claims, %.1f jobs each)"+
		"\n        after: handler->SUCCEEDED %.2f/%.2f  outcome write %.2f/%.2f  (%d writes, %.1f outcomes each)",
		s.WakeP50ms, s.WakeP99ms, s.WaitP50ms, s.WaitP99ms, s.ClaimP50ms, s.ClaimP99ms, s.StartP50ms, s.StartP99ms, s.Claims, s.TasksPerRun,
		s.DoneP50ms, s.DoneP99ms, s.WriteP50ms, s.WriteP99ms, s.Writes, s.PerWrite)
}

// stmtStat is one statement's work during a steady run, from pg_stat_statements.
type stmtStat struct {
	Query  string  `json:"query"`
	Calls  int64   `json:"calls"`
	MeanMs float64 `json:"mean_ms"` // execution only: no commit, no round trip
	Rows   int64   `json:"rows"`
	Blocks int64   `json:"blocks"` // shared blocks hit and read
}

type stmtSnap map[int64]stmtStat // by queryid; MeanMs holds the total here

// snapStatements reads pg_stat_statements for db (nil when it is unavailable).
func snapStatements(ctx context.Context, db *database) stmtSnap {
	if ok, _ := enablePGSS(ctx, db); !ok {
		return nil
	}
	rows, err := db.mon.Query(ctx, `
		SELECT s.queryid, left(regexp_replace(s.query, '\s+', ' ', 'g'), 70), s.calls, s.total_exec_time, s.rows,
		       (s.shared_blks_hit + s.shared_blks_read)::bigint
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = current_database()`)
	if err != nil {
		return nil
	}
	defer rows.Close()
	snap := stmtSnap{}
	for rows.Next() {
		var id int64
		var st stmtStat
		if rows.Scan(&id, &st.Query, &st.Calls, &st.MeanMs, &st.Rows, &st.Blocks) == nil {
			snap[id] = st
		}
	}
	return snap
}

// topStatements returns the k statements with the most execution time between from and to.
func topStatements(from, to stmtSnap, k int) []stmtStat {
	if from == nil || to == nil {
		return nil
	}
	var out []stmtStat
	for id, t := range to {
		f := from[id]
		if calls := t.Calls - f.Calls; calls > 0 {
			out = append(out, stmtStat{Query: t.Query, Calls: calls, MeanMs: t.MeanMs - f.MeanMs, Rows: t.Rows - f.Rows, Blocks: t.Blocks - f.Blocks})
		}
	}
	slices.SortFunc(out, func(a, b stmtStat) int { return cmp.Compare(b.MeanMs, a.MeanMs) })
	out = out[:min(k, len(out))]
	for i := range out {
		out[i].MeanMs /= float64(out[i].Calls)
	}
	return out
}

func (s stmtStat) String() string {
	return fmt.Sprintf("%8d calls  %7.3f ms mean  %6.1f rows/call  %7.1f blocks/call  %s", s.Calls, s.MeanMs, float64(s.Rows)/float64(s.Calls), float64(s.Blocks)/float64(s.Calls), s.Query)
}
