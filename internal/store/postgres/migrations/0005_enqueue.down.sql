DROP INDEX IF EXISTS rota.tasks_enqueue_sent;
DROP INDEX IF EXISTS rota.tasks_enqueue_unsent;
