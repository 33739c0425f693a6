-- UpdateQueueSettings: applies a patch to one queue's row, creating it. $1 name; each
-- setting comes as a "set" flag and its value ($2/$3 paused, $4/$5 concurrency, $6/$7/$8
-- rate limit and per_seconds, $9/$10 group_concurrency, $11/$12/$13 group rate): a flag
-- that is false keeps the stored value (or the default, for a new row), a value that is
-- NULL removes the limit.
INSERT INTO rota.queues AS q (name, paused, concurrency, rate_limit, rate_per_seconds,
                              group_concurrency, group_rate_limit, group_rate_per_seconds)
VALUES ($1,
        CASE WHEN $2::boolean THEN $3::boolean ELSE false END,
        CASE WHEN $4::boolean THEN $5::integer END,
        CASE WHEN $6::boolean THEN $7::integer END,
        CASE WHEN $6::boolean THEN $8::integer END,
        CASE WHEN $9::boolean THEN $10::integer END,
        CASE WHEN $11::boolean THEN $12::integer END,
        CASE WHEN $11::boolean THEN $13::integer END)
ON CONFLICT (name) DO UPDATE SET
    paused                 = CASE WHEN $2::boolean THEN $3::boolean ELSE q.paused END,
    concurrency            = CASE WHEN $4::boolean THEN $5::integer ELSE q.concurrency END,
    rate_limit             = CASE WHEN $6::boolean THEN $7::integer ELSE q.rate_limit END,
    rate_per_seconds       = CASE WHEN $6::boolean THEN $8::integer ELSE q.rate_per_seconds END,
    group_concurrency      = CASE WHEN $9::boolean THEN $10::integer ELSE q.group_concurrency END,
    group_rate_limit       = CASE WHEN $11::boolean THEN $12::integer ELSE q.group_rate_limit END,
    group_rate_per_seconds = CASE WHEN $11::boolean THEN $13::integer ELSE q.group_rate_per_seconds END,
    updated_at             = now()
RETURNING name, paused, concurrency, rate_limit, rate_per_seconds, group_concurrency,
          group_rate_limit, group_rate_per_seconds, updated_at
