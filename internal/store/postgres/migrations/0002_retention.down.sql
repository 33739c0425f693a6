DROP INDEX IF EXISTS rota.tasks_finished;
