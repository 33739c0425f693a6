-- UpdateSchedule: NULL arguments keep their column. A new spec or time zone, or enabling
-- a disabled schedule, recomputes next_run_at from now (the SET expressions see the old
-- row). $1 name, $2 cron_spec, $3 timezone, $4 task_kind, $5 task_queue, $6 task_payload,
-- $7 task_max_attempts, $8 enabled, $9 catch_up, $10 overlap (a new policy applies from the
-- next tick; a run already held stays held until the current run ends), $11 flow_template
-- (a kind flow schedule's new flow; the adapter then passes its placeholder task too).
UPDATE rota.schedules
SET cron_spec         = coalesce($2::text, cron_spec),
    timezone          = coalesce($3::text, timezone),
    task_kind         = coalesce($4::text, task_kind),
    task_queue        = coalesce($5::text, task_queue),
    task_payload      = coalesce($6::jsonb, task_payload),
    task_max_attempts = coalesce($7::integer, task_max_attempts),
    enabled           = coalesce($8::boolean, enabled),
    catch_up          = coalesce($9::text, catch_up),
    overlap           = coalesce($10::text, overlap),
    flow_template     = coalesce($11::jsonb, flow_template),
    next_run_at       = CASE
        WHEN $2::text IS NOT NULL OR $3::text IS NOT NULL OR ($8::boolean AND NOT enabled)
        THEN rota.next_cron_tick(coalesce($2::text, cron_spec), now(), coalesce($3::text, timezone))
        ELSE next_run_at END,
    updated_at        = now()
WHERE name = $1
RETURNING name, kind, cron_spec, timezone, task_kind, task_queue, task_payload, task_max_attempts,
          enabled, catch_up, next_run_at, last_run_at, last_enqueued_at, created_at, updated_at,
          overlap, current_run_id, waiting_run_id, skipped_ticks, last_skipped_at, flow_template
