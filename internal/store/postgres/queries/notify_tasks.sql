-- notifyCreated: the wake-up of the workers of queues $1 (text[]), sent after the tasks
-- were committed. Its own transaction commits without waiting for its WAL flush
-- (synchronous_commit = off for this transaction only): it changes no data, and a
-- notifying transaction holds PostgreSQL's one notify lock until its commit is done.
SELECT set_config('synchronous_commit', 'off', true), pg_notify('rota_tasks', q)
FROM unnest($1::text[]) AS q
