-- rota:no-transaction
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_finished ON rota.tasks (completed_at)
    WHERE status IN ('SUCCEEDED', 'CANCELED', 'DEAD', 'FAILED');
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_finished_status;
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_list;
DROP INDEX CONCURRENTLY IF EXISTS rota.dead_letters_list;
DROP INDEX CONCURRENTLY IF EXISTS rota.dead_letters_reason;
