-- A queue's delivery mode is decided by the database, not by whichever process touches
-- its tasks (docs/architecture.md, "How a queue's mode is decided"):
--
-- 1. A task that waits to run is PENDING, in every mode. ENQUEUED means only "an SQS
--    message for it was sent": the enqueuer's send is the one way in. Retries, reaped
--    leases, releases and replays all return a task to PENDING, where a poll worker claims
--    it and, in a queue an SQS enqueuer serves, the enqueuer sends it again. So
--    PROCESSING -> ENQUEUED is no longer legal, and the ENQUEUED tasks without a message
--    (enqueued_at NULL) that the old retry and reaper statements made go back to PENDING.
-- 2. rota.sqs_enqueuers records which queues an SQS enqueuer serves, one row per
--    enqueuer and queue, renewed while it runs. ENQUEUED tasks of a queue no enqueuer
--    serves (moved to poll mode, or every SQS server gone) go back to PENDING
--    (ENQUEUED -> PENDING, the new transition), where poll workers find them.
CREATE TABLE rota.sqs_enqueuers (
    queue        text        NOT NULL,
    enqueuer_id  text        NOT NULL,
    served_until timestamptz NOT NULL,
    PRIMARY KEY (queue, enqueuer_id)
);

CREATE OR REPLACE FUNCTION rota.tasks_check_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    legal boolean;
BEGIN
    IF OLD.status = NEW.status THEN
        -- Same status: only a PROCESSING task's lease token is fenced; it can never be
        -- swapped without leaving PROCESSING (a taken-over worker cannot sneak back in).
        IF NEW.status = 'PROCESSING' AND NEW.lease_token IS DISTINCT FROM OLD.lease_token THEN
            RAISE EXCEPTION 'rota: the lease token of a PROCESSING task cannot change'
                USING ERRCODE = 'check_violation', CONSTRAINT = 'tasks_status_transition';
        END IF;
        RETURN NEW;
    END IF;

    legal := CASE OLD.status
        WHEN 'PENDING'    THEN NEW.status IN ('ENQUEUED', 'PROCESSING', 'CANCELED')
        WHEN 'ENQUEUED'   THEN NEW.status IN ('PROCESSING', 'PENDING', 'CANCELED')
        WHEN 'PROCESSING' THEN NEW.status IN ('SUCCEEDED', 'PENDING', 'DEAD', 'FAILED', 'CANCELED')
        WHEN 'DEAD'       THEN NEW.status = 'PENDING'
        WHEN 'FAILED'     THEN NEW.status = 'PENDING'
        WHEN 'CANCELED'   THEN NEW.status = 'PENDING'
        ELSE false
    END;
    IF NOT legal THEN
        RAISE EXCEPTION 'rota: illegal task transition % -> % (task %)', OLD.status, NEW.status, OLD.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tasks_status_transition';
    END IF;

    IF NEW.status = 'PROCESSING' THEN
        IF NEW.attempt_count <> OLD.attempt_count + 1 THEN
            RAISE EXCEPTION 'rota: a claim must count exactly one attempt (task %)', OLD.id
                USING ERRCODE = 'check_violation', CONSTRAINT = 'tasks_status_transition';
        END IF;
        IF OLD.scheduled_for > now() THEN
            RAISE EXCEPTION 'rota: task % is not due until %', OLD.id, OLD.scheduled_for
                USING ERRCODE = 'check_violation', CONSTRAINT = 'tasks_status_transition';
        END IF;
    END IF;
    RETURN NEW;
END
$$;

-- The same table in the trigger's WHEN condition (migration 0007 explains why both).
DROP TRIGGER tasks_check_transition ON rota.tasks;
CREATE TRIGGER tasks_check_transition
    BEFORE UPDATE ON rota.tasks
    FOR EACH ROW
    WHEN ((OLD.status IS DISTINCT FROM NEW.status OR OLD.lease_token IS DISTINCT FROM NEW.lease_token)
          AND NOT CASE
              WHEN OLD.status = NEW.status THEN NEW.status <> 'PROCESSING'
              WHEN NEW.status = 'PROCESSING' THEN OLD.status IN ('PENDING', 'ENQUEUED')
                   AND NEW.attempt_count = OLD.attempt_count + 1
                   AND OLD.scheduled_for <= now()
              WHEN OLD.status = 'PROCESSING' THEN NEW.status IN ('SUCCEEDED', 'PENDING', 'DEAD', 'FAILED', 'CANCELED')
              WHEN OLD.status = 'PENDING' THEN NEW.status IN ('ENQUEUED', 'CANCELED')
              WHEN OLD.status = 'ENQUEUED' THEN NEW.status IN ('PENDING', 'CANCELED')
              WHEN OLD.status IN ('DEAD', 'FAILED', 'CANCELED') THEN NEW.status = 'PENDING'
              ELSE false
          END)
    EXECUTE FUNCTION rota.tasks_check_transition();

-- ENQUEUED without a message (a retry or reaped task of the old statements): PENDING, the
-- one waiting state. Found through tasks_enqueue_unsent (migration 0005).
UPDATE rota.tasks
SET status = 'PENDING', updated_at = now()
WHERE status = 'ENQUEUED' AND enqueued_at IS NULL;
