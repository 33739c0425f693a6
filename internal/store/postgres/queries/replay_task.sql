-- ReplayTask: DEAD, FAILED or CANCELED -> PENDING with a fresh attempt budget, due now.
-- The tasks_record_transition trigger writes the REPLAYED attempt row and marks the open
-- dead letters replayed. No row: the task is unknown or not in a replayable status.
UPDATE rota.tasks
SET status = 'PENDING',
    attempt_count = 0,
    scheduled_for = now(),
    last_error = NULL,
    completed_at = NULL,
    cancel_requested_at = NULL,
    updated_at = now()
WHERE id = $1
  AND status IN ('DEAD', 'FAILED', 'CANCELED')
RETURNING id, queue, kind, payload, status, priority, scheduled_for, attempt_count,
          max_attempts, idempotency_key, timeout_seconds, worker_id, lease_token,
          lease_expires_at, cancel_requested_at, enqueued_at, processing_started_at,
          completed_at, last_error, created_at, updated_at, output
