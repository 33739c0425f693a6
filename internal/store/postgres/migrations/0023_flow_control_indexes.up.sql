-- rota:no-transaction
-- Indexes of flow control (migration 0022), built concurrently: rota.tasks may hold
-- millions of rows, and a plain CREATE INDEX would block its writes for the whole build
-- (docs/architecture.md, "Online migrations").
--
-- tasks_running: a queue's (and a group's) PROCESSING tasks, counted by the claim of a
-- queue with a concurrency or group_concurrency limit; a count never reads more entries
-- than the limit.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_running ON rota.tasks (queue, group_key)
    WHERE status = 'PROCESSING';
-- tasks_fair_*: the grouped tasks a claimer may take, in group order within a priority
-- level: the fair walk steps from one group to the next (a loose index scan) and takes
-- a group's oldest due tasks without reading the rest of its backlog. Partial on
-- group_key: a queue whose tasks carry no group key adds nothing to them, and one probe
-- tells the claim that a queue has no grouped tasks (it then keeps the plain claim).
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_fair_pending
    ON rota.tasks (queue, priority DESC, group_key, scheduled_for, id)
    WHERE status = 'PENDING' AND group_key IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_fair_enqueued
    ON rota.tasks (queue, priority DESC, group_key, scheduled_for, id)
    WHERE status = 'ENQUEUED' AND group_key IS NOT NULL;
