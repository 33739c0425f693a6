-- DeleteFinishedTasks: finished tasks past retention, in bounded batches (SKIP LOCKED so
-- several servers share the work). Attempts and dead letters go with them (ON DELETE
-- CASCADE). $1 succeeded/canceled cutoff, $2 dead/failed cutoff (NULL keeps), $3 limit.
-- Each cut-off is one range of tasks_finished_status (status, completed_at) per status:
-- with one range over every finished task (completed_at < $1 OR ...), the dead tasks
-- kept 30 days matched the 7-day succeeded cut-off and made every pass a scan.
WITH succeeded AS (
    SELECT id
    FROM rota.tasks
    WHERE status IN ('SUCCEEDED', 'CANCELED')
      AND completed_at < $1::timestamptz
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), failed AS (
    SELECT id
    FROM rota.tasks
    WHERE status IN ('DEAD', 'FAILED')
      AND completed_at < $2::timestamptz
    LIMIT greatest($3 - (SELECT count(*) FROM succeeded), 0)
    FOR UPDATE SKIP LOCKED
)
DELETE FROM rota.tasks t
WHERE t.id IN (SELECT id FROM succeeded UNION ALL SELECT id FROM failed)
