-- GetFlow, 2 of 3: its steps in create order (flow_steps_position).
SELECT name, kind, queue, depends_on, for_each, state, output, error, payload,
       max_attempts, priority, timeout_seconds, group_key
FROM rota.flow_steps
WHERE flow_id = $1
ORDER BY position
