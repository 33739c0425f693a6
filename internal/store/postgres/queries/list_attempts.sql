-- ListAttempts: the attempt history of task $1, oldest first. The task row is joined so
-- that an unknown task (no row at all) differs from a task with no attempts yet (one row
-- of NULLs).
SELECT a.id, t.id, a.attempt, a.worker_id, a.lease_token, a.started_at, a.finished_at,
       a.outcome, a.error
FROM rota.tasks t
LEFT JOIN rota.task_attempts a ON a.task_id = t.id
WHERE t.id = $1
ORDER BY a.id
