package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// progressEvery is how often a long backlog insert or drain prints a progress line.
const progressEvery = 5 * time.Second

// drainOpts are the pressure workload's additions to a drain.
type drainOpts struct {
	// mode: "" or modePlain (nothing added), modeHeldXact, modeAutovacuumOff.
	mode string
	// blocks: sample the claim's and the indexes' block counts (blockSampler).
	blocks bool
	pgss   bool
}

// The pressure workload's modes.
const (
	modePlain         = "plain"
	modeHeldXact      = "held-xact"
	modeAutovacuumOff = "autovacuum-off"
)

var pressureModes = []string{modePlain, modeHeldXact, modeAutovacuumOff}

// drain measures one drain of n jobs on s: insert the backlog (untimed), VACUUM ANALYZE,
// CHECKPOINT, then time from starting the worker until every job has succeeded in the
// database.
func (r *runner) drain(ctx context.Context, s system, n int, do drainOpts) (Result, error) {
	res := Result{System: s.Name(), Workload: workloadDrain, Jobs: n}
	if do.mode != "" {
		res.Workload, res.Mode = workloadPressure, do.mode
	}
	db := s.database()
	if err := s.Reset(ctx); err != nil {
		return res, err
	}
	if err := r.insertBacklog(ctx, s, n); err != nil {
		return res, err
	}
	if err := s.Analyze(ctx); err != nil {
		return res, err
	}
	_, _ = db.mon.Exec(ctx, `CHECKPOINT`) // needs superuser or pg_checkpoint; else skipped

	if do.mode == modeAutovacuumOff {
		restore, err := setAutovacuum(ctx, db, s.Tables(), false)
		if err != nil {
			return res, err
		}
		defer restore()
	}
	if do.mode == modeHeldXact {
		release, err := holdTransaction(ctx, db)
		if err != nil {
			return res, err
		}
		defer release()
	}

	var started atomic.Int64
	all := make(chan struct{})
	fn := func(int) {
		if started.Add(1) == int64(n) {
			close(all)
		}
	}
	var sampler *blockSampler
	if do.blocks {
		sampler = newBlockSampler(db, s, do.pgss, n, started.Load)
	}
	deadline := time.Now().Add(max(2*time.Minute, time.Duration(n)*5*time.Millisecond))
	ckpt0, av0 := checkpoints(ctx, db), autovacuums(ctx, db, s.Tables())
	t0, cpu0 := time.Now(), r.cpu.sample()
	stop, err := s.Start(ctx, hooks{started: fn})
	if err != nil {
		return res, err
	}
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	if sampler != nil {
		sampling.Go(func() { sampler.run(ctx, stopSampling) })
	}
	err = func() error {
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-all:
				// Drained means committed: wait until the database has every job succeeded.
				return waitCompleted(ctx, s, n, deadline)
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
				r.logf("%s: %d of %d handlers started after %.0fs", s.Name(), started.Load(), n, time.Since(t0).Seconds())
				if time.Now().After(deadline) {
					return fmt.Errorf("only %d of %d handlers ran before the deadline", started.Load(), n)
				}
			}
		}
	}()
	elapsed, cpu1 := time.Since(t0), r.cpu.sample()
	res.Checkpoints = checkpoints(ctx, db) - ckpt0
	res.Autovacuums = autovacuums(ctx, db, s.Tables()) - av0
	close(stopSampling)
	sampling.Wait()
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("stop: %w", serr)
	}
	if err != nil {
		return res, err
	}
	if sampler != nil {
		res.Blocks = sampler.stats()
	}
	res.Seconds = elapsed.Seconds()
	res.TasksPerSec = float64(n) / elapsed.Seconds()
	perTask := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(n) }
	res.ClientCPUus = perTask(cpu1.client - cpu0.client)
	res.ServerCPUus = perTask(cpu1.server - cpu0.server)
	return res, nil
}

// insertBacklog inserts the drain's backlog, printing progress for a long one.
func (r *runner) insertBacklog(ctx context.Context, s system, n int) error {
	t0 := time.Now()
	var mu sync.Mutex
	last := t0
	err := s.InsertBacklog(ctx, n, func(done int) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) >= progressEvery {
			last = time.Now()
			r.logf("%s: inserted %d of %d backlog jobs (%.0f/s)", s.Name(), done, n, float64(done)/time.Since(t0).Seconds())
		}
	})
	if err == nil && time.Since(t0) >= progressEvery {
		r.logf("%s: inserted %d backlog jobs in %.1fs (%.0f/s)", s.Name(), n, time.Since(t0).Seconds(), float64(n)/time.Since(t0).Seconds())
	}
	return err
}

func waitCompleted(ctx context.Context, s system, n int, deadline time.Time) error {
	for {
		done, err := s.Completed(ctx)
		if err != nil {
			return err
		}
		if done >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d jobs completed before the deadline", done, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// setAutovacuum sets autovacuum_enabled on tables and returns a function that resets it.
func setAutovacuum(ctx context.Context, db *database, tables []string, on bool) (func(), error) {
	for _, t := range tables {
		if _, err := db.mon.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s SET (autovacuum_enabled = %t, toast.autovacuum_enabled = %t)`, t, on, on)); err != nil {
			return nil, fmt.Errorf("autovacuum_enabled on %s: %w", t, err)
		}
	}
	return func() {
		for _, t := range tables {
			_, _ = db.mon.Exec(context.Background(), fmt.Sprintf(`ALTER TABLE %s RESET (autovacuum_enabled, toast.autovacuum_enabled)`, t))
		}
	}, nil
}

// holdTransaction opens a connection to db that holds a transaction with an xid open
// until release: no row version deleted after it began can be vacuumed away in db (the
// xmin horizon of a non-shared table counts only its own database's backends).
func holdTransaction(ctx context.Context, db *database) (release func(), err error) {
	conn, err := pgx.ConnectConfig(ctx, db.cfg.ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, `SELECT txid_current()`)
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("hold a transaction: %w", err)
	}
	return func() {
		_ = tx.Rollback(context.Background())
		_ = conn.Close(context.Background())
	}, nil
}

// pressure runs the pressure workload on the --pressure-on systems: per system, a drain
// of --pressure-drain jobs in each mode (plain, held-xact, autovacuum-off; the order
// reverses on every other pair), each with block samples.
func (r *runner) pressure(ctx context.Context, pair int, systems []system, emit func(Result)) error {
	modes := slices.Clone(pressureModes)
	if pair%2 == 0 {
		slices.Reverse(modes)
	}
	for _, s := range systems {
		if !slices.Contains(r.o.PressureOn, s.Name()) {
			continue
		}
		for _, mode := range modes {
			res, err := r.drain(ctx, s, r.o.PressureDrain, drainOpts{mode: mode, blocks: true, pgss: r.pgss[s.database()]})
			if err != nil {
				return fmt.Errorf("%s, %s: %w", s.Name(), mode, err)
			}
			emit(res)
		}
	}
	return nil
}

// checkpoints is how many checkpoints the server has begun since its statistics were
// reset (0 when they cannot be read).
func checkpoints(ctx context.Context, db *database) int64 {
	var n int64
	_ = db.mon.QueryRow(ctx, `SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter`).Scan(&n)
	return n
}

// autovacuums is how many autovacuums of tables have ended (0 when it cannot be read).
func autovacuums(ctx context.Context, db *database, tables []string) int64 {
	var n int64
	_ = db.mon.QueryRow(ctx, `SELECT coalesce(sum(autovacuum_count), 0)::bigint FROM pg_stat_user_tables
		WHERE relid = ANY($1::text[]::regclass[])`, tables).Scan(&n)
	return n
}
