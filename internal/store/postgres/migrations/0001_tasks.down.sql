DROP TABLE IF EXISTS rota.dead_letters;
DROP TABLE IF EXISTS rota.task_attempts;
DROP TABLE IF EXISTS rota.tasks;
DROP FUNCTION IF EXISTS rota.tasks_check_transition();
DROP FUNCTION IF EXISTS rota.tasks_record_transition();
DROP FUNCTION IF EXISTS rota.tasks_notify_insert();
