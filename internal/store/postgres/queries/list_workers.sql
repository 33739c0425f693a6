-- ListWorkers: the workers seen within $2 seconds, of queue $1 when not empty.
SELECT id, host, pid, version, mode, queues, kinds, concurrency, running, started_at, last_seen_at
FROM rota.workers
WHERE last_seen_at > now() - make_interval(secs => $2::float8)
  AND ($1 = '' OR queues @> ARRAY[$1::text])
ORDER BY id
