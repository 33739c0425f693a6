pairs (queue, kind) AS (SELECT $2::text, $3::text)
