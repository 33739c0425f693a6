DROP INDEX rota.tasks_finished_queue_status;
