-- ListFlows without filters: newest first from the primary key. $1 the cursor (the last
-- id of the previous page; NULL = from the newest), $2 the page size + 1.
SELECT id, name, queue, status, idempotency_key, created_at, updated_at, completed_at
FROM rota.flows
WHERE $1::uuid IS NULL OR id < $1::uuid
ORDER BY id DESC
LIMIT $2
