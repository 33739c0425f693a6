-- rota:no-transaction
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_enqueue_unsent ON rota.tasks (queue, priority DESC, scheduled_for, id)
    WHERE status = 'ENQUEUED' AND enqueued_at IS NULL;
