-- rota:no-transaction
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_list_descending ON rota.tasks (queue, kind, status, id DESC)
    WHERE status <> 'PROCESSING';
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_list;
ALTER INDEX IF EXISTS rota.tasks_list_descending RENAME TO tasks_list;
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_status_id_descending ON rota.tasks (status, id DESC)
    WHERE status <> 'PROCESSING';
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_status_id;
ALTER INDEX IF EXISTS rota.tasks_status_id_descending RENAME TO tasks_status_id;
