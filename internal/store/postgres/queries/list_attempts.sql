-- ListAttempts: the attempt history of task $1, oldest first: its rota.task_attempts
-- rows, then, while the task is PROCESSING, the attempt running now, read from the task
-- row (its own row is written when it ends: migration 0007) with id 0 and no finish.
-- The task row is joined so that an unknown task (no row at all) differs from a task
-- with no attempts yet (one row of NULLs).
SELECT id, task_id, attempt, worker_id, lease_token, started_at, finished_at, outcome, error
FROM (
    SELECT a.id, t.id AS task_id, a.attempt, a.worker_id, a.lease_token, a.started_at,
           a.finished_at, a.outcome, a.error, false AS running
    FROM rota.tasks t
    LEFT JOIN rota.task_attempts a ON a.task_id = t.id
    WHERE t.id = $1
    UNION ALL
    SELECT 0, id, attempt_count, worker_id, lease_token, coalesce(processing_started_at, now()),
           NULL, NULL, NULL, true
    FROM rota.tasks
    WHERE id = $1
      AND status = 'PROCESSING'
) AS history
ORDER BY running, id
