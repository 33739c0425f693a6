-- Throughput: tasks finished since $1, per bucket of $2 microseconds starting at $1, only
-- the buckets that hold one. Reads the partial indexes tasks_finished_plain and
-- tasks_finished_flow (migration 0020: finished plain tasks and finished flow step
-- tasks; one range each), so it costs what the window holds, not what the table holds.
-- A task counts by its current status (a replayed task has left the terminal statuses
-- and no longer counts).
SELECT date_bin($2::bigint * interval '1 microsecond', completed_at, $1::timestamptz) AS bucket,
       count(*) FILTER (WHERE status = 'SUCCEEDED') AS succeeded,
       count(*) FILTER (WHERE status IN ('DEAD', 'FAILED')) AS failed
FROM (
    SELECT status, completed_at
    FROM rota.tasks
    WHERE status IN ('SUCCEEDED', 'DEAD', 'FAILED')
      AND completed_at >= $1::timestamptz
      AND flow_id IS NULL
  UNION ALL
    SELECT status, completed_at
    FROM rota.tasks
    WHERE status IN ('SUCCEEDED', 'DEAD', 'FAILED')
      AND completed_at >= $1::timestamptz
      AND flow_id IS NOT NULL
) AS finished
GROUP BY 1
ORDER BY 1
