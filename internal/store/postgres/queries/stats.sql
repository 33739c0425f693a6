-- Stats: task counts per queue and status, the oldest due PENDING task's scheduled_for,
-- and how many PROCESSING tasks hold an expired lease (their worker is gone or stuck).
-- Each status is counted from an index that holds only its rows (migrations 0001 and
-- 0006), never from the whole table: finished tasks from tasks_finished_queue_status
-- (index-only), PENDING and ENQUEUED from the claim indexes, PROCESSING from
-- tasks_lease_expiry. One statement, so one snapshot: a task is counted once.
SELECT queue, status, count(*), NULL::timestamptz, 0::bigint
FROM rota.tasks
WHERE status IN ('SUCCEEDED', 'FAILED', 'DEAD', 'CANCELED')
GROUP BY queue, status
UNION ALL
SELECT queue, 'PENDING', count(*), min(scheduled_for) FILTER (WHERE scheduled_for <= now()), 0
FROM rota.tasks
WHERE status = 'PENDING'
GROUP BY queue
UNION ALL
SELECT queue, 'ENQUEUED', count(*), NULL, 0
FROM rota.tasks
WHERE status = 'ENQUEUED'
GROUP BY queue
UNION ALL
SELECT queue, 'PROCESSING', count(*), NULL, count(*) FILTER (WHERE lease_expires_at < now())
FROM rota.tasks
WHERE status = 'PROCESSING'
GROUP BY queue
ORDER BY 1, 2
