-- DeleteSchedule. Its runs stay (they are tasks or flows), except a buffer_one run still
-- held (never started, and nothing would start it once the schedule is gone): a held task
-- is CANCELED, a held flow canceled with rota.flow_cancel (as CancelFlow: it has no task
-- yet, and a held flow that ended already is left as it is). No row: no such schedule.
-- Returns how many schedules were deleted, and the held flow's status afterwards (NULL
-- for none).
WITH deleted AS (
    DELETE FROM rota.schedules WHERE name = $1
    RETURNING kind, waiting_run_id
), held AS (
    UPDATE rota.tasks
    SET status = 'CANCELED', completed_at = now(), updated_at = now()
    WHERE id = (SELECT waiting_run_id FROM deleted WHERE kind = 'task') AND status = 'PENDING'
)
SELECT count(*),
       max(CASE WHEN kind = 'flow' AND waiting_run_id IS NOT NULL THEN rota.flow_cancel(waiting_run_id) END)
FROM deleted
