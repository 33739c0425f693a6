-- rota:no-transaction
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_flow_step;
