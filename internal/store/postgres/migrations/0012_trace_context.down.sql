ALTER TABLE rota.tasks DROP COLUMN IF EXISTS trace_context;
