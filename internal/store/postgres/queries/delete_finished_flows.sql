-- DeleteFinishedTasks, for flows: up to $3 ended flows past retention, oldest first,
-- each deleted with all of its tasks (their attempts in attempts_gone, their dead letters
-- by cascade) and its steps in this one statement, so no reader ever sees half a flow. SUCCEEDED and
-- CANCELED flows go by the succeeded cut-off $1, FAILED ones by the failed cut-off $2
-- (NULL keeps), each status one range of flows_finished in completion order. A flow
-- whose task still runs (a cancel request its worker has not answered yet) waits for
-- it. Flows other callers hold are skipped. Returns how many tasks went, and whether one
-- of them was live when it went: a task replayed on its own (ReplayTask) after this
-- statement's snapshot, and perhaps claimed, is deleted all the same (the DELETE
-- rechecks only flow_id on the row's latest version), so the caller rolls the batch
-- back and the next pass, seeing the live task, leaves its flow alone.
WITH doomed AS (
    SELECT old.id
    FROM (VALUES ('SUCCEEDED', $1::timestamptz), ('CANCELED', $1::timestamptz),
                 ('FAILED', $2::timestamptz)) AS cut (status, before)
    CROSS JOIN LATERAL (
        SELECT f.id
        FROM rota.flows f
        WHERE f.status <> 'RUNNING'
          AND f.status = cut.status
          AND f.completed_at < cut.before
          -- A scalar subquery, probed per flow through tasks_flow_step (NOT EXISTS was
          -- planned as an anti-join walking every flow's tasks).
          AND (SELECT t.id FROM rota.tasks t
               WHERE t.flow_id = f.id AND t.flow_id IS NOT NULL
                 AND t.status IN ('PENDING', 'ENQUEUED', 'PROCESSING')
               LIMIT 1) IS NULL
        ORDER BY f.completed_at
        LIMIT $3
        FOR UPDATE OF f SKIP LOCKED
    ) old
    LIMIT $3
), tasks_gone AS (
    -- through tasks_flow_step
    DELETE FROM rota.tasks t
    WHERE t.flow_id = ANY (ARRAY(SELECT id FROM doomed))
      AND t.flow_id IS NOT NULL -- tasks_flow_step's predicate
    RETURNING t.id, t.status
), attempts_gone AS (
    -- rota.task_attempts has no foreign key (migration 0027); through task_attempts_task
    DELETE FROM rota.task_attempts a
    WHERE a.task_id = ANY (ARRAY(SELECT id FROM tasks_gone))
), flows_gone AS (
    DELETE FROM rota.flows f
    WHERE f.id = ANY (ARRAY(SELECT id FROM doomed))
)
SELECT count(*), coalesce(bool_or(status IN ('PENDING', 'ENQUEUED', 'PROCESSING')), false)
FROM tasks_gone
