-- The kinds of queue $2: a loose index scan of tasks_list, one probe per kind.
kinds (kind) AS (
    (SELECT kind FROM rota.tasks
     WHERE status <> 'PROCESSING' AND queue = $2::text
     ORDER BY queue, kind LIMIT 1)
    UNION ALL
    SELECT (SELECT t.kind FROM rota.tasks t
            WHERE t.status <> 'PROCESSING' AND t.queue = $2::text AND t.kind > k.kind
            ORDER BY t.queue, t.kind LIMIT 1)
    FROM kinds k
    WHERE k.kind IS NOT NULL
),
pairs (queue, kind) AS (SELECT $2::text, kind FROM kinds WHERE kind IS NOT NULL)
