-- RegisterWorker: upsert worker $1 seen now(); $10 = merge the queues into the recorded
-- ones (an HTTP-protocol worker registers one queue per claim); a row unseen for $11
-- seconds (expired) starts afresh. Rows unseen for $12
-- seconds are pruned on the way (an indexed range of workers_last_seen).
WITH pruned AS (
    DELETE FROM rota.workers
    WHERE last_seen_at < now() - make_interval(secs => $12::float8) AND id <> $1
)
INSERT INTO rota.workers AS w (id, host, pid, version, mode, queues, kinds, concurrency, running,
                               started_at, last_seen_at)
VALUES ($1, $2, $3, $4, $5, $6::text[], $7::text[], $8, $9, now(), now())
ON CONFLICT (id) DO UPDATE SET
    host = excluded.host,
    pid = excluded.pid,
    version = excluded.version,
    mode = excluded.mode,
    queues = CASE WHEN $10::bool
        THEN ARRAY(SELECT DISTINCT q FROM unnest(w.queues || excluded.queues) AS q ORDER BY q)
        ELSE excluded.queues END,
    kinds = excluded.kinds,
    concurrency = excluded.concurrency,
    running = excluded.running,
    -- A row that had expired starts again: a new process that reused the id.
    started_at = CASE WHEN w.last_seen_at < now() - make_interval(secs => $11::float8)
        THEN now() ELSE w.started_at END,
    last_seen_at = now()
