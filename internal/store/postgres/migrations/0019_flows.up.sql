-- Flows (DESIGN.md section 10, docs/architecture.md "Flows"): DAGs of steps that run as
-- ordinary tasks, moved forward by the database. Triggers on rota.tasks do it: the
-- transaction that ends a step task's last attempt (record_outcomes.sql, the HTTP
-- complete, the lease reaper, a cancel) also creates the tasks of the steps that were
-- waiting for it, or fails the flow. Plain tasks (flow_id NULL) pay nothing: the
-- trigger's WHEN clause leaves them out before any function runs.

CREATE TABLE rota.flows (
    id              uuid        PRIMARY KEY,
    name            text,
    queue           text        NOT NULL,
    status          text        NOT NULL DEFAULT 'RUNNING',
    idempotency_key text,
    -- Steps not SUCCEEDED yet: the flow succeeds when the last one does.
    steps_left      integer     NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz,
    CONSTRAINT flows_status_known CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED')),
    CONSTRAINT flows_completed_iff_ended CHECK ((status = 'RUNNING') = (completed_at IS NULL)),
    CONSTRAINT flows_steps_left CHECK (steps_left >= 0)
);
-- As for tasks: one flow per key unless it ended FAILED or CANCELED.
CREATE UNIQUE INDEX flows_idempotency_key ON rota.flows (idempotency_key)
    WHERE idempotency_key IS NOT NULL AND status NOT IN ('FAILED', 'CANCELED');
-- ListFlows: newest first per status, and per name and status (queries/list_flows*.sql).
CREATE INDEX flows_status_id ON rota.flows (status, id DESC);
CREATE INDEX flows_name_status_id ON rota.flows (name, status, id DESC) WHERE name IS NOT NULL;
-- Retention: ended flows by status, then completion time.
CREATE INDEX flows_finished ON rota.flows (status, completed_at) WHERE status <> 'RUNNING';

CREATE TABLE rota.flow_steps (
    flow_id         uuid     NOT NULL REFERENCES rota.flows (id) ON DELETE CASCADE,
    name            text     NOT NULL,
    position        integer  NOT NULL, -- in the create body
    kind            text     NOT NULL,
    queue           text     NOT NULL,
    payload         jsonb    NOT NULL,
    depends_on      text[]   NOT NULL,
    for_each        text,
    max_attempts    integer  NOT NULL,
    priority        smallint NOT NULL,
    timeout_seconds integer  NOT NULL,
    group_key       text,    -- every task of the step gets it (NULL: none)
    -- store.StepState: WAITING (no task yet), STARTED (its tasks exist), SUCCEEDED,
    -- FAILED (could not start: for_each over a non-array), CANCELED (never started and
    -- never will: its flow failed or was canceled).
    state           text     NOT NULL DEFAULT 'WAITING',
    -- Dependencies not SUCCEEDED yet: the step starts when the last one does.
    deps_left       integer  NOT NULL,
    -- Tasks not SUCCEEDED yet (NULL until STARTED): the step succeeds when the last one does.
    tasks_left      integer,
    task_count      integer, -- its tasks (NULL until STARTED)
    -- Its dependencies' outputs by step name (NULL until STARTED): the "inputs" of every
    -- task of the step, kept once here and read by (flow_id, flow_step) through the
    -- primary key wherever a task's inputs are returned (the claims, GetTask), never
    -- copied into the task rows: a fan-out's element tasks would each carry the whole
    -- array it fans out over, and starting a 10,000-wide one would write 10,000 copies.
    inputs          jsonb,
    output          jsonb,
    error           text,
    PRIMARY KEY (flow_id, name),
    CONSTRAINT flow_steps_state_known CHECK (state IN ('WAITING', 'STARTED', 'SUCCEEDED', 'FAILED', 'CANCELED')),
    CONSTRAINT flow_steps_counters CHECK (deps_left >= 0 AND (tasks_left IS NULL OR tasks_left >= 0))
);
CREATE UNIQUE INDEX flow_steps_position ON rota.flow_steps (flow_id, position);

