-- NextDue: for each queue of $1 that holds PENDING tasks, how many seconds until its
-- earliest one is due by the database's clock (0 or less: one is due now). A worker asks
-- this once per poll interval for all its idle queues together, instead of claiming from
-- each (issue #12 item 9).
--
-- Index-bound like claim_tasks.sql: per queue, the distinct priorities of its PENDING
-- tasks are walked through tasks_claim_pending (a loose index scan, one probe per level),
-- and within a level the index is ordered by scheduled_for, so its first entry is the
-- level's earliest task: one more probe. No walk over tasks not yet due.
SELECT q.queue, extract(epoch FROM min(first.scheduled_for) - now())::float8
FROM unnest($1::text[]) AS q(queue)
CROSS JOIN LATERAL (
    WITH RECURSIVE levels(priority) AS (
        SELECT 32767::smallint -- above every priority (a smallint): where the walk starts
      UNION ALL
        SELECT (SELECT t.priority FROM rota.tasks t
                WHERE t.status = 'PENDING' AND t.queue = q.queue AND t.priority < levels.priority
                ORDER BY t.priority DESC LIMIT 1)
        FROM levels
        WHERE levels.priority IS NOT NULL
    )
    SELECT (SELECT t.scheduled_for FROM rota.tasks t
            WHERE t.status = 'PENDING' AND t.queue = q.queue AND t.priority = levels.priority
            ORDER BY t.scheduled_for LIMIT 1) AS scheduled_for
    FROM levels
    WHERE levels.priority IS NOT NULL AND levels.priority < 32767
) AS first
GROUP BY q.queue
HAVING min(first.scheduled_for) IS NOT NULL
