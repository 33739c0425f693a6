-- Back to migration 0007's state machine. PENDING tasks stay PENDING: the old statements
-- send or claim them as before.
DROP TABLE rota.sqs_enqueuers;

CREATE OR REPLACE FUNCTION rota.tasks_check_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    legal boolean;
BEGIN
    IF OLD.status = NEW.status THEN
        IF NEW.status = 'PROCESSING' AND NEW.lease_token IS DISTINCT FROM OLD.lease_token THEN
            RAISE EXCEPTION 'rota: the lease token of a PROCESSING task cannot change'
                USING ERRCODE = 'check_violation', CONSTRAINT = 'tasks_status_transition';
        END IF;
        RETURN NEW;
    END IF;

    legal := CASE OLD.status
        WHEN 'PENDING'    THEN NEW.status IN ('ENQUEUED', 'PROCESSING', 'CANCELED')
        WHEN 'ENQUEUED'   THEN NEW.status IN ('PROCESSING', 'CANCELED')
        WHEN 'PROCESSING' THEN NEW.status IN ('SUCCEEDED', 'PENDING', 'ENQUEUED', 'DEAD', 'FAILED', 'CANCELED')
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
              WHEN OLD.status = 'PROCESSING' THEN NEW.status IN ('SUCCEEDED', 'PENDING', 'ENQUEUED', 'DEAD', 'FAILED', 'CANCELED')
              WHEN OLD.status = 'PENDING' THEN NEW.status IN ('ENQUEUED', 'CANCELED')
              WHEN OLD.status = 'ENQUEUED' THEN NEW.status = 'CANCELED'
              WHEN OLD.status IN ('DEAD', 'FAILED', 'CANCELED') THEN NEW.status = 'PENDING'
              ELSE false
          END)
    EXECUTE FUNCTION rota.tasks_check_transition();
