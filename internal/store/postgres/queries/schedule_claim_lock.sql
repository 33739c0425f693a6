-- ClaimDueSchedules, step 1 of 2 (schedules.go): locks up to {{limit}} due, enabled
-- schedules, stripe by stripe, and leaves their ids to step 2 (schedule_claim.sql) in
-- the transaction-local setting rota.claimed_schedules. Returns that setting, how many
-- it locked and whether any is of kind flow (the adapter then starts flows in the
-- transaction before it commits).
--
-- Stripes: id % 64 (index schedules_due_stripes, migration 0026), from this connection's
-- own stripe on (pg_backend_pid), each under a transaction-level advisory lock taken
-- without waiting: concurrent claimers (every server's scheduler) work in different
-- stripes instead of all walking, and failing to lock, the same first due rows. A stripe
-- another claim holds is passed over whole, so a claim that finds every stripe held
-- returns at once. Rows are still locked FOR UPDATE SKIP LOCKED (a row another claim
-- advanced meanwhile is re-checked and dropped), and every tick still fires once: the
-- stripe locks only keep claimers apart. The outer LIMIT stops the walk, and the locking
-- of further stripes, once the batch is full. {{stripes}} is scheduleClaimStripes
-- (schedules.go), 64, which the index's expression repeats; 64 lets up to 64 claimers
-- work at once without meeting (at batch 1 each commit waits for its WAL flush, so
-- throughput there grows with the claimers that work at once).
--
-- Slots: a claim works only while it holds one of {{slots}} slots (advisory locks
-- (1919906913, {{stripes}} + slot), after the stripes' keys, tried from this
-- connection's own slot on, without waiting); with every slot held it returns at once,
-- before any stripe. {{slots}} is scheduleClaimSlots (schedules.go): the claims in
-- flight together lock at most about 200 schedules (2 claims at batch 100, 10 at 20,
-- 200 at batch 1). Claims beyond that only queued for the CPU beside the others and
-- each lasted as long as all of them (BenchmarkClaimSchedules, batch 100: ten claims of
-- 100 at once, each as long as the whole pass); small batches keep the claimers that
-- group their commits' flushes. The EXISTS is a one-time filter above the walk.
--
-- Two statements, not one: a claim that finds nothing (most claims of a pass beside
-- other claimers) never plans or runs step 2, whose plan is what PostgreSQL rebuilds on
-- every connection after an ANALYZE of rota.schedules or rota.tasks. The limit is written
-- into the text, not passed as a parameter (see schedule_claim.sql).
SELECT set_config('rota.claimed_schedules', coalesce(array_agg(d.id)::text, '{}'), true),
       count(*)::int, coalesce(bool_or(d.kind = 'flow'), false)
FROM (
    SELECT s.id, s.kind
    FROM generate_series(0, {{stripes}} - 1) AS g (i),
         LATERAL (SELECT id, kind
                  FROM rota.schedules
                  WHERE enabled AND id % {{stripes}} = (g.i + pg_backend_pid()) % {{stripes}} AND next_run_at <= now()
                  ORDER BY id % {{stripes}}, next_run_at
                  LIMIT {{limit}}
                  FOR UPDATE SKIP LOCKED) s
    WHERE pg_try_advisory_xact_lock(1919906913, (g.i + pg_backend_pid()) % {{stripes}}) -- 'rota', stripe
      AND EXISTS (SELECT FROM generate_series(0, {{slots}} - 1) AS k (i)
                  WHERE pg_try_advisory_xact_lock(1919906913, {{stripes}} + (k.i + pg_backend_pid()) % {{slots}}))
    LIMIT {{limit}}
) d
