package main

import (
	"context"
	"fmt"
	"time"
)

// blockStats are a pressure drain's blocks per task over a window of 10% of its tasks
// near its start (from 1% to 11% of the handlers started) and one near its end (89% to
// 99%). Every edge is taken while the worker is busy, so the statistics' flush delay
// (below) shifts all four alike.
type blockStats struct {
	// Claim*: the claim statement's shared blocks (hit + read, of every relation it
	// touches: indexes and heap) per task it claimed, from pg_stat_statements (0 when
	// unavailable). Exact: pg_stat_statements counts at the end of each statement.
	ClaimFirst float64 `json:"claim_blocks_per_task_first,omitempty"`
	ClaimLast  float64 `json:"claim_blocks_per_task_last,omitempty"`
	// ClaimStatements is how many pg_stat_statements entries matching the claim's
	// pattern (ClaimQuery) ran during the windows: 1 per claim statement the system ran;
	// more says the pattern caught something else.
	ClaimStatements int `json:"claim_statements,omitempty"`
	// Index*: index blocks (idx_blks_hit + idx_blks_read of pg_statio_user_indexes) of
	// the job tables' indexes per task started, every statement included (claims,
	// outcomes). Approximate: busy backends flush their counters to the statistics about
	// once a second, so a window should last several seconds (a 1M-job drain's do).
	IndexFirst float64 `json:"index_blocks_per_task_first"`
	IndexLast  float64 `json:"index_blocks_per_task_last"`
	// ClaimIndex*: the same for the index the claim walks (system.ClaimIndex).
	ClaimIndex      string  `json:"claim_index"`
	ClaimIndexFirst float64 `json:"claim_index_blocks_per_task_first"`
	ClaimIndexLast  float64 `json:"claim_index_blocks_per_task_last"`
	// Indexes: the same per index, [first, last].
	Indexes map[string][2]float64 `json:"indexes"`
}

// blockSnap is the counters at one moment of a drain.
type blockSnap struct {
	started              int64           // handlers started by then
	claimBlocks, claimed int64           // pg_stat_statements: the claim's blocks and rows
	claimCalls           map[int64]int64 // calls by queryid of the entries matched
	index                map[string]int64
}

// blockSampler takes snapshot i when blockEdges[i] of the drain's handlers have started.
type blockSampler struct {
	db      *database
	s       system
	pgss    bool
	n       int64
	started func() int64
	snaps   [4]*blockSnap
}

var blockEdges = [4]float64{0.01, 0.11, 0.89, 0.99}

func newBlockSampler(db *database, s system, pgss bool, n int, started func() int64) *blockSampler {
	return &blockSampler{db: db, s: s, pgss: pgss, n: int64(n), started: started}
}

// run takes the snapshots as the drain reaches their edges, until stop is closed.
func (b *blockSampler) run(ctx context.Context, stop <-chan struct{}) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < len(b.snaps); {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if float64(b.started()) >= blockEdges[i]*float64(b.n) {
			if b.take(ctx, i) != nil {
				return
			}
			i++
		}
	}
}

func (b *blockSampler) take(ctx context.Context, i int) error {
	snap := &blockSnap{started: b.started(), index: map[string]int64{}}
	if b.pgss {
		if err := b.takeClaim(ctx, snap); err != nil {
			return err
		}
	}
	rows, err := b.db.mon.Query(ctx, `
		SELECT indexrelid::regclass::text, (coalesce(idx_blks_hit, 0) + coalesce(idx_blks_read, 0))::bigint
		FROM pg_statio_user_indexes WHERE relid = ANY($1::text[]::regclass[])`, b.s.Tables())
	if err != nil {
		return fmt.Errorf("pg_statio_user_indexes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var blocks int64
		if err := rows.Scan(&name, &blocks); err != nil {
			return err
		}
		snap.index[name] = blocks
	}
	if err := rows.Err(); err != nil {
		return err
	}
	b.snaps[i] = snap
	return nil
}

// takeClaim reads the claim statement's counters: every pg_stat_statements entry of this
// database whose text matches the system's ClaimQuery.
func (b *blockSampler) takeClaim(ctx context.Context, snap *blockSnap) error {
	rows, err := b.db.mon.Query(ctx, `
		SELECT s.queryid, s.calls, (s.shared_blks_hit + s.shared_blks_read)::bigint, s.rows
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = current_database() AND s.query ~ $1`, b.s.ClaimQuery())
	if err != nil {
		return fmt.Errorf("pg_stat_statements: %w", err)
	}
	defer rows.Close()
	snap.claimCalls = map[int64]int64{}
	for rows.Next() {
		var id, calls, blocks, n int64
		if err := rows.Scan(&id, &calls, &blocks, &n); err != nil {
			return err
		}
		snap.claimCalls[id] = calls
		snap.claimBlocks += blocks
		snap.claimed += n
	}
	return rows.Err()
}

// stats divides the counters' growth over the first window (snapshots 0 to 1) and the
// last (2 to 3) by the tasks in it. A window whose snapshots are missing (a drain too
// short to sample) reads 0.
func (b *blockSampler) stats() *blockStats {
	st := &blockStats{Indexes: map[string][2]float64{}}
	window := func(from, to *blockSnap) (claim, index float64, perIndex map[string]float64) {
		perIndex = map[string]float64{}
		if from == nil || to == nil {
			return 0, 0, perIndex
		}
		if d := to.claimed - from.claimed; d > 0 {
			claim = float64(to.claimBlocks-from.claimBlocks) / float64(d)
		}
		tasks := float64(max(1, to.started-from.started))
		var total int64
		for name, v := range to.index {
			total += v - from.index[name]
			perIndex[name] = float64(v-from.index[name]) / tasks
		}
		return claim, float64(total) / tasks, perIndex
	}
	if b.snaps[0] != nil && b.snaps[3] != nil {
		for id, calls := range b.snaps[3].claimCalls {
			if calls > b.snaps[0].claimCalls[id] {
				st.ClaimStatements++
			}
		}
	}
	var first, last map[string]float64
	st.ClaimFirst, st.IndexFirst, first = window(b.snaps[0], b.snaps[1])
	st.ClaimLast, st.IndexLast, last = window(b.snaps[2], b.snaps[3])
	for name := range first {
		st.Indexes[name] = [2]float64{first[name], last[name]}
	}
	for name := range last {
		st.Indexes[name] = [2]float64{first[name], last[name]}
	}
	st.ClaimIndex = b.s.ClaimIndex()
	st.ClaimIndexFirst, st.ClaimIndexLast = first[st.ClaimIndex], last[st.ClaimIndex]
	return st
}

// enablePGSS creates the pg_stat_statements extension in db and checks that it works:
// the server must load the module (shared_preload_libraries); scripts/pg-stock.sh
// configures that. It returns why not when it does not.
func enablePGSS(ctx context.Context, db *database) (bool, string) {
	if _, err := db.mon.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return false, err.Error()
	}
	if _, err := db.mon.Exec(ctx, `SELECT count(*) FROM pg_stat_statements`); err != nil {
		return false, err.Error()
	}
	return true, ""
}
