-- ClaimDueSchedules, step 2 of 2, in the transaction of step 1 (schedule_claim_lock.sql),
-- which locked the due schedules and named them in rota.claimed_schedules:
--
--   due:      those schedules;
--   state:    for overlap other than allow, whether the current run is unfinished
--             (busy) and a held run waits (waiting); a current_run_id naming no live task
--             counts as finished (the trigger of migration 0017 clears it; this is the
--             belt to its braces);
--   ticks:    the due ticks per catch-up policy (rota.schedule_due_ticks, migration 0004;
--             max_runs = MaxCatchUpRuns, scan_limit = CatchUpScanLimit), once per
--             distinct spec, zone, due time and policy among them;
--   planned:  each schedule's ticks, then which of
--             them run per overlap policy (the rule of store.Overlap, in a CASE: a
--             PL/pgSQL call per schedule cost more): allow all; skip the first unless
--             busy; cancel_other the last; buffer_one the first and the second held when
--             not busy, the first held when busy and none waits, else none. held_from is
--             the ordinal of the first held run (past the end: none). The others are
--             skipped, and counted. cancel_other locks the busy run it will replace
--             (rota.schedule_lock_run: FOR UPDATE SKIP LOCKED); a run another
--             transaction holds (its outcome being written, whose trigger waits for this
--             schedule's row) is not waited for: the schedule is left out, not advanced,
--             due for the next claim. So a claim never waits for a task's lock while it
--             holds a schedule's, and cannot deadlock. For kind flow the lock is
--             rota.schedule_lock_flow (migration 0029): every live task of the running
--             flow and its row, SKIP LOCKED, true only when it got them all; the adapter
--             cancels that flow (flow_to_cancel) once the new one is current;
--   runs:     one row per run with its id and whether it is held (buffer_one: not when
--             the tick before it has its run already, after a restore: nothing would
--             release it; rota.schedule_run_key_taken, migration 0049); kind
--             task only: a kind flow schedule's planned ticks come back in flow_ticks,
--             and the adapter starts their flows in this statement's transaction
--             (schedules.go, migrations 0021 and 0029), then names the newest due one
--             its current run and a held one (held_from, buffer_one: created, not
--             started) its waiting run;
--   inserted: one task per tick with the run key schedule:<name>:<unix seconds of the
--             tick> (store.ScheduleRunKey), due at the tick (a held run at 9999-12-31,
--             store.HeldRunAt), with the columns and defaults of CreateTasks. ON CONFLICT
--             DO NOTHING on the idempotency index: a tick whose run exists is never
--             enqueued again (and does not become the current run). The insert trigger
--             wakes the workers.
--   latest:   per schedule, the newest due run and the held run that were inserted;
--   advanced: next_run_at moves on; last_run_at is the last tick handled and
--             last_enqueued_at now(), when the claim handled a tick (skip may handle none);
--             current_run_id / waiting_run_id name the new runs; skipped ticks counted.
--             Under cancel_other, replacing a current run fires the trigger
--             schedules_cancel_replaced (migration 0017), which cancels it as CancelTask
--             does (PENDING or ENQUEUED -> CANCELED, PROCESSING gets cancel_requested_at
--             and a rota_cancel notification), on the row planned locked (a trigger, not
--             a CTE: see below).
--
-- rota.tasks is not named here but in the INSERT: the run lookups and the lock of
-- cancel_other go through PL/pgSQL functions (migration 0017) called only for schedules
-- that need them. Every relation and lock mode a statement names is locked by every
-- execution, and with rota.tasks read and locked here too, BenchmarkClaimSchedules (50
-- claimers, all allow) lost a quarter of its throughput; through the functions it is
-- within a few percent of the statement before overlap.
--
-- Run ids are version-7 UUIDs made here: the 48-bit Unix milliseconds, then a 24-bit
-- counter in tick order (in rand_a and the top of rand_b) so that one claim's runs sort
-- in tick order, then 48 random bits.
--
-- The numbers (the double-braced names; and the limit of step 1) are written into the
-- text (by the adapter, from ints), not passed as parameters: a statement without
-- parameters is planned once per connection, while a parameterized LIMIT makes the
-- generic plan guess 10% of the table (a sequential scan and hash join for the update),
-- so PostgreSQL would re-plan every call (about 1 ms). The schedules come from a
-- setting for the same reason.
--
-- One row per claimed schedule and run (has_run = false, placeholder task columns, for a
-- schedule that enqueued nothing), by schedule name and tick.
WITH due AS MATERIALIZED (
    -- The schedules step 1 locked in this transaction (schedule_claim_lock.sql), by their
    -- ids: the setting is read and parsed once, in the function scan. (As a filter,
    -- id = ANY (current_setting(...)::bigint[]), a plan that scans the table, which the
    -- planner chose after an ANALYZE, parsed the whole array again for every row it
    -- read: a sixth of the server's CPU in BenchmarkClaimSchedules, and growing with the
    -- table.)
    SELECT s.id, s.name, s.kind, s.cron_spec, s.timezone, s.next_run_at, s.catch_up, s.overlap,
           s.current_run_id, s.waiting_run_id, s.task_kind, s.task_queue, s.task_payload,
           s.task_max_attempts, s.flow_template
    FROM unnest(nullif(current_setting('rota.claimed_schedules', true), '')::bigint[]) AS c (id)
         JOIN rota.schedules s ON s.id = c.id
), state AS MATERIALIZED (
    -- One primary-key probe per run, none for allow (CASE), through a function: see
    -- "rota.tasks is not named here" above.
    SELECT d.*,
           CASE WHEN d.overlap = 'allow' OR d.current_run_id IS NULL THEN false
                WHEN d.kind = 'flow' THEN coalesce(rota.schedule_flow_running(d.current_run_id), false)
                ELSE coalesce(rota.schedule_run_status(d.current_run_id) IN ('PENDING', 'ENQUEUED', 'PROCESSING'), false) END AS busy,
           CASE WHEN d.overlap = 'allow' OR d.waiting_run_id IS NULL THEN false
                WHEN d.kind = 'flow' THEN coalesce(rota.schedule_flow_running(d.waiting_run_id), false)
                ELSE coalesce(rota.schedule_run_status(d.waiting_run_id) = 'PENDING', false) END AS waiting
    FROM due d
), ticks AS MATERIALIZED (
    -- Once per spec, zone, due time and catch-up policy, not per schedule: schedules due
    -- together mostly share them (every "0 * * * *" of a zone is due at the same hour),
    -- and the function is the claim's costliest part per call (PL/pgSQL, the spec parsed
    -- each time). now() is one value in a statement, so the result is the same.
    SELECT k.cron_spec, k.timezone, k.next_run_at, k.catch_up, p.ticks, p.skipped, p.next_run_at AS new_next_run_at
    FROM (SELECT DISTINCT cron_spec, timezone, next_run_at, catch_up FROM due) k,
         LATERAL rota.schedule_due_ticks(k.cron_spec, k.timezone, k.next_run_at, k.catch_up, {{max_runs}}, {{scan_limit}}) p
), planned AS MATERIALIZED (
    SELECT s.*, o.run_ticks AS ticks, o.held_from,
           p.skipped + cardinality(p.ticks) - cardinality(o.run_ticks) AS skipped,
           p.new_next_run_at
    -- (LEFT: every schedule has its ticks, and the planner then counts one row per
    -- schedule, not one in all, which made the update below a nested loop over pairs)
    FROM state s
         LEFT JOIN ticks p ON (p.cron_spec, p.timezone, p.next_run_at, p.catch_up)
                            = (s.cron_spec, s.timezone, s.next_run_at, s.catch_up),
         LATERAL (SELECT CASE
                      WHEN s.overlap = 'allow' OR cardinality(p.ticks) = 0 THEN p.ticks
                      WHEN s.overlap = 'skip' THEN CASE WHEN s.busy THEN '{}' ELSE p.ticks[1:1] END
                      WHEN s.overlap = 'cancel_other' THEN p.ticks[cardinality(p.ticks):cardinality(p.ticks)]
                      WHEN s.busy THEN CASE WHEN s.waiting THEN '{}' ELSE p.ticks[1:1] END
                      ELSE p.ticks[1:2] END AS run_ticks,
                  CASE WHEN s.overlap <> 'buffer_one' THEN cardinality(p.ticks) + 1
                       WHEN s.busy THEN 1 ELSE 2 END AS held_from) o
    WHERE CASE WHEN s.overlap <> 'cancel_other' OR NOT s.busy OR cardinality(p.ticks) = 0 THEN true
               WHEN s.kind = 'flow' THEN rota.schedule_lock_flow(s.current_run_id)
               ELSE rota.schedule_lock_run(s.current_run_id) END
), runs AS MATERIALIZED (
    SELECT p.task_kind, p.task_queue, p.task_payload, p.task_max_attempts, r.tick,
           CASE WHEN r.ord < p.held_from THEN false
                WHEN p.held_from = 1 THEN true -- held behind the busy current run
                ELSE NOT rota.schedule_run_key_taken(
                    'schedule:' || p.name || ':' || floor(extract(epoch FROM p.ticks[1]))::bigint) END AS held,
           'schedule:' || p.name || ':' || floor(extract(epoch FROM r.tick))::bigint AS key,
           (lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
            || '7' || lpad(to_hex(((row_number() OVER w) >> 12) & 4095), 3, '0')
            || '8' || lpad(to_hex((row_number() OVER w) & 4095), 3, '0')
            || right(replace(gen_random_uuid()::text, '-', ''), 12))::uuid AS run_id
    FROM planned p, unnest(p.ticks) WITH ORDINALITY AS r (tick, ord)
    WHERE p.kind = 'task'
    WINDOW w AS (ORDER BY p.name, r.ord)
), inserted AS (
    INSERT INTO rota.tasks AS t (id, queue, kind, payload, priority, scheduled_for,
                                 max_attempts, idempotency_key, timeout_seconds)
    SELECT run_id, task_queue, task_kind, task_payload, 0,
           CASE WHEN held THEN '9999-12-31 00:00:00+00'::timestamptz ELSE tick END,
           task_max_attempts, key, 0
    FROM runs
    ORDER BY key -- concurrent inserts meet existing keys in one order
    ON CONFLICT (idempotency_key)
        WHERE idempotency_key IS NOT NULL AND status NOT IN ('DEAD', 'FAILED', 'CANCELED')
        DO NOTHING
    RETURNING t.*
), latest AS (
    -- From what was inserted: a tick whose run existed changes neither.
    SELECT split_part(i.idempotency_key, ':', 2) AS name,
           (array_agg(i.id ORDER BY i.scheduled_for DESC)
                FILTER (WHERE i.scheduled_for <> '9999-12-31 00:00:00+00'))[1] AS current_id,
           (array_agg(i.id) FILTER (WHERE i.scheduled_for = '9999-12-31 00:00:00+00'))[1] AS waiting_id
    FROM inserted i
    GROUP BY 1
), advanced AS (
    UPDATE rota.schedules s
    SET next_run_at      = p.new_next_run_at,
        last_run_at      = coalesce(p.ticks[cardinality(p.ticks)], s.last_run_at),
        last_enqueued_at = CASE WHEN cardinality(p.ticks) > 0 THEN now() ELSE s.last_enqueued_at END,
        current_run_id   = coalesce(l.current_id, s.current_run_id),
        waiting_run_id   = coalesce(l.waiting_id, s.waiting_run_id),
        skipped_ticks    = s.skipped_ticks + p.skipped,
        last_skipped_at  = CASE WHEN p.skipped > 0 THEN now() ELSE s.last_skipped_at END,
        updated_at       = now()
    FROM planned p LEFT JOIN latest l ON l.name = p.name
    WHERE s.id = p.id
)
SELECT p.name, p.skipped, p.new_next_run_at, i.id IS NOT NULL AS has_run,
       CASE WHEN p.kind = 'flow' THEN p.ticks END AS flow_ticks, p.flow_template, coalesce(p.held_from, 0),
       CASE WHEN p.kind = 'flow' AND p.overlap = 'cancel_other' AND p.busy AND cardinality(p.ticks) > 0
            THEN p.current_run_id END AS flow_to_cancel,
       i.id, coalesce(i.queue, ''), coalesce(i.kind, ''), coalesce(i.payload, '{}'),
       coalesce(i.status, ''), coalesce(i.priority, 0), coalesce(i.scheduled_for, now()),
       coalesce(i.attempt_count, 0), coalesce(i.max_attempts, 0), i.idempotency_key,
       coalesce(i.timeout_seconds, 0), i.worker_id, i.lease_token, i.lease_expires_at,
       i.cancel_requested_at, i.enqueued_at, i.processing_started_at, i.completed_at,
       i.last_error, coalesce(i.created_at, now()), coalesce(i.updated_at, now()), i.output, i.group_key
FROM planned p
LEFT JOIN inserted i ON split_part(i.idempotency_key, ':', 2) = p.name
ORDER BY p.name COLLATE "C", i.scheduled_for
