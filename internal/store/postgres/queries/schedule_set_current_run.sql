-- ClaimDueSchedules, kind flow: the newest flow the claim started is the schedule's
-- current run (overlap skip waits for it to stop RUNNING). In the claim's transaction,
-- which already holds the row's lock. $1 name, $2 flow id.
UPDATE rota.schedules SET current_run_id = $2 WHERE name = $1
