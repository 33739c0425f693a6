-- GetFlow, 3 of 3: its tasks, per step in element order (tasks_flow_step).
SELECT flow_step, id, status
FROM rota.tasks
WHERE flow_id = $1
ORDER BY flow_step, flow_index
