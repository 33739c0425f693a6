-- CreateFlow, 1 of 3: the flow row. With an idempotency key a live (or succeeded) flow
-- holds, nothing is inserted and no row returned (flows_idempotency_key decides, not a
-- read-then-write). $1 id, $2 name (NULL = none), $3 queue, $4 key (NULL = none).
INSERT INTO rota.flows (id, name, queue, idempotency_key)
VALUES ($1, $2, $3, $4)
ON CONFLICT (idempotency_key)
    WHERE idempotency_key IS NOT NULL AND status NOT IN ('FAILED', 'CANCELED')
    DO NOTHING
RETURNING id
