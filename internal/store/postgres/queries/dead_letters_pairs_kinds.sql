-- The kinds of queue $1: a loose index scan of dead_letters_list, one probe per kind.
kinds (kind) AS (
    (SELECT kind FROM rota.dead_letters
     WHERE queue = $1::text
     ORDER BY queue, kind LIMIT 1)
    UNION ALL
    SELECT (SELECT t.kind FROM rota.dead_letters t
            WHERE t.queue = $1::text AND t.kind > k.kind
            ORDER BY t.queue, t.kind LIMIT 1)
    FROM kinds k
    WHERE k.kind IS NOT NULL
),
pairs (queue, kind) AS (SELECT $1::text, kind FROM kinds WHERE kind IS NOT NULL)
