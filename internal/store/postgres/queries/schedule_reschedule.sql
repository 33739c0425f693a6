-- RescheduleSchedule: $2 is the new next_run_at (a time in the past makes it due now).
UPDATE rota.schedules
SET next_run_at = $2, updated_at = now()
WHERE name = $1
RETURNING name, kind, cron_spec, timezone, task_kind, task_queue, task_payload, task_max_attempts,
          enabled, catch_up, next_run_at, last_run_at, last_enqueued_at, created_at, updated_at,
          overlap, current_run_id, waiting_run_id, skipped_ticks, last_skipped_at, flow_template
