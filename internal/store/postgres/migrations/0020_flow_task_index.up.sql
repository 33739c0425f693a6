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

-- Retention deletes a flow's tasks with the flow, never one by one, so its walk over
-- finished plain tasks (queries/delete_finished_tasks.sql) must not step over step tasks
-- whose flow is kept longer (a failed flow's succeeded steps are past the succeeded
-- cut-off for weeks). tasks_finished_status (0010) gets whether the task is a plain task
-- as its second column: retention reads (status, true, completed_at < cut-off), the
-- throughput insight both halves of its range, and whatever read the old index by status
-- (CountReplayable, index only) reads this one as it did. Same predicate, one index as
-- before, and its entries as large (the boolean fits the padding before completed_at):
-- finishing a task costs what it did.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_finished_by_flow
    ON rota.tasks (status, (flow_id IS NULL), completed_at)
    WHERE status IN ('SUCCEEDED', 'CANCELED', 'DEAD', 'FAILED');
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_finished_status;
