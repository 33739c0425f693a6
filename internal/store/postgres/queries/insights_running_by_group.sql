-- RunningByGroup: the PROCESSING tasks of the queues $1 counted by group_key, for the
-- rota_group_running gauges at scrape time. Reads only the PROCESSING tasks of those
-- queues: through tasks_running (queue, group_key) WHERE status = 'PROCESSING' where it
-- exists (flow control's index), else tasks_lease_expiry (every PROCESSING task); never
-- the backlog. Strings sort bytewise (COLLATE "C"), as Go's do.
SELECT queue, group_key, count(*) AS running
FROM rota.tasks
WHERE status = 'PROCESSING'
  AND queue = ANY($1::text[])
  AND group_key IS NOT NULL
GROUP BY queue, group_key
ORDER BY queue COLLATE "C", running DESC, group_key COLLATE "C"
