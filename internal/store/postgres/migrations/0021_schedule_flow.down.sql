DROP FUNCTION rota.schedule_flow_running(uuid);
-- Flow schedules cannot run without their template: they go with it.
DELETE FROM rota.schedules WHERE kind = 'flow';
ALTER TABLE rota.schedules
    DROP CONSTRAINT schedules_flow_overlap,
    DROP CONSTRAINT schedules_flow_template_iff_flow,
    DROP COLUMN flow_template;
