-- Every queue (with kind $2): a loose index scan of dead_letters_list, one probe per queue.
queues (queue) AS (
    (SELECT queue FROM rota.dead_letters
     ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT t.queue FROM rota.dead_letters t
            WHERE t.queue > q.queue
            ORDER BY t.queue LIMIT 1)
    FROM queues q
    WHERE q.queue IS NOT NULL
),
pairs (queue, kind) AS (SELECT queue, $2::text FROM queues WHERE queue IS NOT NULL)
