DROP FUNCTION IF EXISTS rota.schedule_due_ticks(text, text, timestamptz, text, integer, integer, timestamptz);
DROP TABLE IF EXISTS rota.schedules;
DROP FUNCTION IF EXISTS rota.schedules_check_spec();
DROP INDEX IF EXISTS rota.tasks_schedule_runs;
