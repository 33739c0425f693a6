DROP FUNCTION rota.schedule_lock_run(uuid);
DROP FUNCTION rota.schedule_run_status(uuid);
DROP TRIGGER schedules_cancel_replaced ON rota.schedules;
DROP FUNCTION rota.schedule_cancel_replaced();
DROP TRIGGER tasks_schedule_run_ended ON rota.tasks;
DROP FUNCTION rota.schedule_run_ended();
-- Held runs would never become due without the trigger: they run now.
UPDATE rota.tasks SET scheduled_for = now(), updated_at = now()
WHERE id IN (SELECT waiting_run_id FROM rota.schedules WHERE waiting_run_id IS NOT NULL)
  AND status = 'PENDING';
ALTER TABLE rota.schedules
    DROP CONSTRAINT schedules_overlap_known,
    DROP COLUMN overlap,
    DROP COLUMN current_run_id,
    DROP COLUMN waiting_run_id,
    DROP COLUMN skipped_ticks,
    DROP COLUMN last_skipped_at;
