-- CancelTask: a PENDING or ENQUEUED task is CANCELED at once; a PROCESSING task gets
-- cancel_requested_at (kept from the first request) and a 'rota_cancel' notification
-- carrying its id, so that the owning worker cancels the handler and records CANCELED.
-- No row: the task is unknown or already finished (the caller looks at which).
WITH canceled AS (
    UPDATE rota.tasks
    SET status = CASE WHEN status = 'PROCESSING' THEN status ELSE 'CANCELED' END,
        completed_at = CASE WHEN status = 'PROCESSING' THEN completed_at ELSE now() END,
        cancel_requested_at = CASE WHEN status = 'PROCESSING' THEN coalesce(cancel_requested_at, now())
                                   ELSE cancel_requested_at END,
        updated_at = now()
    WHERE id = $1
      AND status IN ('PENDING', 'ENQUEUED', 'PROCESSING')
    RETURNING id, queue, kind, payload, status, priority, scheduled_for, attempt_count,
              max_attempts, idempotency_key, timeout_seconds, worker_id, lease_token,
              lease_expires_at, cancel_requested_at, enqueued_at, processing_started_at,
              completed_at, last_error, created_at, updated_at, output
)
SELECT c.*
FROM canceled c
LEFT JOIN LATERAL (
    SELECT pg_notify('rota_cancel', c.id::text)
    WHERE c.status = 'PROCESSING'
) AS notified ON true
