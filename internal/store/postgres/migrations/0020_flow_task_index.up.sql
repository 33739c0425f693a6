-- rota:no-transaction
-- At most one task row per flow step element (docs/architecture.md "Flows"): whatever
-- path ends a dependency, a second insert of the same (flow, step, element) fails
-- instead of running a step twice. It also finds a flow's tasks (GetFlow, a step's
-- fan-in, a flow's failure or cancel, retention) in element order. Partial: plain tasks
-- (flow_id NULL) are not in it, so they pay nothing for it. Built concurrently, as
-- migration 0010's indexes: enqueues and claims go on while it builds.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS tasks_flow_step ON rota.tasks (flow_id, flow_step, flow_index)
    WHERE flow_id IS NOT NULL;
