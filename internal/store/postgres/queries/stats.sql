-- Stats: task counts per queue and status, the oldest due PENDING task's scheduled_for,
-- and how many PROCESSING tasks hold an expired lease (their worker is gone or stuck).
SELECT queue,
       status,
       count(*),
       min(scheduled_for) FILTER (WHERE status = 'PENDING' AND scheduled_for <= now()),
       count(*) FILTER (WHERE status = 'PROCESSING' AND lease_expires_at < now())
FROM rota.tasks
GROUP BY queue, status
ORDER BY queue, status
