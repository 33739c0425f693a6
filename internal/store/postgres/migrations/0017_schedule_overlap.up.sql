-- Schedule overlap (DESIGN.md section 11): what a tick does while the schedule's
-- previous run has not finished. allow (the default, as before), skip, buffer_one,
-- cancel_other; store.Overlap documents the rule, queries/schedule_claim.sql applies it.
--
-- A schedule knows its current run (the newest run a claim started, until it finishes)
-- and, under buffer_one, the run waiting for it. A waiting run is a PENDING task held
-- at scheduled_for = 9999-12-31 (store.HeldRunAt: never due). The trigger below clears
-- the current run in the transaction that finishes it and makes the waiting run due in
-- the same transaction: no process has to notice (docs/architecture.md, "Schedule
-- overlap"). Run, not task: a schedule of kind flow will track its flow the same way.
ALTER TABLE rota.schedules
    ADD COLUMN overlap         text        NOT NULL DEFAULT 'allow',
    ADD COLUMN current_run_id  uuid,
    ADD COLUMN waiting_run_id  uuid,
    -- Ticks that got no run (catch-up or overlap), and when a claim last skipped one.
    ADD COLUMN skipped_ticks   bigint      NOT NULL DEFAULT 0,
    ADD COLUMN last_skipped_at timestamptz,
    ADD CONSTRAINT schedules_overlap_known CHECK (overlap IN ('allow', 'skip', 'buffer_one', 'cancel_other'));

-- A schedule's run ended (SUCCEEDED, DEAD, FAILED, CANCELED), however it ended: a
-- worker's outcome, the HTTP protocol, the reaper, a cancel. If it was the schedule's
-- current run, the waiting run (if any) becomes current and due now, and workers are
-- woken as by an insert; if it was the waiting run (canceled while held), nothing waits
-- any more. Runs are found by their key, schedule:<name>:..., through the unique index
-- on name. The UPDATE takes the schedule's row lock, so it serializes with a claim of
-- that schedule: whichever commits second sees the other's write (the claim locks the
-- row FOR UPDATE and reads current_run_id from it; this UPDATE re-reads the row a
-- concurrent claim changed). A claim never waits for a task's lock (cancel_other locks
-- the run SKIP LOCKED), so the two cannot deadlock.
CREATE FUNCTION rota.schedule_run_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    released uuid;
    q        text;
BEGIN
    UPDATE rota.schedules
    SET current_run_id = waiting_run_id, waiting_run_id = NULL
    WHERE name = split_part(NEW.idempotency_key, ':', 2) AND current_run_id = NEW.id
    RETURNING current_run_id INTO released;
    IF FOUND THEN
        IF released IS NOT NULL THEN
            UPDATE rota.tasks
            SET scheduled_for = now(), updated_at = now()
            WHERE id = released AND status = 'PENDING' AND scheduled_for = '9999-12-31 00:00:00+00'
            RETURNING queue INTO q;
            IF FOUND THEN
                PERFORM pg_notify('rota_tasks', q);
            END IF;
        END IF;
    ELSE
        UPDATE rota.schedules
        SET waiting_run_id = NULL
        WHERE name = split_part(NEW.idempotency_key, ':', 2) AND waiting_run_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;

-- Only a schedule run's move from a live to a final status fires it: for every other
-- task the WHEN condition is all it costs.
CREATE TRIGGER tasks_schedule_run_ended
    AFTER UPDATE ON rota.tasks
    FOR EACH ROW
    WHEN (OLD.status IN ('PENDING', 'ENQUEUED', 'PROCESSING')
          AND NEW.status IN ('SUCCEEDED', 'DEAD', 'FAILED', 'CANCELED')
          AND NEW.idempotency_key LIKE 'schedule:%')
    EXECUTE FUNCTION rota.schedule_run_ended();

-- cancel_other: a claim that replaces the schedule's current run cancels it, as
-- CancelTask does: PENDING or ENQUEUED at once, PROCESSING by a cancel request and a
-- rota_cancel notification to its worker. The claim has locked that run (FOR UPDATE SKIP
-- LOCKED, or it leaves the schedule for later), so this never waits for its lock. A run
-- that already ended (the run-ended trigger promoting a waiting run) is left alone.
CREATE FUNCTION rota.schedule_cancel_replaced() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    st text;
BEGIN
    UPDATE rota.tasks
    SET status = CASE WHEN status = 'PROCESSING' THEN status ELSE 'CANCELED' END,
        completed_at = CASE WHEN status = 'PROCESSING' THEN completed_at ELSE now() END,
        cancel_requested_at = CASE WHEN status = 'PROCESSING' THEN coalesce(cancel_requested_at, now())
                                   ELSE cancel_requested_at END,
        updated_at = now()
    WHERE id = OLD.current_run_id AND status IN ('PENDING', 'ENQUEUED', 'PROCESSING')
    RETURNING status INTO st;
    IF st = 'PROCESSING' THEN
        PERFORM pg_notify('rota_cancel', OLD.current_run_id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER schedules_cancel_replaced
    AFTER UPDATE OF current_run_id ON rota.schedules
    FOR EACH ROW
    WHEN (NEW.overlap = 'cancel_other' AND OLD.current_run_id IS NOT NULL
          AND NEW.current_run_id IS NOT NULL AND OLD.current_run_id <> NEW.current_run_id)
    EXECUTE FUNCTION rota.schedule_cancel_replaced();

-- The claim's two looks at a run (queries/schedule_claim.sql), as functions so that the
-- claim statement does not name rota.tasks outside its INSERT: its status (NULL when no
-- task has the id), and cancel_other's lock of the run it replaces, which never waits.
CREATE FUNCTION rota.schedule_run_status(run uuid) RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT status FROM rota.tasks WHERE id = run);
END
$$;

CREATE FUNCTION rota.schedule_lock_run(run uuid) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM FROM rota.tasks WHERE id = run FOR UPDATE SKIP LOCKED;
    RETURN FOUND;
END
$$;
