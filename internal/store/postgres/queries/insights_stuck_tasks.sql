-- StuckTasks: PROCESSING tasks whose lease expired, the longest expired first, through
-- the partial index tasks_lease_expiry. $1 rows to return.
SELECT id, queue, kind, payload, status, priority, scheduled_for, attempt_count,
       max_attempts, idempotency_key, timeout_seconds, worker_id, lease_token,
       lease_expires_at, cancel_requested_at, enqueued_at, processing_started_at,
       completed_at, last_error, created_at, updated_at, output
FROM rota.tasks
WHERE status = 'PROCESSING'
  AND lease_expires_at < now()
ORDER BY lease_expires_at, id
LIMIT $1
