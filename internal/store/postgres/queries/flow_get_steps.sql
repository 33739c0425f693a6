-- GetFlow, 2 of 3: its steps in create order (flow_steps_position). A chain's inner step
-- (no locks_flow) keeps state STARTED when its one task succeeds (migration 0025): it
-- is read as SUCCEEDED with its task's output then.
SELECT s.name, s.kind, s.queue, s.depends_on, s.for_each,
       CASE WHEN t.status = 'SUCCEEDED' THEN 'SUCCEEDED' ELSE s.state END AS state,
       CASE WHEN t.status = 'SUCCEEDED' THEN t.output ELSE s.output END AS output,
       s.error, s.payload, s.max_attempts, s.priority, s.timeout_seconds, s.group_key
FROM rota.flow_steps s
LEFT JOIN LATERAL (SELECT t.status, t.output FROM rota.tasks t
                   WHERE s.state = 'STARTED' AND NOT s.locks_flow
                     AND t.flow_id = s.flow_id AND t.flow_step = s.name AND t.flow_index = 0) t ON true
WHERE s.flow_id = $1
ORDER BY s.position
