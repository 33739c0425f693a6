-- CreateTasks: inserts a batch in one statement. A task whose idempotency key names a
-- live (or succeeded) task is not inserted; that task is returned instead.
--
-- $1..$10 hold one element per task: id, queue, kind, payload, priority, scheduled_for
-- (NULL = now + delay), max_attempts, idempotency_key ('' = none), timeout_seconds,
-- delay_us (microseconds; a delay is added to the database's now(), never to a process
-- clock: DESIGN.md section 9), trace_context (NULL = not traced), group_key ('' =
-- none). The caller
-- removes repeated keys (one statement may not touch a row twice) and sorts the keyed
-- tasks by key (concurrent batches then lock existing rows in the same order).
--
-- Why DO UPDATE and not DO NOTHING: the no-op update locks the conflicting row and
-- returns its latest committed version, even one committed by a concurrent create after
-- this statement took its snapshot, which a separate SELECT could not see. And if that
-- row leaves the unique index meanwhile (it became DEAD, FAILED or CANCELED), PostgreSQL
-- retries the insert itself. One statement, so no transaction is needed.
--
-- A batch without keys runs without the ON CONFLICT clause (queries.go,
-- sqlCreateTasksKeyless): none of its rows can conflict (a NULL key is outside
-- tasks_idempotency_key), and an insert with an arbiter index is a speculative insertion
-- for every row, keyed or not: a lock taken and released per row and a second WAL record
-- per row to confirm it (6 records per task instead of 5).
--
-- "inserted" tells a new row from an existing one: a row this statement inserted has no
-- xmax, while the conflict path updates (and so marks) the existing row. River's bulk
-- insert relies on the same property.
--
-- $13: the caller wakes the workers itself once this statement has committed
-- (CreateTasks, on its own: notifyCreated). The insert trigger's NOTIFY is then skipped
-- (rota.notify_after_commit, migration 0027): a transaction that notifies holds
-- PostgreSQL's one notify lock through its commit's WAL flush, so concurrent inserts
-- committed one at a time. Inside a caller's transaction (CreateTasksTx) it is false and
-- the trigger notifies at the caller's commit.
WITH input AS (
    SELECT *
    FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::int[],
                $6::timestamptz[], $7::int[], $8::text[], $9::int[], $10::bigint[], $11::jsonb[], $12::text[])
        AS u (id, queue, kind, payload, priority, scheduled_for, max_attempts,
              idempotency_key, timeout_seconds, delay_us, trace_context, group_key)
)
INSERT INTO rota.tasks AS t (id, queue, kind, payload, priority, scheduled_for,
                             max_attempts, idempotency_key, timeout_seconds, trace_context,
                             group_key)
SELECT id, queue, kind, payload, priority, coalesce(scheduled_for, now() + delay_us * interval '1 microsecond'),
       max_attempts, nullif(idempotency_key, ''), timeout_seconds, trace_context,
       nullif(group_key, '')
FROM input
-- A scalar subquery, so set_config runs once per statement (an InitPlan), not per row.
WHERE NOT $13::boolean OR (SELECT set_config('rota.notify_after_commit', 'on', true)) = 'on'
ON CONFLICT (idempotency_key)
    WHERE idempotency_key IS NOT NULL AND status NOT IN ('DEAD', 'FAILED', 'CANCELED')
    DO UPDATE SET idempotency_key = excluded.idempotency_key
RETURNING t.xmax = 0 AS inserted,
          t.id, t.queue, t.kind, t.payload, t.status, t.priority, t.scheduled_for,
          t.attempt_count, t.max_attempts, t.idempotency_key, t.timeout_seconds,
          t.worker_id, t.lease_token, t.lease_expires_at, t.cancel_requested_at,
          t.enqueued_at, t.processing_started_at, t.completed_at, t.last_error,
          t.created_at, t.updated_at, t.output, t.group_key
