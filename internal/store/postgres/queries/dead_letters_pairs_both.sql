pairs (queue, kind) AS (SELECT $1::text, $2::text)
