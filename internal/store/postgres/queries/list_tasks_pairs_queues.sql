-- Every queue (with kind $3): a loose index scan of tasks_list, one probe per queue.
queues (queue) AS (
    (SELECT queue FROM rota.tasks
     WHERE status <> 'PROCESSING'
     ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT t.queue FROM rota.tasks t
            WHERE t.status <> 'PROCESSING' AND t.queue > q.queue
            ORDER BY t.queue LIMIT 1)
    FROM queues q
    WHERE q.queue IS NOT NULL
),
pairs (queue, kind) AS (SELECT queue, $3::text FROM queues WHERE queue IS NOT NULL)
