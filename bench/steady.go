package main

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// steady measures latency under a paced load on s: --producers goroutines insert one job
// per insert call (each its own transaction, as an application inserts), --rate jobs/s
// in total on one shared schedule, for --duration, while the worker runs. Every moment is
// taken on this process's clock, per job (by the seq in its payload):
//
//   - commit: the producer's insert call returned (the insert has committed);
//   - start: the handler was called;
//   - done: the job's success had committed: Rota's Observer.OutcomeRecorded, called
//     after the RecordOutcomes statement that wrote SUCCEEDED returned; River's
//     EventKindJobCompleted subscription, sent by its completer after the UPDATE that
//     wrote `completed` returned.
//
// Pickup is start - commit and end-to-end is done - commit, both clamped at 0 (a handler
// may start before the producer's goroutine sees its insert return: NOTIFY is sent at
// commit).
func (r *runner) steady(ctx context.Context, s system) (Result, error) {
	rate, duration := r.o.Rate, r.o.Duration
	n := max(1, int(float64(rate)*duration.Seconds()))
	res := Result{System: s.Name(), Workload: workloadSteady, Jobs: n, TargetRate: rate}
	if err := r.steadyHistory(ctx, s); err != nil {
		return res, err
	}

	insert, closeProducer, err := s.NewProducer(ctx, r.o.Producers)
	if err != nil {
		return res, err
	}
	defer closeProducer()

	base := time.Now()
	since := func() int64 { return int64(time.Since(base)) }
	insertedAt := make([]atomic.Int64, n+1) // ns since base, by seq (1-based)
	startedAt := make([]atomic.Int64, n+1)
	doneAt := make([]atomic.Int64, n+1)
	var started, done atomic.Int64
	all := make(chan struct{})
	h := hooks{
		started: func(seq int) {
			if seq >= 1 && seq <= n && startedAt[seq].CompareAndSwap(0, since()) {
				started.Add(1)
			}
		},
		succeeded: func(seq int) {
			if seq >= 1 && seq <= n && doneAt[seq].CompareAndSwap(0, since()) {
				if done.Add(1) == int64(n) {
					close(all)
				}
			}
		},
	}
	var before stmtSnap
	var rec *stageRecorder
	var p0 time.Time
	var cpu0, cpu1 cpuSample // from the first insert to the last task done
	if s.IsRota() {
		rec = newStageRecorder(base, n)
		h.claimed = rec.claimed
		h.commitDone = rec.commitDone
		lctx, cancel := context.WithCancel(ctx)
		waitListener, err := rec.listen(lctx, s.database(), "rota_tasks")
		if err != nil {
			cancel()
			return res, fmt.Errorf("listen: %w", err)
		}
		defer waitListener()
		defer cancel()
	}
	stop, err := s.Start(ctx, h)
	if err != nil {
		return res, err
	}
	err = func() error {
		// Let the worker start listening and fetching before the first insert.
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
		before = snapStatements(ctx, s.database())
		interval := time.Second / time.Duration(rate)
		p0, cpu0 = time.Now(), r.cpu.sample()
		var next atomic.Int64
		g, gctx := errgroup.WithContext(ctx)
		for range r.o.Producers {
			g.Go(func() error {
				timer := time.NewTimer(0)
				defer timer.Stop()
				for {
					seq := int(next.Add(1))
					if seq > n {
						return nil
					}
					if wait := time.Until(p0.Add(time.Duration(seq-1) * interval)); wait > 0 {
						timer.Reset(wait)
						select {
						case <-gctx.Done():
							return gctx.Err()
						case <-timer.C:
						}
					}
					if err := insert(gctx, seq); err != nil {
						return fmt.Errorf("insert %d: %w", seq, err)
					}
					insertedAt[seq].Store(since())
				}
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		res.RateAchieved = float64(n) / time.Since(p0).Seconds()
		select {
		case <-all:
			cpu1 = r.cpu.sample()
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(max(60*time.Second, duration)):
			return fmt.Errorf("%d of %d handlers ran and %d succeeded within %s of the last insert", started.Load(), n, done.Load(), max(60*time.Second, duration))
		}
	}()
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("stop: %w", serr)
	}
	if err != nil {
		return res, err
	}
	if rec != nil {
		res.Stages = rec.stages(insertedAt, startedAt, doneAt)
	}
	res.Statements = topStatements(before, snapStatements(ctx, s.database()), 5)
	res.ClientCPUus = float64(cpu1.client-cpu0.client) / float64(time.Microsecond) / float64(n)
	res.ServerCPUus = float64(cpu1.server-cpu0.server) / float64(time.Microsecond) / float64(n)
	pickup := make([]time.Duration, n)
	e2e := make([]time.Duration, n)
	for seq := 1; seq <= n; seq++ {
		in := insertedAt[seq].Load()
		pickup[seq-1] = max(0, time.Duration(startedAt[seq].Load()-in))
		e2e[seq-1] = max(0, time.Duration(doneAt[seq].Load()-in))
	}
	slices.Sort(pickup)
	slices.Sort(e2e)
	res.P50ms, res.P95ms, res.P99ms, res.MaxMs = ms(pct(pickup, 50)), ms(pct(pickup, 95)), ms(pct(pickup, 99)), ms(pickup[n-1])
	res.E2EP50ms, res.E2EP95ms, res.E2EP99ms, res.E2EMaxMs = ms(pct(e2e, 50)), ms(pct(e2e, 95)), ms(pct(e2e, 99)), ms(e2e[n-1])
	return res, nil
}

// steadyHistory empties the job table, then gives it a history: --steady-history jobs
// inserted and worked (an untimed drain), then VACUUM ANALYZE and CHECKPOINT. A queue in
// service has finished jobs in its table and statistics that say so; a table emptied
// and analyzed just before the run has statistics of an empty table, and a generic plan
// cached from them can be far off: River's fetch (JobGetAvailable) then stalls for
// seconds at 1,000 jobs/s (measured: pickup p50 4s, against 1.8ms with
// plan_cache_mode=force_custom_plan or with this history).
func (r *runner) steadyHistory(ctx context.Context, s system) error {
	if r.o.SteadyHistory == 0 {
		if err := s.Reset(ctx); err != nil {
			return err
		}
	} else if _, err := r.drain(ctx, s, r.o.SteadyHistory, drainOpts{}); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := s.Analyze(ctx); err != nil {
		return err
	}
	_, _ = s.database().mon.Exec(ctx, `CHECKPOINT`)
	return nil
}

// pct is the nearest-rank percentile of sorted values.
func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
