-- ResumeSchedule: a disabled schedule is enabled with next_run_at = the first tick after
-- now (ticks missed while paused never run); an enabled one is left as it is.
UPDATE rota.schedules
SET next_run_at = CASE WHEN enabled THEN next_run_at
                       ELSE rota.next_cron_tick(cron_spec, now(), timezone) END,
    enabled = true,
    updated_at = now()
WHERE name = $1
RETURNING name, kind, cron_spec, timezone, task_kind, task_queue, task_payload, task_max_attempts,
          enabled, catch_up, next_run_at, last_run_at, last_enqueued_at, created_at, updated_at,
          overlap, current_run_id, waiting_run_id, skipped_ticks, last_skipped_at, flow_template
