-- ListScheduleRuns: the tasks whose idempotency key is schedule:<name>:..., newest first,
-- through the partial index tasks_schedule_runs (name = the key's second ':' part; names
-- contain no ':'). $1 name, $2 cursor: the last id of the previous page (NULL = first
-- page), $3 rows to return. The cursor bound is one index condition (no OR), so a deep
-- page does not walk the pages before it.
SELECT id, queue, kind, payload, status, priority, scheduled_for, attempt_count,
       max_attempts, idempotency_key, timeout_seconds, worker_id, lease_token,
       lease_expires_at, cancel_requested_at, enqueued_at, processing_started_at,
       completed_at, last_error, created_at, updated_at, output
FROM rota.tasks
WHERE idempotency_key LIKE 'schedule:%'
  AND split_part(idempotency_key, ':', 2) = $1
  AND id < coalesce($2::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
ORDER BY id DESC
LIMIT $3
