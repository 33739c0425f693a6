-- ClaimDueSchedules, kind flow: the newest flow the claim started is the schedule's
-- current run (overlap skip, buffer_one and cancel_other wait for it to stop RUNNING),
-- and a held flow (buffer_one) its waiting run, which rota.schedule_flow_ended (migration
-- 0029) starts when the current flow ends. In the claim's transaction, which already
-- holds the row's lock. $1 name, $2 current flow id, $3 held flow id (NULL: unchanged).
UPDATE rota.schedules
SET current_run_id = coalesce($2, current_run_id), waiting_run_id = coalesce($3, waiting_run_id)
WHERE name = $1
