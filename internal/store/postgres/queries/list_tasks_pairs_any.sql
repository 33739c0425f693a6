pairs (queue, kind) AS (SELECT NULL::text, NULL::text)
