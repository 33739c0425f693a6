-- ListFlows by status ($3, every status when no filter) and name ($4, NULL = any):
-- newest first, one index range per status (flows_status_id, or flows_name_status_id
-- with a name) merged, so a page costs what it returns. $1 cursor, $2 page size + 1.
SELECT f.*
FROM unnest($3::text[]) AS s (status)
CROSS JOIN LATERAL (
    SELECT id, name, queue, status, idempotency_key, created_at, updated_at, completed_at
    FROM rota.flows
    WHERE status = s.status
      AND ($4::text IS NULL OR name = $4::text)
      AND ($1::uuid IS NULL OR id < $1::uuid)
    ORDER BY id DESC
    LIMIT $2
) AS f
ORDER BY f.id DESC
LIMIT $2
