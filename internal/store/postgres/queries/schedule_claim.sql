-- ClaimDueSchedules, in one statement (one round trip, atomic by itself):
--
--   due:      locks up to limit due, enabled schedules, earliest first (SKIP LOCKED:
--             concurrent claimers take disjoint sets; a row another claim advanced
--             meanwhile is re-checked and dropped);
--   planned:  their ticks per catch-up policy (rota.schedule_due_ticks, migration 0004;
--             max_runs = MaxCatchUpRuns, scan_limit = CatchUpScanLimit);
--   advanced: next_run_at moves on; last_run_at is the last tick handled and
--             last_enqueued_at now(), when the claim handled a tick (skip may handle none);
--   inserted: one task per tick with the run key schedule:<name>:<unix seconds of the
--             tick> (store.ScheduleRunKey), due at the tick, with the columns and defaults
--             of CreateTasks. ON CONFLICT DO NOTHING on the idempotency index: a tick whose
--             run exists is never enqueued again. The insert trigger wakes the workers.
--
-- Run ids are version-7 UUIDs made here: the 48-bit Unix milliseconds, then a 24-bit
-- counter in tick order (in rand_a and the top of rand_b) so that one claim's runs sort
-- in tick order, then 48 random bits.
--
-- The numbers (the double-braced names) are written into the text (by the adapter, from ints), not passed as
-- parameters: a statement without parameters is planned once per connection, while a
-- parameterized LIMIT makes the generic plan guess 10% of the table (a sequential scan
-- and hash join for the update), so PostgreSQL would re-plan every call (about 1 ms).
--
-- One row per claimed schedule and run (has_run = false, placeholder task columns, for a
-- schedule that enqueued nothing), by schedule name and tick.
WITH due AS MATERIALIZED (
    SELECT id, name, cron_spec, timezone, next_run_at, catch_up,
           task_kind, task_queue, task_payload, task_max_attempts
    FROM rota.schedules
    WHERE enabled AND next_run_at <= now()
    ORDER BY next_run_at
    LIMIT {{limit}}
    FOR UPDATE SKIP LOCKED
), planned AS MATERIALIZED (
    SELECT d.*, p.ticks, p.skipped, p.next_run_at AS new_next_run_at
    FROM due d,
         LATERAL rota.schedule_due_ticks(d.cron_spec, d.timezone, d.next_run_at, d.catch_up, {{max_runs}}, {{scan_limit}}) p
), advanced AS (
    UPDATE rota.schedules s
    SET next_run_at      = p.new_next_run_at,
        last_run_at      = coalesce(p.ticks[cardinality(p.ticks)], s.last_run_at),
        last_enqueued_at = CASE WHEN cardinality(p.ticks) > 0 THEN now() ELSE s.last_enqueued_at END,
        updated_at       = now()
    FROM planned p
    WHERE s.id = p.id
), runs AS MATERIALIZED (
    SELECT p.task_kind, p.task_queue, p.task_payload, p.task_max_attempts, r.tick,
           'schedule:' || p.name || ':' || floor(extract(epoch FROM r.tick))::bigint AS key,
           row_number() OVER (ORDER BY p.name, r.ord) AS seq
    FROM planned p, unnest(p.ticks) WITH ORDINALITY AS r (tick, ord)
), inserted AS (
    INSERT INTO rota.tasks AS t (id, queue, kind, payload, priority, scheduled_for,
                                 max_attempts, idempotency_key, timeout_seconds)
    SELECT (lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
            || '7' || lpad(to_hex((seq >> 12) & 4095), 3, '0')
            || '8' || lpad(to_hex(seq & 4095), 3, '0')
            || right(replace(gen_random_uuid()::text, '-', ''), 12))::uuid,
           task_queue, task_kind, task_payload, 0, tick, task_max_attempts, key, 0
    FROM runs
    ORDER BY key -- concurrent inserts meet existing keys in one order
    ON CONFLICT (idempotency_key)
        WHERE idempotency_key IS NOT NULL AND status NOT IN ('DEAD', 'FAILED', 'CANCELED')
        DO NOTHING
    RETURNING t.*
)
SELECT p.name, p.skipped, p.new_next_run_at, i.id IS NOT NULL AS has_run,
       i.id, coalesce(i.queue, ''), coalesce(i.kind, ''), coalesce(i.payload, '{}'),
       coalesce(i.status, ''), coalesce(i.priority, 0), coalesce(i.scheduled_for, now()),
       coalesce(i.attempt_count, 0), coalesce(i.max_attempts, 0), i.idempotency_key,
       coalesce(i.timeout_seconds, 0), i.worker_id, i.lease_token, i.lease_expires_at,
       i.cancel_requested_at, i.enqueued_at, i.processing_started_at, i.completed_at,
       i.last_error, coalesce(i.created_at, now()), coalesce(i.updated_at, now()), i.output
FROM planned p
LEFT JOIN inserted i ON split_part(i.idempotency_key, ':', 2) = p.name
ORDER BY p.name COLLATE "C", i.scheduled_for
