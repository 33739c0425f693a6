-- CreateTasks of a batch of one: create_tasks.sql for a single task, its columns as
-- scalar parameters instead of one-element arrays. $1..$12 are create_tasks.sql's
-- elements (id, queue, kind, payload, priority, scheduled_for (NULL = now + delay),
-- max_attempts, idempotency_key ('' = none), timeout_seconds, delay_us, trace_context,
-- group_key ('' = none)), $13 its notifyAfter; the rows, the idempotency clause (left out
-- for a task without a key, as there) and what is returned are the same: queries.go
-- appends create_tasks.sql's text from its ON CONFLICT clause to its end.
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
