-- rota:no-transaction
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_fair_enqueued;
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_fair_pending;
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_running;
