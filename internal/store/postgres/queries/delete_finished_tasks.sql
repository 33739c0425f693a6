-- DeleteFinishedTasks: finished plain tasks past retention, oldest first, in bounded
-- batches (SKIP LOCKED so several servers share the work). Attempts go with them
-- (attempts_gone: rota.task_attempts has no foreign key, migration 0027), dead letters by
-- their ON DELETE CASCADE. $1 succeeded/canceled cutoff, $2 dead/failed cutoff
-- (NULL keeps), $3 limit. A flow's tasks are not deleted here but with their flow
-- (delete_finished_flows.sql), never one by one.
-- Each status is one range of tasks_finished_by_flow (status, true, completed_at), read in
-- order so that the planner never trades it for a sequential scan that hopes to meet
-- $3 old tasks early: with one range over every finished task (completed_at < $1 OR
-- ...), the dead tasks kept 30 days matched the 7-day succeeded cut-off and every pass
-- scanned the table, and even per status an unordered LIMIT became a sequential scan at
-- 10 million tasks whenever the statistics promised many matches.
WITH doomed AS (
    SELECT old.id
    FROM (VALUES ('SUCCEEDED', $1::timestamptz), ('CANCELED', $1::timestamptz),
                 ('DEAD', $2::timestamptz), ('FAILED', $2::timestamptz)) AS cut (status, before)
    CROSS JOIN LATERAL (
        SELECT t.id
        FROM rota.tasks t
        WHERE t.status IN ('SUCCEEDED', 'CANCELED', 'DEAD', 'FAILED')
          AND t.status = cut.status
          AND t.flow_id IS NULL -- the index's second column: plain tasks only
          AND t.completed_at < cut.before
        ORDER BY t.completed_at
        LIMIT $3
        FOR UPDATE SKIP LOCKED
    ) old
    LIMIT $3
), attempts_gone AS (
    -- through task_attempts_task (task_id, id)
    DELETE FROM rota.task_attempts a
    WHERE a.task_id = ANY (ARRAY(SELECT id FROM doomed))
)
DELETE FROM rota.tasks t
-- an array, so that the rows are always found through the primary key (a semi-join
-- became a hash join over a sequential scan at 10M rows)
WHERE t.id = ANY (ARRAY(SELECT id FROM doomed))
