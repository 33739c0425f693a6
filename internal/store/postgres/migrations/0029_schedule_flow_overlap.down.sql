DROP TRIGGER schedules_cancel_replaced ON rota.schedules;
CREATE TRIGGER schedules_cancel_replaced
    AFTER UPDATE OF current_run_id ON rota.schedules
    FOR EACH ROW
    WHEN (NEW.overlap = 'cancel_other' AND OLD.current_run_id IS NOT NULL
          AND NEW.current_run_id IS NOT NULL AND OLD.current_run_id <> NEW.current_run_id)
    EXECUTE FUNCTION rota.schedule_cancel_replaced();
DROP FUNCTION rota.schedule_lock_flow(uuid);
DROP TRIGGER flows_schedule_run_ended ON rota.flows;
DROP FUNCTION rota.schedule_flow_ended();
-- Held flows would never start without the trigger: they start now.
SELECT rota.flow_start(waiting_run_id) FROM rota.schedules WHERE kind = 'flow' AND waiting_run_id IS NOT NULL;
UPDATE rota.schedules SET waiting_run_id = NULL WHERE kind = 'flow';
UPDATE rota.schedules SET overlap = 'skip' WHERE kind = 'flow' AND overlap NOT IN ('allow', 'skip');
ALTER TABLE rota.schedules
    ADD CONSTRAINT schedules_flow_overlap CHECK (kind = 'task' OR overlap IN ('allow', 'skip'));
