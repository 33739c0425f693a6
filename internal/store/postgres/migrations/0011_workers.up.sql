-- The workers registry (DESIGN.md section 12): one row per worker process or
-- HTTP-protocol worker, renewed every 10 s while it runs (last_seen_at, the database
-- clock). A worker unseen for 30 s is gone: readers filter by last_seen_at, and
-- registrations delete rows unseen for an hour on the way.
CREATE TABLE rota.workers (
    id           text        PRIMARY KEY,
    host         text        NOT NULL DEFAULT '',
    pid          integer     NOT NULL DEFAULT 0,
    version      text        NOT NULL DEFAULT '',
    mode         text        NOT NULL DEFAULT '',
    queues       text[]      NOT NULL DEFAULT '{}',
    kinds        text[],     -- NULL = unknown (an HTTP-protocol worker)
    concurrency  integer     NOT NULL DEFAULT 0,
    running      integer     NOT NULL DEFAULT 0,
    started_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now()
);

-- The live workers of one queue (the create warning's lookup): queues @> ARRAY[queue].
CREATE INDEX workers_queues ON rota.workers USING gin (queues);
-- Expiry and pruning.
CREATE INDEX workers_last_seen ON rota.workers (last_seen_at);
