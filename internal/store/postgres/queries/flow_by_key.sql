-- The flow holding idempotency key $1 (not FAILED or CANCELED), through flows_idempotency_key.
SELECT id
FROM rota.flows
WHERE idempotency_key = $1
  AND status NOT IN ('FAILED', 'CANCELED')