-- A step task's flow, step and element (its inputs are its step's: rota.flow_steps.inputs).
-- Nullable without a default: adding them rewrites nothing. flow_index is the element's
-- 0-based position for a for_each step and 0 for a single-task step; flow_item is NULL
-- unless the step has for_each. The unique
-- index over (flow_id, flow_step, flow_index) (migration 0020, built concurrently) is
-- what makes a second task row for one element impossible.
ALTER TABLE rota.tasks
    ADD COLUMN flow_id     uuid,
    ADD COLUMN flow_step   text,
    ADD COLUMN flow_index  integer,
    ADD COLUMN flow_item   jsonb;

-- A time-ordered (v7-shaped) task id made in SQL, as schedule_claim.sql makes them: the
-- millisecond clock, then seq (ordering the ids one statement makes), then randomness.
-- (PL/pgSQL, as the helpers below: a SQL function that is not inlined is planned again
-- on every call from PL/pgSQL, which keeps its own statements' plans for the session.)
CREATE FUNCTION rota.new_task_id(seq bigint) RETURNS uuid
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN (lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
            || '7' || lpad(to_hex((seq >> 12) & 4095), 3, '0')
            || '8' || lpad(to_hex(seq & 4095), 3, '0')
            || right(replace(gen_random_uuid()::text, '-', ''), 12))::uuid;
END
$$;

-- Lock order. Every function below that changes a flow locks its rota.flows row before
-- its steps' rows (the step counters are read and written only under it), so concurrent
-- completions of one flow's tasks are serialized on the flow row: two siblings of a
-- diamond, or two elements of a fan-out, finishing at once each decrement a counter
-- after the other committed (READ COMMITTED re-reads the row after the wait), and only
-- the one that takes it to zero starts the next step. One statement locks the rows of
-- the flows it moves in flow id order (tasks_flow_advance, below). A path that changes
-- other tasks of a flow (failure, cancel) locks those tasks first, in id order, and the
-- flow row after: a completion holds its own task's row before it reaches the flow row,
-- so taking the flow row first and the tasks after would deadlock with it.

-- A step's inputs: each dependency's output (JSON null for none) by step name.
CREATE FUNCTION rota.flow_step_inputs(f uuid, deps text[]) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT coalesce(jsonb_object_agg(d.name, coalesce(d.output, 'null'::jsonb)), '{}'::jsonb)
            FROM rota.flow_steps d
            WHERE d.flow_id = f AND d.name = ANY (deps));
END
$$;

-- A succeeded step's output: its task's, or for a for_each step the array of its tasks'
-- outputs in element order (the fan-in), through tasks_flow_step.
CREATE FUNCTION rota.flow_step_output(f uuid, step_name text, fan_in boolean) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF NOT fan_in THEN
        RETURN (SELECT t.output FROM rota.tasks t
                WHERE t.flow_id = f AND t.flow_step = step_name AND t.flow_index = 0);
    END IF;
    RETURN coalesce((SELECT jsonb_agg(coalesce(t.output, 'null'::jsonb) ORDER BY t.flow_index)
                     FROM rota.tasks t
                     WHERE t.flow_id = f AND t.flow_step = step_name), '[]'::jsonb);
END
$$;

