-- rota:no-transaction
-- Indexes for flows (migration 0019), built concurrently as migration 0010's are:
-- enqueues and claims go on while they build (docs/architecture.md, "Online migrations").

-- At most one task row per flow step element (docs/architecture.md "Flows"): whatever
-- path ends a dependency, a second insert of the same (flow, step, element) fails
-- instead of running a step twice. It also finds a flow's tasks (GetFlow, a step's
-- fan-in, a flow's failure or cancel, retention) in element order. Partial: plain tasks
-- (flow_id NULL) are not in it, so they pay nothing for it.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS tasks_flow_step ON rota.tasks (flow_id, flow_step, flow_index)
    WHERE flow_id IS NOT NULL;

-- Retention deletes a flow's tasks with the flow, never one by one, so the walk over
-- finished tasks (queries/delete_finished_tasks.sql) must not step over step tasks
-- whose flow is kept longer (a failed flow's succeeded steps are past the succeeded
-- cut-off for weeks). tasks_finished_status (0010) is split in two with the same key:
-- plain finished tasks, which retention walks, and finished step tasks, which only the
-- throughput insight reads (with the plain ones). A finished task is in exactly one of
-- them, as it was in tasks_finished_status, so finishing a task costs what it did.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_finished_plain ON rota.tasks (status, completed_at)
    WHERE status IN ('SUCCEEDED', 'CANCELED', 'DEAD', 'FAILED') AND flow_id IS NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_finished_flow ON rota.tasks (status, completed_at)
    WHERE status IN ('SUCCEEDED', 'CANCELED', 'DEAD', 'FAILED') AND flow_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_finished_status;
