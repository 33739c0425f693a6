-- ReplayTasks: bulk DEAD/FAILED -> PENDING, oldest first, as replay_task.sql does for one.
-- $1 task ids (NULL = any), $2 queue, $3 kind, $4 reason ('' = any), $5 limit.
-- Tasks whose idempotency key a live task now holds are skipped: replaying them would
-- break the key's uniqueness. So are the younger of two candidates sharing a key (a key
-- freed by a DEAD task may be taken again, and that task may die too): only the oldest
-- is replayed, and the younger then meets it as the live holder.
WITH candidates AS (
    SELECT t.id, t.idempotency_key
    FROM rota.tasks t
    WHERE t.status IN ('DEAD', 'FAILED')
      AND ($1::uuid[] IS NULL OR t.id = ANY ($1::uuid[]))
      AND ($2::text = '' OR t.queue = $2)
      AND ($3::text = '' OR t.kind = $3)
      AND ($4::text = '' OR t.status = $4)
      AND (t.idempotency_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM rota.tasks live
            WHERE live.idempotency_key = t.idempotency_key
              AND live.id <> t.id
              AND live.status NOT IN ('DEAD', 'FAILED', 'CANCELED')))
    ORDER BY t.id
    LIMIT $5
    FOR UPDATE SKIP LOCKED
),
picked AS (
    SELECT c.id
    FROM candidates c
    WHERE c.idempotency_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM candidates older
        WHERE older.idempotency_key = c.idempotency_key AND older.id < c.id)
)
UPDATE rota.tasks t
SET status = 'PENDING',
    attempt_count = 0,
    scheduled_for = now(),
    last_error = NULL,
    completed_at = NULL,
    cancel_requested_at = NULL,
    updated_at = now()
FROM picked
WHERE t.id = picked.id
RETURNING t.id, t.queue, t.kind, t.payload, t.status, t.priority, t.scheduled_for, t.attempt_count,
          t.max_attempts, t.idempotency_key, t.timeout_seconds, t.worker_id, t.lease_token,
          t.lease_expires_at, t.cancel_requested_at, t.enqueued_at, t.processing_started_at,
          t.completed_at, t.last_error, t.created_at, t.updated_at, t.output
