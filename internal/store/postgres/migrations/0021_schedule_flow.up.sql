-- Schedules of kind flow (DESIGN.md section 10): the flow each tick starts, as the create
-- body of a flow without idempotency_key (store.FlowBody). A flow schedule's task_*
-- columns hold a placeholder (kind 'flow' on the flow's queue) that nothing enqueues;
-- queries/schedule_claim.sql inserts tasks for kind task only, and the adapter starts
-- one flow per planned tick in the claim's transaction (schedules.go). Overlap for kind
-- flow is allow or skip (a held flow and a canceling claim do not exist yet).
ALTER TABLE rota.schedules
    ADD COLUMN flow_template jsonb,
    ADD CONSTRAINT schedules_flow_template_iff_flow CHECK ((kind = 'flow') = (flow_template IS NOT NULL)),
    ADD CONSTRAINT schedules_flow_overlap CHECK (kind = 'task' OR overlap IN ('allow', 'skip'));

-- The claim's look at a kind flow schedule's current run: whether its flow is RUNNING
-- (NULL when no flow has the id). A function, as rota.schedule_run_status is for tasks,
-- so that the claim statement does not name rota.flows (every relation a statement names
-- is locked at each execution).
CREATE FUNCTION rota.schedule_flow_running(run uuid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT status = 'RUNNING' FROM rota.flows WHERE id = run);
END
$$;
