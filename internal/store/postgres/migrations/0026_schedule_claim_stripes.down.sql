CREATE INDEX schedules_due ON rota.schedules (next_run_at) WHERE enabled;
DROP INDEX rota.schedules_due_stripes;
