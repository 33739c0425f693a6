-- PublishDeadLetters, step 1: up to $2 dead letters of the queues $1 that await
-- publication to the SQS dead-letter queue, oldest first, locked until the caller's
-- transaction ends (SKIP LOCKED: relays run side by side and never hand out one row
-- twice at once). Walks the partial index dead_letters_dlq_pending, which holds only
-- those rows. The columns are list_dead_letters.sql's.
SELECT id, task_id, kind, queue, worker_id, attempt_count, max_attempts, error, reason,
       created_at, replayed_at
FROM rota.dead_letters
WHERE dlq_pending
  AND queue = ANY ($1::text[])
ORDER BY id
LIMIT $2
FOR UPDATE SKIP LOCKED
