-- Heartbeat: extends the lease of task $1 to now() + $3, fenced by its lease token $2.
-- No row means the token is not current (or there is no such task).
--
-- Only a PROCESSING task has a lease token (CHECK tasks_lease_iff_processing), so the
-- token match implies the status; leaving "status = 'PROCESSING'" out keeps the planner
-- on the primary key (with it, a cached plan may prefer the small partial index
-- tasks_lease_expiry and then scan every running task).
UPDATE rota.tasks
SET lease_expires_at = now() + $3::interval,
    updated_at = now()
WHERE id = $1
  AND lease_token = $2
RETURNING id, queue, kind, payload, status, priority, scheduled_for, attempt_count,
          max_attempts, idempotency_key, timeout_seconds, worker_id, lease_token,
          lease_expires_at, cancel_requested_at, enqueued_at, processing_started_at,
          completed_at, last_error, created_at, updated_at, output