-- flow_activate starts step_name, whose dependencies all succeeded: its inputs (the
-- dependencies' outputs) are kept on its row, and its task, or one task per element of
-- its for_each dependency's output (item and index only), is inserted. The caller holds
-- the flow row.
CREATE FUNCTION rota.flow_activate(f uuid, step_name text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    st     rota.flow_steps;
    step_inputs jsonb;
    items  jsonb;
    n      integer;
BEGIN
    SELECT * INTO STRICT st FROM rota.flow_steps WHERE flow_id = f AND name = step_name;
    IF (SELECT sum(pg_column_size(d.output)) FROM rota.flow_steps d
        WHERE d.flow_id = f AND d.name = ANY (st.depends_on)) > 1048576 THEN
        -- Large dependency outputs may add up to more than a jsonb value may hold (255
        -- MiB): the step fails rather than the statement that ended its last dependency
        -- failing for ever. Only then: the exception block is a subtransaction, and a
        -- batch of outcomes with one per step would overflow PostgreSQL's per-transaction
        -- cache of them (64), which slows every session.
        BEGIN
            step_inputs := rota.flow_step_inputs(f, st.depends_on);
        EXCEPTION WHEN program_limit_exceeded THEN
            UPDATE rota.flow_steps SET state = 'FAILED', error = 'inputs: ' || SQLERRM
            WHERE flow_id = f AND name = step_name;
            PERFORM rota.flow_stop(f, 'FAILED');
            RETURN;
        END;
    ELSE
        step_inputs := rota.flow_step_inputs(f, st.depends_on);
    END IF;

    IF st.for_each IS NULL THEN
        UPDATE rota.flow_steps SET state = 'STARTED', tasks_left = 1, task_count = 1, inputs = step_inputs
        WHERE flow_id = f AND name = step_name;
        INSERT INTO rota.tasks (id, queue, kind, payload, priority, max_attempts, timeout_seconds,
                                group_key, flow_id, flow_step, flow_index)
        VALUES (rota.new_task_id(0), st.queue, st.kind, st.payload, st.priority, st.max_attempts,
                st.timeout_seconds, st.group_key, f, step_name, 0);
        RETURN;
    END IF;

    items := step_inputs -> st.for_each;
    IF jsonb_typeof(items) IS DISTINCT FROM 'array' THEN
        UPDATE rota.flow_steps
        SET state = 'FAILED',
            error = format('for_each: the output of step %s is %s, not an array',
                           st.for_each, coalesce(jsonb_typeof(items), 'null'))
        WHERE flow_id = f AND name = step_name;
        PERFORM rota.flow_stop(f, 'FAILED');
        RETURN;
    END IF;
    n := jsonb_array_length(items);
    UPDATE rota.flow_steps SET state = 'STARTED', tasks_left = n, task_count = n, inputs = step_inputs
    WHERE flow_id = f AND name = step_name;
    IF n = 0 THEN
        -- Nothing to run: the step succeeds at once (with output []).
        PERFORM rota.flow_step_done(f, step_name);
        RETURN;
    END IF;
    INSERT INTO rota.tasks (id, queue, kind, payload, priority, max_attempts, timeout_seconds,
                            group_key, flow_id, flow_step, flow_index, flow_item)
    SELECT rota.new_task_id(e.ord), st.queue, st.kind, st.payload, st.priority, st.max_attempts,
           st.timeout_seconds, st.group_key, f, step_name, (e.ord - 1)::integer, e.item
    FROM jsonb_array_elements(items) WITH ORDINALITY AS e (item, ord);
END
$$;

-- flow_step_done: all of step_name's tasks succeeded. Its output is set (its task's, or
-- the array of its tasks' outputs in element order), the flow succeeds if it was the
-- last step, and the steps waiting for it count it; those it was the last dependency of
-- start now, in this transaction. The caller holds the flow row.
CREATE FUNCTION rota.flow_step_done(f uuid, step_name text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    next_step text;
    st        rota.flow_steps;
    step_output jsonb;
BEGIN
    SELECT * INTO STRICT st FROM rota.flow_steps WHERE flow_id = f AND name = step_name;
    IF st.task_count > 128 THEN
        -- Up to 128 outputs of at most 1 MiB fit a jsonb value (255 MiB); a larger fan-in
        -- may not, and then the step fails (see flow_activate on why only then).
        BEGIN
            step_output := rota.flow_step_output(f, step_name, st.for_each IS NOT NULL);
        EXCEPTION WHEN program_limit_exceeded THEN
            UPDATE rota.flow_steps SET error = 'fan-in: ' || SQLERRM WHERE flow_id = f AND name = step_name;
            PERFORM rota.flow_stop(f, 'FAILED');
            RETURN;
        END;
    ELSE
        step_output := rota.flow_step_output(f, step_name, st.for_each IS NOT NULL);
    END IF;
    UPDATE rota.flow_steps SET state = 'SUCCEEDED', error = NULL, output = step_output
    WHERE flow_id = f AND name = step_name;

    UPDATE rota.flows
    SET steps_left = steps_left - 1,
        status = CASE WHEN steps_left = 1 THEN 'SUCCEEDED' ELSE status END,
        completed_at = CASE WHEN steps_left = 1 THEN now() ELSE completed_at END,
        updated_at = now()
    WHERE id = f;

    UPDATE rota.flow_steps
    SET deps_left = deps_left - 1
    WHERE flow_id = f AND state = 'WAITING' AND step_name = ANY (depends_on);
    -- Start the ones that waited for this step last, in create order; one may fail the
    -- flow (a for_each over a non-array), which ends the walk.
    FOR next_step IN
        SELECT name FROM rota.flow_steps
        WHERE flow_id = f AND state = 'WAITING' AND deps_left = 0 AND step_name = ANY (depends_on)
        ORDER BY position
    LOOP
        EXIT WHEN (SELECT status FROM rota.flows WHERE id = f) <> 'RUNNING';
        PERFORM rota.flow_activate(f, next_step);
    END LOOP;
END
$$;

-- flow_stop ends a RUNNING flow as FAILED or CANCELED: waiting steps become CANCELED,
-- PENDING and ENQUEUED tasks CANCELED, PROCESSING tasks get a cancel request and a
-- rota_cancel notification (as cancel_task.sql does). Changes nothing when the flow
-- already ended. The caller locked the flow's live tasks first (see "Lock order").
CREATE FUNCTION rota.flow_stop(f uuid, to_status text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    asked uuid;
BEGIN
    UPDATE rota.flows
    SET status = to_status, completed_at = now(), updated_at = now()
    WHERE id = f AND status = 'RUNNING';
    IF NOT FOUND THEN
        RETURN;
    END IF;
    UPDATE rota.flow_steps SET state = 'CANCELED' WHERE flow_id = f AND state = 'WAITING';
    UPDATE rota.tasks
    SET status = 'CANCELED', completed_at = now(), updated_at = now()
    WHERE flow_id = f AND status IN ('PENDING', 'ENQUEUED');
    FOR asked IN
        UPDATE rota.tasks
        SET cancel_requested_at = coalesce(cancel_requested_at, now()), updated_at = now()
        WHERE flow_id = f AND status = 'PROCESSING'
        RETURNING id
    LOOP
        PERFORM pg_notify('rota_cancel', asked::text);
    END LOOP;
END
$$;

-- flow_lock_live_tasks locks the flow's tasks a stop would change, in id order, before
-- the caller locks the flow row (see "Lock order").
CREATE FUNCTION rota.flow_lock_live_tasks(f uuid) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM rota.tasks
    WHERE flow_id = f AND status IN ('PENDING', 'ENQUEUED', 'PROCESSING')
    ORDER BY id
    FOR UPDATE;
END
$$;

-- flow_task_failed: a task of step_name ended DEAD, FAILED or CANCELED. A RUNNING flow
-- fails (flow_stop); the step keeps the task's error. The caller locked the flow's live
-- tasks first (see "Lock order").
CREATE FUNCTION rota.flow_task_failed(f uuid, step_name text, task_id uuid, task_status text, task_error text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT status FROM rota.flows WHERE id = f FOR UPDATE) IS DISTINCT FROM 'RUNNING' THEN
        RETURN;
    END IF;
    UPDATE rota.flow_steps
    SET error = coalesce(task_error, 'task ' || task_id || ' ended ' || task_status)
    WHERE flow_id = f AND name = step_name;
    PERFORM rota.flow_stop(f, 'FAILED');
END
$$;

-- flow_steps_succeeded: the tasks task_ids (step tasks that ended SUCCEEDED in one
-- statement, their flows' rows locked by the caller) count towards their steps, and
-- every step whose last task that was moves its flow on: what flow_step_done and
-- flow_activate do for one step, here done for all of them at once in a few set-based
-- statements (an outcome batch of 100 steps would otherwise run some 1,500 statements).
-- The rare cases go one step at a time through those functions: a fan-in over 128 tasks
-- and inputs over 1 MiB (guarded against outgrowing a jsonb value), and starting a
-- for_each step (fan-out, an empty array's cascade, a non-array's failure). Flows that
-- ended are left alone (ReplayFlow recounts).
CREATE FUNCTION rota.flow_steps_succeeded(task_ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    done_flows   uuid[];
    done_names   text[];
    other_flows  uuid[];
    other_names  text[];
    one          record;
BEGIN
    -- The steps count their succeeded tasks; those that reach 0 succeed, with their
    -- output (fan-in in element order), in the same update. A fan-in over 128 tasks is
    -- left for flow_step_done (guarded).
    -- A single-task step's output is its task's, taken from the row that ended (no
    -- second lookup through tasks_flow_step); element outputs are not gathered here.
    WITH counted AS (
        SELECT t.flow_id, t.flow_step, count(*)::integer AS n,
               (array_agg(t.output) FILTER (WHERE t.flow_item IS NULL))[1] AS output
        FROM rota.tasks t
        WHERE t.id = ANY (task_ids) AND t.status = 'SUCCEEDED'
        GROUP BY 1, 2
    ), counted_down AS (
        UPDATE rota.flow_steps s
        SET tasks_left = s.tasks_left - c.n,
            state = CASE WHEN s.tasks_left = c.n AND coalesce(s.task_count, 0) <= 128 THEN 'SUCCEEDED'
                         ELSE s.state END,
            error = CASE WHEN s.tasks_left = c.n AND coalesce(s.task_count, 0) <= 128 THEN NULL
                         ELSE s.error END,
            output = CASE
                         WHEN s.tasks_left <> c.n OR coalesce(s.task_count, 0) > 128 THEN s.output
                         WHEN s.for_each IS NULL THEN c.output
                         ELSE coalesce((SELECT jsonb_agg(coalesce(t.output, 'null'::jsonb) ORDER BY t.flow_index)
                                        FROM rota.tasks t
                                        WHERE t.flow_id = s.flow_id AND t.flow_step = s.name), '[]'::jsonb)
                     END
        FROM counted c, rota.flows f
        WHERE s.flow_id = c.flow_id AND s.name = c.flow_step AND s.state = 'STARTED'
          AND f.id = c.flow_id AND f.status = 'RUNNING'
        RETURNING s.flow_id, s.name, s.tasks_left, s.state
    )
    SELECT array_agg(flow_id ORDER BY flow_id, name) FILTER (WHERE state = 'SUCCEEDED'),
           array_agg(name ORDER BY flow_id, name) FILTER (WHERE state = 'SUCCEEDED'),
           array_agg(flow_id ORDER BY flow_id, name) FILTER (WHERE state = 'STARTED'),
           array_agg(name ORDER BY flow_id, name) FILTER (WHERE state = 'STARTED')
    INTO done_flows, done_names, other_flows, other_names
    FROM counted_down
    WHERE tasks_left = 0;

    -- Large fan-ins, one at a time (guarded).
    FOR one IN SELECT * FROM unnest(other_flows, other_names) AS o (flow_id, name) LOOP
        IF (SELECT status FROM rota.flows WHERE id = one.flow_id) = 'RUNNING' THEN
            PERFORM rota.flow_step_done(one.flow_id, one.name);
        END IF;
    END LOOP;
    IF done_flows IS NULL THEN
        RETURN;
    END IF;

    -- Their flows count them: a flow whose last steps they were has succeeded.
    UPDATE rota.flows f
    SET steps_left = f.steps_left - c.n,
        status = CASE WHEN f.steps_left = c.n THEN 'SUCCEEDED' ELSE f.status END,
        completed_at = CASE WHEN f.steps_left = c.n THEN now() ELSE f.completed_at END,
        updated_at = now()
    FROM (SELECT flow_id, count(*)::integer AS n FROM unnest(done_flows) AS x (flow_id) GROUP BY 1) c
    WHERE f.id = c.flow_id;

    -- The steps waiting for them count them. Those with no dependency left start: a
    -- single-task step whose inputs are at most 1 MiB in the same update, its task
    -- inserted by the same statement; the others one at a time (flow_activate).
    WITH counted AS (
        SELECT w.flow_id, w.name, count(*)::integer AS n,
               w.for_each IS NULL
               AND coalesce((SELECT sum(pg_column_size(d.output)) FROM rota.flow_steps d
                             WHERE d.flow_id = w.flow_id AND d.name = ANY (w.depends_on)), 0) <= 1048576 AS simple
        FROM unnest(done_flows, done_names) AS d (flow_id, name)
        -- Each flow's steps through the primary key (LATERAL, kept a nested loop by
        -- OFFSET 0): as a plain join the planner hashed a scan of the whole table.
        CROSS JOIN LATERAL (SELECT s.flow_id, s.name, s.for_each, s.depends_on
                            FROM rota.flow_steps s
                            WHERE s.flow_id = d.flow_id AND s.state = 'WAITING' AND d.name = ANY (s.depends_on)
                            OFFSET 0) w
        GROUP BY w.flow_id, w.name, w.for_each, w.depends_on
    ), counted_down AS (
        UPDATE rota.flow_steps w
        SET deps_left = w.deps_left - c.n,
            state = CASE WHEN w.deps_left = c.n AND c.simple THEN 'STARTED' ELSE w.state END,
            tasks_left = CASE WHEN w.deps_left = c.n AND c.simple THEN 1 ELSE w.tasks_left END,
            task_count = CASE WHEN w.deps_left = c.n AND c.simple THEN 1 ELSE w.task_count END,
            inputs = CASE WHEN w.deps_left = c.n AND c.simple THEN
                         (SELECT coalesce(jsonb_object_agg(d.name, coalesce(d.output, 'null'::jsonb)), '{}'::jsonb)
                          FROM rota.flow_steps d
                          WHERE d.flow_id = w.flow_id AND d.name = ANY (w.depends_on))
                     ELSE w.inputs END
        FROM counted c
        WHERE w.flow_id = c.flow_id AND w.name = c.name
        RETURNING w.*
    ), inserted AS (
        INSERT INTO rota.tasks (id, queue, kind, payload, priority, max_attempts, timeout_seconds,
                                group_key, flow_id, flow_step, flow_index)
        SELECT rota.new_task_id(row_number() OVER ()), st.queue, st.kind, st.payload, st.priority,
               st.max_attempts, st.timeout_seconds, st.group_key, st.flow_id, st.name, 0
        FROM counted_down st
        WHERE st.state = 'STARTED'
    )
    SELECT array_agg(flow_id ORDER BY flow_id, position), array_agg(name ORDER BY flow_id, position)
    INTO other_flows, other_names
    FROM counted_down
    WHERE deps_left = 0 AND state = 'WAITING';
    FOR one IN SELECT * FROM unnest(other_flows, other_names) AS o (flow_id, name) LOOP
        IF (SELECT status FROM rota.flows WHERE id = one.flow_id) = 'RUNNING' THEN
            PERFORM rota.flow_activate(one.flow_id, one.name);
        END IF;
    END LOOP;
END
$$;

-- The triggers. A statement may end tasks of several flows (the committer writes a batch
-- of outcomes in one statement, the reaper reaps several leases), and two such
-- statements must lock those flows' rows in one order, or two batches ending tasks of
-- flows F and G could wait for each other. Row order is the tasks' (id order), not the
-- flows', so the work is done once per statement, sorted by flow: the BEFORE trigger
-- notes each step task that ends (flow id and task id, in the transaction-local setting
-- rota.flow_events), and the first AFTER trigger of the statement takes the notes and
-- moves every flow in them, in flow id order. Both have the same WHEN clause, which
-- plain tasks (flow_id NULL) fail before any function runs. Changes the flow machinery
-- makes itself are not noted: a flow that is being stopped does not react to its own
-- cancels (flow_stop runs at trigger depth 2 from a trigger, and CancelFlow sets
-- rota.flow_quiet: a canceled fan-out of 10,000 tasks would otherwise note them all).
CREATE FUNCTION rota.tasks_flow_note() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() = 1 AND current_setting('rota.flow_quiet', true) IS DISTINCT FROM 'on' THEN
        PERFORM set_config('rota.flow_events',
                           coalesce(current_setting('rota.flow_events', true), '') || NEW.flow_id || ' ' || NEW.id || ',',
                           true);
        IF NEW.status <> 'SUCCEEDED' THEN
            PERFORM set_config('rota.flow_failed', 'on', true); -- see tasks_flow_advance
        END IF;
    END IF;
    RETURN NEW;
END
$$;

-- plan_cache_mode: its statements and those of the functions it calls are planned for
-- each call, with the tables' sizes of the moment. A session keeps PL/pgSQL's plans, and
-- generic plans made while rota.flows and rota.flow_steps were small (a new database, or
-- before autovacuum's next analyze) scanned them whole: steps got slower with every
-- flow a benchmark added, 10x after 4,000 flows (BenchmarkFlowStepsVsPlainTasks,
-- docs/performance.md). Planning costs about as much as one small statement; the call
-- for every later row of a statement returns before any.
CREATE FUNCTION rota.tasks_flow_advance() RETURNS trigger
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    events   text := current_setting('rota.flow_events', true);
    task_ids uuid[];
    flow_ids uuid[];
    failed   boolean;
    ev       record;
BEGIN
    IF pg_trigger_depth() > 1 OR events IS NULL OR events = '' THEN
        RETURN NULL; -- a later row of the statement: its flow moved already
    END IF;
    PERFORM set_config('rota.flow_events', '', true);
    SELECT array_agg(split_part(note, ' ', 2)::uuid), array_agg(DISTINCT split_part(note, ' ', 1)::uuid)
    INTO task_ids, flow_ids
    FROM unnest(string_to_array(rtrim(events, ','), ',')) AS e (note);
    -- The notes name the flows, and rota.flow_failed says whether a task of them ended
    -- otherwise than SUCCEEDED: the failure paths read the rows only then (a statement of
    -- successes reads them once, in flow_steps_succeeded).
    failed := current_setting('rota.flow_failed', true) = 'on';
    IF failed THEN
        PERFORM set_config('rota.flow_failed', 'off', true);
    END IF;
    -- First the live tasks of every RUNNING flow that one of them fails, flow by flow
    -- (see "Lock order": no flow row is held while these are waited for) ...
    FOR ev IN
        SELECT DISTINCT t.flow_id
        FROM rota.tasks t
        JOIN rota.flows f ON f.id = t.flow_id
        WHERE failed AND t.id = ANY (task_ids) AND t.status <> 'SUCCEEDED' AND f.status = 'RUNNING'
        ORDER BY t.flow_id
    LOOP
        PERFORM rota.flow_lock_live_tasks(ev.flow_id);
    END LOOP;
    -- ... then the flows' rows, in flow id order ...
    PERFORM 1 FROM rota.flows WHERE id = ANY (flow_ids) ORDER BY id FOR UPDATE;
    -- ... then the failures (each fails its flow, if still RUNNING) ...
    FOR ev IN
        SELECT t.flow_id, t.id, t.status, t.flow_step, t.last_error
        FROM rota.tasks t
        WHERE failed AND t.id = ANY (task_ids) AND t.status IN ('DEAD', 'FAILED', 'CANCELED')
        ORDER BY t.flow_id, t.id
    LOOP
        PERFORM rota.flow_task_failed(ev.flow_id, ev.flow_step, ev.id, ev.status, ev.last_error);
    END LOOP;
    -- ... and the successes, all together.
    PERFORM rota.flow_steps_succeeded(task_ids);
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_flow_note
    BEFORE UPDATE ON rota.tasks
    FOR EACH ROW
    WHEN (NEW.flow_id IS NOT NULL
          AND OLD.status IS DISTINCT FROM NEW.status
          AND NEW.status IN ('SUCCEEDED', 'DEAD', 'FAILED', 'CANCELED'))
    EXECUTE FUNCTION rota.tasks_flow_note();

CREATE TRIGGER tasks_flow_advance
    AFTER UPDATE ON rota.tasks
    FOR EACH ROW
    WHEN (NEW.flow_id IS NOT NULL
          AND OLD.status IS DISTINCT FROM NEW.status
          AND NEW.status IN ('SUCCEEDED', 'DEAD', 'FAILED', 'CANCELED'))
    EXECUTE FUNCTION rota.tasks_flow_advance();

-- flow_start starts the steps without dependencies of a flow just inserted (CreateFlow).
CREATE FUNCTION rota.flow_start(f uuid) RETURNS void
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan -- as tasks_flow_advance
AS $$
DECLARE
    step_name text;
BEGIN
    PERFORM 1 FROM rota.flows WHERE id = f FOR UPDATE;
    FOR step_name IN
        SELECT name FROM rota.flow_steps WHERE flow_id = f AND state = 'WAITING' AND deps_left = 0 ORDER BY position
    LOOP
        EXIT WHEN (SELECT status FROM rota.flows WHERE id = f) <> 'RUNNING';
        PERFORM rota.flow_activate(f, step_name);
    END LOOP;
END
$$;

-- flow_cancel: CancelFlow. Returns the flow's status afterwards (NULL: no such flow).
CREATE FUNCTION rota.flow_cancel(f uuid) RETURNS text
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan -- as tasks_flow_advance
AS $$
BEGIN
    PERFORM rota.flow_lock_live_tasks(f);
    PERFORM 1 FROM rota.flows WHERE id = f FOR UPDATE;
    PERFORM set_config('rota.flow_quiet', 'on', true);
    PERFORM rota.flow_stop(f, 'CANCELED');
    PERFORM set_config('rota.flow_quiet', 'off', true);
    RETURN (SELECT status FROM rota.flows WHERE id = f);
END
$$;

-- flow_replay: ReplayFlow. A FAILED or CANCELED flow runs again: its DEAD, FAILED and
-- CANCELED tasks are replayed (the tasks_record_transition trigger writes their REPLAYED
-- events), steps that never got a task wait again, and then every step that can move
-- does: one whose tasks all succeeded meanwhile succeeds, one whose dependencies all
-- succeeded starts. Returns the flow's status before (NULL: no such flow; 'PROCESSING':
-- a task of the flow still runs, nothing changed); only a FAILED or CANCELED flow is
-- changed.
CREATE FUNCTION rota.flow_replay(f uuid) RETURNS text
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan -- as tasks_flow_advance
AS $$
DECLARE
    before    text;
    step_name text;
    st        rota.flow_steps;
BEGIN
    SELECT status INTO before FROM rota.flows WHERE id = f FOR UPDATE;
    IF before IS NULL OR before NOT IN ('FAILED', 'CANCELED') THEN
        RETURN before;
    END IF;
    -- A task still running (its cancel request not answered yet) would end CANCELED and
    -- fail the replayed flow at once: the caller is told to wait for it.
    IF EXISTS (SELECT 1 FROM rota.tasks WHERE flow_id = f AND status = 'PROCESSING') THEN
        RETURN 'PROCESSING';
    END IF;
    UPDATE rota.flows
    SET status = 'RUNNING', completed_at = NULL, updated_at = now(),
        steps_left = (SELECT count(*) FROM rota.flow_steps WHERE flow_id = f AND state <> 'SUCCEEDED')
    WHERE id = f;
    UPDATE rota.tasks
    SET status = 'PENDING', attempt_count = 0, scheduled_for = now(), last_error = NULL,
        completed_at = NULL, cancel_requested_at = NULL, updated_at = now()
    WHERE flow_id = f AND status IN ('DEAD', 'FAILED', 'CANCELED');
    UPDATE rota.flow_steps s
    SET error = NULL,
        tasks_left = (SELECT count(*) FROM rota.tasks t
                      WHERE t.flow_id = f AND t.flow_step = s.name AND t.status <> 'SUCCEEDED')
    WHERE s.flow_id = f AND s.state = 'STARTED';
    UPDATE rota.flow_steps s
    SET state = 'WAITING', error = NULL,
        deps_left = (SELECT count(*) FROM rota.flow_steps d
                     WHERE d.flow_id = f AND d.name = ANY (s.depends_on) AND d.state <> 'SUCCEEDED')
    WHERE s.flow_id = f AND s.state IN ('FAILED', 'CANCELED');
    -- Move what can move, in create order (a dependency always comes first in a walk of
    -- one step at a time: flow_step_done starts what it unblocks itself).
    FOR step_name IN SELECT name FROM rota.flow_steps WHERE flow_id = f ORDER BY position LOOP
        EXIT WHEN (SELECT status FROM rota.flows WHERE id = f) <> 'RUNNING';
        SELECT * INTO st FROM rota.flow_steps WHERE flow_id = f AND name = step_name;
        IF st.state = 'STARTED' AND st.tasks_left = 0 THEN
            PERFORM rota.flow_step_done(f, step_name);
        ELSIF st.state = 'WAITING' AND st.deps_left = 0 THEN
            PERFORM rota.flow_activate(f, step_name);
        END IF;
    END LOOP;
    RETURN before;
END
$$;
