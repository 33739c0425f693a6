-- GetTask. read_at is the database's clock, for due-or-not decisions (store.Task.ReadAt).
SELECT now() AS read_at, id, queue, kind, payload, status, priority, scheduled_for, attempt_count,
       max_attempts, idempotency_key, timeout_seconds, worker_id, lease_token,
       lease_expires_at, cancel_requested_at, enqueued_at, processing_started_at,
       completed_at, last_error, created_at, updated_at, output, group_key,
       flow_id, flow_step, flow_index, flow_item, flow_inputs -- flowScan
FROM rota.tasks
WHERE id = $1
