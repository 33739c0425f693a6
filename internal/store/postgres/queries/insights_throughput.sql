-- Throughput: tasks finished since $1, per bucket of $2 microseconds starting at $1, only
-- the buckets that hold one. Reads the partial index tasks_finished_by_flow (status, is a
-- plain task, completed_at: one range per status and kind of task), so it costs what the
-- window holds, not what the table holds. A task counts by its current status (a
-- replayed task has left the terminal statuses and no longer counts).
SELECT date_bin($2::bigint * interval '1 microsecond', completed_at, $1::timestamptz) AS bucket,
       count(*) FILTER (WHERE status = 'SUCCEEDED') AS succeeded,
       count(*) FILTER (WHERE status IN ('DEAD', 'FAILED')) AS failed
FROM rota.tasks
WHERE status IN ('SUCCEEDED', 'DEAD', 'FAILED')
  AND (flow_id IS NULL) IN (true, false)
  AND completed_at >= $1::timestamptz
GROUP BY 1
ORDER BY 1
