-- CreateSchedule: next_run_at is the first tick after now, computed by the database
-- (rota.next_cron_tick raises SQLSTATE 22023 naming the field for a bad spec or zone).
-- $1 name, $2 kind, $3 task_kind, $4 task_queue, $5 task_payload, $6 task_max_attempts,
-- $7 cron_spec, $8 timezone, $9 enabled, $10 catch_up, $11 overlap, $12 flow_template (kind
-- flow; NULL for kind task).
INSERT INTO rota.schedules (name, kind, task_kind, task_queue, task_payload, task_max_attempts,
                            cron_spec, timezone, next_run_at, enabled, catch_up, overlap, flow_template)
VALUES ($1, $2, $3, $4, $5, $6, $7::text, $8::text, rota.next_cron_tick($7::text, now(), $8::text), $9, $10, $11, $12)
RETURNING name, kind, cron_spec, timezone, task_kind, task_queue, task_payload, task_max_attempts,
          enabled, catch_up, next_run_at, last_run_at, last_enqueued_at, created_at, updated_at,
          overlap, current_run_id, waiting_run_id, skipped_ticks, last_skipped_at, flow_template
