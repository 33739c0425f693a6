-- ListTasks with a status, queue or kind filter (list_tasks.sql has none), newest first,
-- bounded by what the page returns however many tasks match nothing: per (queue, kind)
-- pair and status, the newest ids come from one index range (tasks_list, or
-- tasks_status_id with no queue or kind), and the page is the newest of those. A filter
-- on the id order alone walked the whole primary key backwards when few or no tasks
-- matched (status=DEAD&queue=q2&kind=noop).
-- The pairs placeholder is one of the list_tasks_pairs_*.sql fragments (tasks.go): the
-- (queue, kind) pairs to look in, the given ones or, for the one not given, every value
-- that exists (a loose index scan of tasks_list: one probe per distinct value). The
-- pair_match placeholder ties the per-status range to a pair.
-- $1 statuses other than PROCESSING to look in, $2 queue ('' = any), $3 kind ('' = any),
-- $4 cursor: the last id of the previous page (NULL = first page), $5 rows to return,
-- $6 the page's payload budget in bytes (see list_tasks.sql), $7 whether PROCESSING
-- tasks are wanted: they come from tasks_lease_expiry, which holds only them.
-- Run with an unnamed statement so that each call is planned for its own filters.
WITH RECURSIVE {{pairs}},
candidates AS (
    SELECT newest.id
    FROM pairs p
    CROSS JOIN unnest($1::text[]) AS s(status)
    CROSS JOIN LATERAL (
        SELECT t.id
        FROM rota.tasks t
        WHERE t.status <> 'PROCESSING'
          AND t.status = s.status{{pair_match}}
          AND ($4::uuid IS NULL OR t.id < $4::uuid)
        ORDER BY t.id DESC
        LIMIT $5
    ) newest
    UNION ALL
    -- The running tasks are read whole from tasks_lease_expiry (they are few: at most
    -- the workers' concurrency), then sorted. OFFSET 0 keeps the ORDER BY and LIMIT out
    -- of the subquery: with them the planner may walk the primary key backwards looking
    -- for $5 running tasks of the queue, which at 10 million tasks read the whole table
    -- when the queue had fewer running (queue=q2: 30 s).
    (SELECT running.id
     FROM (SELECT t.id
           FROM rota.tasks t
           WHERE $7::boolean
             AND t.status = 'PROCESSING'
             AND ($2::text = '' OR t.queue = $2::text)
             AND ($3::text = '' OR t.kind = $3::text)
             AND ($4::uuid IS NULL OR t.id < $4::uuid)
           OFFSET 0) running
     ORDER BY running.id DESC
     LIMIT $5)
),
newest AS (
    SELECT t.id, t.queue, t.kind, t.payload, t.status, t.priority, t.scheduled_for, t.attempt_count,
           t.max_attempts, t.idempotency_key, t.timeout_seconds, t.worker_id, t.lease_token,
           t.lease_expires_at, t.cancel_requested_at, t.enqueued_at, t.processing_started_at,
           t.completed_at, t.last_error, t.created_at, t.updated_at, t.output
    FROM rota.tasks t
    -- an array, so that the page is always read through the primary key
    WHERE t.id = ANY (ARRAY(SELECT id FROM candidates ORDER BY id DESC LIMIT $5))
)
SELECT id, queue, kind, payload, status, priority, scheduled_for, attempt_count,
       max_attempts, idempotency_key, timeout_seconds, worker_id, lease_token,
       lease_expires_at, cancel_requested_at, enqueued_at, processing_started_at,
       completed_at, last_error, created_at, updated_at, output
FROM (
    SELECT newest.*,
           coalesce(sum(octet_length(payload::text) + coalesce(octet_length(output::text), 0)) OVER (ORDER BY id DESC
               ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING), 0) AS before_previous
    FROM newest
) page
WHERE before_previous < $6
ORDER BY id DESC
