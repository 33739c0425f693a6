-- GetFlow, 1 of 3: the flow row.
SELECT id, name, queue, status, idempotency_key, created_at, updated_at, completed_at
FROM rota.flows
WHERE id = $1
