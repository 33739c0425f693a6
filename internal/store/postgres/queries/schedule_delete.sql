-- DeleteSchedule. Its runs stay (they are tasks), except a buffer_one run still held
-- (never started, and nothing would make it due once the schedule is gone): it is
-- CANCELED. No row: no such schedule.
WITH deleted AS (
    DELETE FROM rota.schedules WHERE name = $1
    RETURNING waiting_run_id
), held AS (
    UPDATE rota.tasks
    SET status = 'CANCELED', completed_at = now(), updated_at = now()
    WHERE id = (SELECT waiting_run_id FROM deleted) AND status = 'PENDING'
)
SELECT count(*) FROM deleted
