-- rota:no-transaction
-- tasks_enqueue_unsent (0005) indexed ENQUEUED tasks without a message, which retries and
-- reaped leases used to leave. Since 0009 every return to waiting is PENDING, no
-- statement writes such a row, and the enqueuer no longer looks for one: the index is
-- always empty and nothing reads it. Dropped concurrently (docs/architecture.md, "Online
-- migrations").
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_enqueue_unsent;
