-- DeleteFinishedTasks: finished tasks past retention, in bounded batches (SKIP LOCKED so
-- several servers share the work). Attempts and dead letters go with them (ON DELETE
-- CASCADE). $1 succeeded/canceled cutoff, $2 dead/failed cutoff (NULL keeps), $3 limit.
WITH doomed AS (
    SELECT id
    FROM rota.tasks
    WHERE status IN ('SUCCEEDED', 'CANCELED', 'DEAD', 'FAILED')
      AND ((status IN ('SUCCEEDED', 'CANCELED') AND completed_at < $1::timestamptz)
        OR (status IN ('DEAD', 'FAILED') AND completed_at < $2::timestamptz))
    LIMIT $3
    FOR UPDATE SKIP LOCKED
)
DELETE FROM rota.tasks t
USING doomed
WHERE t.id = doomed.id
