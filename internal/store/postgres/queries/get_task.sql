-- GetTask. read_at is the database's clock, for due-or-not decisions (store.Task.ReadAt).
SELECT now() AS read_at, id, queue, kind, payload, status, priority, scheduled_for, attempt_count,
       max_attempts, idempotency_key, timeout_seconds, worker_id, lease_token,
       lease_expires_at, cancel_requested_at, enqueued_at, processing_started_at,
       completed_at, last_error, created_at, updated_at, output, group_key,
       t.flow_id, t.flow_step, t.flow_index, t.flow_item, -- flowScan; the inputs are the step's
       CASE WHEN t.flow_id IS NOT NULL THEN
           (SELECT s.inputs FROM rota.flow_steps s WHERE s.flow_id = t.flow_id AND s.name = t.flow_step)
       END AS flow_inputs
FROM rota.tasks t
WHERE t.id = $1
