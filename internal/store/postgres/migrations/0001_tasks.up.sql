-- Rota's task model: tasks, their attempt history and the dead-letter audit trail.
-- The state machine of docs/architecture.md is enforced here, so that no code path (nor a
-- hand-written UPDATE in psql) can make an illegal transition.

CREATE TABLE rota.tasks (
    id                    uuid        PRIMARY KEY,
    queue                 text        NOT NULL,
    kind                  text        NOT NULL,
    payload               jsonb       NOT NULL DEFAULT '{}',
    status                text        NOT NULL DEFAULT 'PENDING',
    priority              smallint    NOT NULL DEFAULT 0,
    scheduled_for         timestamptz NOT NULL DEFAULT now(),
    attempt_count         integer     NOT NULL DEFAULT 0,
    max_attempts          integer     NOT NULL DEFAULT 25,
    idempotency_key       text,
    timeout_seconds       integer     NOT NULL DEFAULT 0,
    worker_id             text,
    lease_token           uuid,
    lease_expires_at      timestamptz,
    cancel_requested_at   timestamptz,
    enqueued_at           timestamptz,
    processing_started_at timestamptz,
    completed_at          timestamptz,
    last_error            text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT tasks_status_known CHECK (status IN
        ('PENDING', 'ENQUEUED', 'PROCESSING', 'SUCCEEDED', 'FAILED', 'DEAD', 'CANCELED')),
    CONSTRAINT tasks_attempts_bounded CHECK (attempt_count >= 0 AND max_attempts >= 1 AND attempt_count <= max_attempts),
    CONSTRAINT tasks_timeout_positive CHECK (timeout_seconds >= 0),
    CONSTRAINT tasks_names_nonempty CHECK (queue <> '' AND kind <> ''),
    -- A PROCESSING task always has an owner and a lease; no other status has a lease.
    CONSTRAINT tasks_lease_iff_processing CHECK (
        (status = 'PROCESSING' AND lease_token IS NOT NULL AND lease_expires_at IS NOT NULL AND worker_id IS NOT NULL)
        OR (status <> 'PROCESSING' AND lease_token IS NULL AND lease_expires_at IS NULL))
);

-- Claiming: the partial indexes hold only the tasks a claimer may take, so they stay
-- small however many finished tasks the table keeps (10 million rows and more).
CREATE INDEX tasks_claim_pending ON rota.tasks (queue, priority DESC, scheduled_for, id)
    WHERE status = 'PENDING';
CREATE INDEX tasks_claim_enqueued ON rota.tasks (queue, priority DESC, scheduled_for, id)
    WHERE status = 'ENQUEUED';
-- The lease reaper looks only at running tasks.
CREATE INDEX tasks_lease_expiry ON rota.tasks (lease_expires_at) WHERE status = 'PROCESSING';
-- Listing by status, newest first.
CREATE INDEX tasks_status_id ON rota.tasks (status, id DESC);
-- Idempotency is the database's job: one live (or succeeded) task per key. A key whose task
-- ended DEAD, FAILED or CANCELED may be used again.
CREATE UNIQUE INDEX tasks_idempotency_key ON rota.tasks (idempotency_key)
    WHERE idempotency_key IS NOT NULL AND status NOT IN ('DEAD', 'FAILED', 'CANCELED');

CREATE TABLE rota.task_attempts (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id     uuid        NOT NULL REFERENCES rota.tasks (id) ON DELETE CASCADE,
    attempt     integer     NOT NULL,
    worker_id   text,
    lease_token uuid,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    outcome     text,
    error       text,
    CONSTRAINT task_attempts_outcome_known CHECK (outcome IS NULL OR outcome IN
        ('SUCCEEDED', 'RETRIED', 'DEAD', 'FAILED', 'CANCELED', 'LEASE_EXPIRED', 'REPLAYED'))
);
CREATE INDEX task_attempts_task ON rota.task_attempts (task_id, id);
CREATE UNIQUE INDEX task_attempts_lease ON rota.task_attempts (lease_token) WHERE lease_token IS NOT NULL;

CREATE TABLE rota.dead_letters (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id       uuid        NOT NULL REFERENCES rota.tasks (id) ON DELETE CASCADE,
    kind          text        NOT NULL,
    queue         text        NOT NULL,
    worker_id     text,
    attempt_count integer     NOT NULL,
    max_attempts  integer     NOT NULL,
    error         text,
    reason        text        NOT NULL CHECK (reason IN ('DEAD', 'FAILED')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    replayed_at   timestamptz
);
CREATE INDEX dead_letters_task ON rota.dead_letters (task_id);

-- The state machine. Fires only when status or lease token changes.
CREATE FUNCTION rota.tasks_check_transition() RETURNS trigger
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

CREATE TRIGGER tasks_check_transition
    BEFORE UPDATE ON rota.tasks
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.lease_token IS DISTINCT FROM NEW.lease_token)
    EXECUTE FUNCTION rota.tasks_check_transition();

-- Bookkeeping that must happen whichever code path moved the task: a dead-letter event
-- for every DEAD or FAILED, and a replay event (plus closing the open dead letters) for
-- every operator replay.
CREATE FUNCTION rota.tasks_record_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IN ('DEAD', 'FAILED') THEN
        INSERT INTO rota.dead_letters (task_id, kind, queue, worker_id, attempt_count, max_attempts, error, reason)
        VALUES (NEW.id, NEW.kind, NEW.queue, NEW.worker_id, NEW.attempt_count, NEW.max_attempts, NEW.last_error, NEW.status);
    ELSIF NEW.status = 'PENDING' AND OLD.status IN ('DEAD', 'FAILED', 'CANCELED') THEN
        INSERT INTO rota.task_attempts (task_id, attempt, started_at, finished_at, outcome, error)
        VALUES (NEW.id, OLD.attempt_count, now(), now(), 'REPLAYED', 'replayed from ' || OLD.status);
        UPDATE rota.dead_letters SET replayed_at = now() WHERE task_id = NEW.id AND replayed_at IS NULL;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_record_transition
    AFTER UPDATE ON rota.tasks
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status AND
          (NEW.status IN ('DEAD', 'FAILED') OR (NEW.status = 'PENDING' AND OLD.status IN ('DEAD', 'FAILED', 'CANCELED'))))
    EXECUTE FUNCTION rota.tasks_record_transition();

-- Wake poll-mode workers: one notification per queue per inserting statement, carrying
-- the queue name, and only for tasks that are already due.
CREATE FUNCTION rota.tasks_notify_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rota_tasks', q.queue)
    FROM (SELECT DISTINCT queue FROM new_rows WHERE status = 'PENDING' AND scheduled_for <= now()) AS q;
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_notify_insert
    AFTER INSERT ON rota.tasks
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION rota.tasks_notify_insert();
