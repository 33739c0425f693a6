-- TriggerSchedule and TriggerScheduleFlow: the schedule's task template, its kind and flow
-- template, and the database's clock, which names the manual run's idempotency key.
SELECT task_kind, task_queue, task_payload, task_max_attempts, clock_timestamp(), kind, flow_template
FROM rota.schedules
WHERE name = $1
