-- Queues as objects (DESIGN.md section 11): one row per configured queue, read by every
-- claim (its own statement: a setting is in force for each claim that starts after the
-- write committed). A queue nobody configured has no row: not paused, no limits. NULL
-- means no limit; a rate is limit claims per per_seconds seconds, both set or neither.
CREATE TABLE rota.queues (
    name                   text        PRIMARY KEY,
    paused                 boolean     NOT NULL DEFAULT false,
    concurrency            integer     CHECK (concurrency >= 1),
    rate_limit             integer     CHECK (rate_limit >= 1),
    rate_per_seconds       integer     CHECK (rate_per_seconds >= 1),
    group_concurrency      integer     CHECK (group_concurrency >= 1),
    group_rate_limit       integer     CHECK (group_rate_limit >= 1),
    group_rate_per_seconds integer     CHECK (group_rate_per_seconds >= 1),
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CHECK ((rate_limit IS NULL) = (rate_per_seconds IS NULL)),
    CHECK ((group_rate_limit IS NULL) = (group_rate_per_seconds IS NULL))
);

-- A task's group within its queue (group_concurrency, group_rate, fair claiming); NULL =
-- none. A nullable column without a default is a catalog change only (no rewrite, no
-- scan); its length rule (at most 128 characters) is checked by the adapters, since a
-- CHECK added here would scan the whole table under the lock.
ALTER TABLE rota.tasks ADD COLUMN IF NOT EXISTS group_key text;
