-- TriggerSchedule: the schedule's task template and the database's clock, which names
-- the manual run's idempotency key.
SELECT task_kind, task_queue, task_payload, task_max_attempts, clock_timestamp()
FROM rota.schedules
WHERE name = $1
