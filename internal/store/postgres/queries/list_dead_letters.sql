-- ListDeadLetters: newest first, one page plus one row to tell whether another follows.
-- $1 queue ('' = any), $2 kind ('' = any), $3 reasons (DEAD and/or FAILED), $4 cursor:
-- the last id of the previous page (0 = first page), $5 rows to return.
-- With a queue or kind filter, the newest ids come per (queue, kind, reason) from
-- dead_letters_list (one range each, as list_tasks_filtered.sql does for tasks), so a
-- filter that matches nothing does not walk every dead letter; the pairs placeholder is
-- one of the list_tasks_pairs_*.sql fragments, on rota.dead_letters (history.go).
-- The page's ids are looked up as an array (= ANY), always through the primary key.
-- Run with an unnamed statement so that each call is planned for its own filters.
WITH RECURSIVE {{pairs}}
SELECT d.id, d.task_id, d.kind, d.queue, d.worker_id, d.attempt_count, d.max_attempts,
       d.error, d.reason, d.created_at, d.replayed_at
FROM rota.dead_letters d
WHERE d.id = ANY (ARRAY(
        SELECT newest.id
        FROM pairs p
        CROSS JOIN unnest($3::text[]) AS r(reason)
        CROSS JOIN LATERAL (
            SELECT d.id
            FROM rota.dead_letters d
            WHERE d.queue = p.queue AND d.kind = p.kind AND d.reason = r.reason
              AND ($4::bigint = 0 OR d.id < $4::bigint)
            ORDER BY d.id DESC
            LIMIT $5
        ) newest
        ORDER BY newest.id DESC
        LIMIT $5))
  AND ($1::text = '' OR d.queue = $1::text)
  AND ($2::text = '' OR d.kind = $2::text)
ORDER BY d.id DESC
