-- ListDeadLetters without a queue or kind filter (list_dead_letters.sql has them):
-- newest first, one page plus one row to tell whether another follows; a reason filter
-- reads dead_letters_reason.
-- $1 queue ('' = any), $2 kind ('' = any), $3 reason ('' = both), $4 cursor: the last id
-- of the previous page (0 = first page), $5 rows to return.
-- Run with an unnamed statement so that each call is planned for its own filters.
SELECT id, task_id, kind, queue, worker_id, attempt_count, max_attempts, error, reason,
       created_at, replayed_at
FROM rota.dead_letters
WHERE ($1::text = '' OR queue = $1::text)
  AND ($2::text = '' OR kind = $2::text)
  AND ($3::text = '' OR reason = $3::text)
  AND ($4::bigint = 0 OR id < $4::bigint)
ORDER BY id DESC
LIMIT $5
