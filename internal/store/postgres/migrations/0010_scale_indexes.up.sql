-- rota:no-transaction
-- Indexes that keep the statements Rota runs per request or on a schedule bound by what
-- they return at 10 million tasks (docs/performance.md, "10 million tasks"). Built
-- concurrently: enqueues and claims go on while they build (docs/architecture.md,
-- "Online migrations").

-- The task list filtered by queue and/or kind (queries/list_tasks_filtered.sql): per
-- (queue, kind, status) the newest ids, so a filter that matches nothing costs a probe
-- per combination instead of a walk of the whole table. Running tasks are left out (a
-- claim and every heartbeat would add an entry); the list reads them through
-- tasks_lease_expiry, which holds only them.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_list ON rota.tasks (queue, kind, status, id DESC)
    WHERE status <> 'PROCESSING';

-- Retention (queries/delete_finished_tasks.sql) and the throughput insight: finished
-- tasks by status, then completion time. With tasks_finished (completed_at) alone, the
-- succeeded cut-off (7 days) also matched every retained dead task (kept 30 days) and
-- the planner scanned the table. Replaces tasks_finished.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_finished_status ON rota.tasks (status, completed_at)
    WHERE status IN ('SUCCEEDED', 'CANCELED', 'DEAD', 'FAILED');
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_finished;

-- The dead-letter list filtered by queue, kind and reason (queries/list_dead_letters.sql),
-- as tasks_list does for tasks.
CREATE INDEX CONCURRENTLY IF NOT EXISTS dead_letters_list ON rota.dead_letters (queue, kind, reason, id DESC);
-- ... and by reason alone (queries/list_dead_letters_all.sql): a reason no dead letter
-- has walked them all.
CREATE INDEX CONCURRENTLY IF NOT EXISTS dead_letters_reason ON rota.dead_letters (reason, id DESC);
