-- RequeueUnserved: up to $1 ENQUEUED tasks of queues no SQS enqueuer serves go back to
-- PENDING (migration 0009), and each queue that got some is announced on rota_tasks as
-- an insert would be, so poll workers claim them at once.
--
-- The queues holding ENQUEUED tasks are found by a loose index scan of
-- tasks_claim_enqueued (one probe per queue), so a large backlog in a served queue is
-- never walked; the tasks of unserved queues come from the same index.
WITH RECURSIVE queues AS (
    (SELECT queue FROM rota.tasks WHERE status = 'ENQUEUED' ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT t.queue FROM rota.tasks t
            WHERE t.status = 'ENQUEUED' AND t.queue > q.queue
            ORDER BY t.queue LIMIT 1)
    FROM queues q
    WHERE q.queue IS NOT NULL
), unserved AS (
    SELECT q.queue
    FROM queues q
    WHERE q.queue IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM rota.sqs_enqueuers e
                      WHERE e.queue = q.queue AND e.served_until > now())
), picked AS (
    -- Per unserved queue, a range of tasks_claim_enqueued in its own order; no unserved
    -- queue (the steady state), no scan at all.
    SELECT p.id
    FROM unserved u
    CROSS JOIN LATERAL (
        SELECT t.id
        FROM rota.tasks t
        WHERE t.status = 'ENQUEUED'
          AND t.queue = u.queue
        ORDER BY t.priority DESC, t.scheduled_for, t.id
        LIMIT $1
        FOR UPDATE SKIP LOCKED
    ) p
    LIMIT $1
), requeued AS (
    UPDATE rota.tasks t
    SET status = 'PENDING', enqueued_at = NULL, updated_at = now()
    FROM picked p
    WHERE t.id = p.id
      AND t.status = 'ENQUEUED'
    RETURNING t.queue
), announced AS (
    SELECT pg_notify('rota_tasks', queue) FROM (SELECT DISTINCT queue FROM requeued) q
)
SELECT (SELECT count(*) FROM requeued), (SELECT count(*) FROM announced)
