DROP TRIGGER IF EXISTS tasks_flow_advance ON rota.tasks;
DROP TRIGGER IF EXISTS tasks_flow_note ON rota.tasks;
DROP FUNCTION IF EXISTS rota.tasks_flow_advance();
DROP FUNCTION IF EXISTS rota.tasks_flow_note();
DROP FUNCTION IF EXISTS rota.flow_task_failed(uuid, text, uuid, text, text);
DROP FUNCTION IF EXISTS rota.flow_steps_succeeded(uuid[]);
DROP FUNCTION IF EXISTS rota.flow_replay(uuid);
DROP FUNCTION IF EXISTS rota.flow_cancel(uuid);
DROP FUNCTION IF EXISTS rota.flow_start(uuid);
DROP FUNCTION IF EXISTS rota.flow_lock_live_tasks(uuid);
DROP FUNCTION IF EXISTS rota.flow_stop(uuid, text);
DROP FUNCTION IF EXISTS rota.flow_step_done(uuid, text);
DROP FUNCTION IF EXISTS rota.flow_activate(uuid, text);
DROP FUNCTION IF EXISTS rota.flow_step_output(uuid, text, boolean);
DROP FUNCTION IF EXISTS rota.flow_step_inputs(uuid, text[]);
DROP FUNCTION IF EXISTS rota.new_task_id(bigint);
-- A flow's tasks go with it.
DELETE FROM rota.tasks WHERE flow_id IS NOT NULL;
ALTER TABLE rota.tasks
    DROP COLUMN flow_id,
    DROP COLUMN flow_step,
    DROP COLUMN flow_index,
    DROP COLUMN flow_item;
DROP TABLE rota.flow_steps;
DROP TABLE rota.flows;
