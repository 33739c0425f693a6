-- ListTasks: newest first (ids are time-ordered), one page plus one row to tell whether
-- another page follows. $1 statuses (NULL = any), $2 queue ('' = any), $3 kind ('' = any),
-- $4 cursor: the last id of the previous page (NULL = first page), $5 rows to return,
-- $6 the page's payload budget in bytes (payloads and outputs, as JSON text): rows stop
-- once those before the previous row reach it, so at most one row past the budget comes back (store.ListPage cuts the
-- page there and knows another follows). The rows past it are still read, but never
-- sent: a page of large payloads stays a bounded response.
-- Run with an unnamed statement so that each call is planned for its own filters.
SELECT id, queue, kind, payload, status, priority, scheduled_for, attempt_count,
       max_attempts, idempotency_key, timeout_seconds, worker_id, lease_token,
       lease_expires_at, cancel_requested_at, enqueued_at, processing_started_at,
       completed_at, last_error, created_at, updated_at, output
FROM (
    SELECT newest.*,
           coalesce(sum(octet_length(payload::text) + coalesce(octet_length(output::text), 0)) OVER (ORDER BY id DESC
               ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING), 0) AS before_previous
    FROM (
        SELECT id, queue, kind, payload, status, priority, scheduled_for, attempt_count,
               max_attempts, idempotency_key, timeout_seconds, worker_id, lease_token,
               lease_expires_at, cancel_requested_at, enqueued_at, processing_started_at,
               completed_at, last_error, created_at, updated_at, output
        FROM rota.tasks
        WHERE ($1::text[] IS NULL OR status = ANY ($1::text[]))
          AND ($2::text = '' OR queue = $2::text)
          AND ($3::text = '' OR kind = $3::text)
          AND ($4::uuid IS NULL OR id < $4::uuid)
        ORDER BY id DESC
        LIMIT $5
    ) newest
) page
WHERE before_previous < $6
ORDER BY id DESC
