-- rota:no-transaction
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_finished_status ON rota.tasks (status, completed_at)
    WHERE status IN ('SUCCEEDED', 'CANCELED', 'DEAD', 'FAILED');
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_finished_by_flow;
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_flow_step;
