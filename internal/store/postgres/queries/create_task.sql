-- CreateTasks of a batch of one: create_tasks.sql for a single task, its columns as
-- scalar parameters instead of one-element arrays. $1..$12 are create_tasks.sql's
-- elements (id, queue, kind, payload, priority, scheduled_for (NULL = now + delay),
-- max_attempts, idempotency_key ('' = none), timeout_seconds, delay_us, trace_context,
-- group_key ('' = none)), $13 its notifyAfter; the rows, the idempotency clause (left out
-- for a task without a key, as there) and what is returned are the same.
--
-- Why a statement of its own: one task per call is how most producers enqueue, and
-- there the statement's fixed cost is the whole cost. Unnesting twelve arrays of one
-- element through a CTE took about a fifth of the statement's execution (pgbench, 8
-- clients, stock cluster: 0.111-0.118 ms mean against 0.091-0.096 for this text;
-- docs/performance.md "Session 13"), and the client encodes twelve arrays.
INSERT INTO rota.tasks AS t (id, queue, kind, payload, priority, scheduled_for,
                             max_attempts, idempotency_key, timeout_seconds, trace_context,
                             group_key)
SELECT $1::uuid, $2::text, $3::text, $4::jsonb, $5::int,
       coalesce($6::timestamptz, now() + $10::bigint * interval '1 microsecond'),
       $7::int, nullif($8::text, ''), $9::int, $11::jsonb, nullif($12::text, '')
-- A scalar subquery, so set_config runs once per statement (an InitPlan).
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
