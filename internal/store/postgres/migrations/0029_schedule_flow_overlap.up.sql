-- Schedules of kind flow take every overlap policy (DESIGN.md section 11): buffer_one and
-- cancel_other join allow and skip (migration 0021 refused them). docs/architecture.md,
-- "Schedules of kind flow", has the why; queries/schedule_claim.sql and schedules.go
-- (startScheduledFlows) the claim's half.
--
-- buffer_one: the held flow is created but not started (no rota.flow_start: its steps
-- are all WAITING, no task exists, so nothing of it can be claimed) and named in
-- waiting_run_id. The trigger below starts it (rota.flow_start: its root steps' tasks
-- are inserted, due now) in the transaction that ends the schedule's current flow, as
-- tasks_schedule_run_ended (0017) releases a held task.
--
-- cancel_other: the claim locks the running flow without waiting
-- (rota.schedule_lock_flow), and once the new flow is the current run the adapter
-- cancels the old one with rota.flow_cancel, as POST /api/flows/{id}/cancel does.
--
-- Lock order. A flow's outcome takes: the ended task's row, the flow's live tasks (a
-- failure), the flow's row (0019, "Lock order"), then, through the trigger below, the
-- schedule's row, then the held flow's row (rota.flow_start). The claim holds the
-- schedule's row first (step 1) and then takes flow rows and task rows only SKIP LOCKED,
-- or rows nobody else can hold (the flow it has just created), so it never waits for a
-- lock while it holds a schedule's: no cycle through the claim. A held flow ending (only
-- a cancel can end it: it has no task) does not touch the schedule's row (see below), so
-- the release, which waits for the held flow's row while holding the schedule's, cannot
-- meet it in a cycle either.
ALTER TABLE rota.schedules DROP CONSTRAINT schedules_flow_overlap;

-- A schedule's flow ended (SUCCEEDED, FAILED, CANCELED), however it ended: a step's
-- outcome (rota.flow_advance, from rota.record_outcomes, the HTTP protocol, the reaper),
-- a cancel, a for_each over a non-array. If it was the schedule's current run, the
-- waiting (held) flow, if any, becomes current and starts. Unlike the task trigger, a
-- held flow that ends (canceled while held) does not clear waiting_run_id: that would
-- take the schedule's row from a transaction holding the held flow's row, the reverse
-- of the release's order. The claim counts a waiting flow only while it is RUNNING, and
-- the release of a held flow that was canceled starts nothing (its steps are CANCELED).
CREATE FUNCTION rota.schedule_flow_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    released uuid;
BEGIN
    UPDATE rota.schedules
    SET current_run_id = waiting_run_id, waiting_run_id = NULL
    WHERE name = split_part(NEW.idempotency_key, ':', 2) AND current_run_id = NEW.id
    RETURNING current_run_id INTO released;
    IF released IS NOT NULL THEN
        PERFORM rota.flow_start(released);
    END IF;
    RETURN NULL;
END
$$;

-- Only a schedule flow's move from RUNNING to an end fires it (a flow row is updated
-- only when its flow ends or is replayed since 0025).
CREATE TRIGGER flows_schedule_run_ended
    AFTER UPDATE OF status ON rota.flows
    FOR EACH ROW
    WHEN (OLD.status = 'RUNNING' AND NEW.status <> 'RUNNING'
          AND NEW.idempotency_key LIKE 'schedule:%')
    EXECUTE FUNCTION rota.schedule_flow_ended();

-- cancel_other's lock of the running flow it will cancel, which never waits: every live
-- task of the flow and then its row, SKIP LOCKED. True only when it got them all: the
-- live tasks locked are counted against the live tasks a later snapshot sees (a task
-- another transaction holds, its outcome or heartbeat being written, is live in that
-- snapshot but was skipped; one inserted meanwhile is counted too). Holding them, the
-- claim's rota.flow_cancel waits for nothing: no task of the flow can end, start or be
-- added while its live tasks and its row are held (a step's successor is inserted by the
-- transaction that ended the step's task). enable_seqscan off: the reads go through
-- tasks_flow_step (flow_id first) and the flows' primary key, whatever the statistics.
CREATE FUNCTION rota.schedule_lock_flow(run uuid) RETURNS boolean
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
    locked bigint;
BEGIN
    SELECT count(*) INTO locked
    FROM (SELECT 1 FROM rota.tasks
          WHERE flow_id = run AND status IN ('PENDING', 'ENQUEUED', 'PROCESSING')
          FOR UPDATE SKIP LOCKED) l;
    IF locked <> (SELECT count(*) FROM rota.tasks
                  WHERE flow_id = run AND status IN ('PENDING', 'ENQUEUED', 'PROCESSING')) THEN
        RETURN false;
    END IF;
    PERFORM FROM rota.flows WHERE id = run FOR UPDATE SKIP LOCKED;
    RETURN FOUND;
END
$$;

-- The task trigger of cancel_other (0017) is for kind task only: a flow schedule's
-- replaced flow is canceled by the adapter (rota.flow_cancel), which knows whether the
-- claim locked it.
DROP TRIGGER schedules_cancel_replaced ON rota.schedules;
CREATE TRIGGER schedules_cancel_replaced
    AFTER UPDATE OF current_run_id ON rota.schedules
    FOR EACH ROW
    WHEN (NEW.kind = 'task' AND NEW.overlap = 'cancel_other' AND OLD.current_run_id IS NOT NULL
          AND NEW.current_run_id IS NOT NULL AND OLD.current_run_id <> NEW.current_run_id)
    EXECUTE FUNCTION rota.schedule_cancel_replaced();
