-- A flow step costs less (docs/architecture.md "The path of a flow", docs/performance.md
-- "Flows"). Migration 0019's bookkeeping wrote, for every step that succeeded, its step's
-- row, its flow's row (locked, then its steps_left counted down) and the next step's row,
-- and found the next steps by reading all of the flow's steps. Now:
--
-- * The flow row is neither counted down nor locked by most steps. A flow ends when its
--   last step succeeds, and the last step to succeed is always one that nothing depends
--   on (a step starts only once its dependencies succeeded, and a succeeded step never
--   runs again): only such a step's success reads whether every step of its flow
--   succeeded. The flow row is locked (in flow id order, as before) only where two
--   transactions could otherwise change the same rows or miss each other's writes:
--   flow_steps.locks_flow, set at create, is false for a single-task step whose every
--   dependent waits for it alone and is single-task (a chain's inner steps); its
--   success changes its own row and its dependents', which no other transaction touches
--   meanwhile (a failure or cancel of the flow locks the flow's live tasks first, this
--   step's task included, so it waits for this transaction, or this one's outcome waits
--   for it and then finds the flow ended).
-- * flow_steps.dependents (set at create) names the steps waiting for a step: they are
--   counted down through the primary key instead of a read of every step of the flow;
--   a chain step's dependent starts in the statement that marks the step done, from its
--   output, without a read.
-- * The AFTER trigger is queued for a statement's first noted row only (its WHEN
--   compares the notes with that row's), not called for every ended step task, and it
--   sets no setting of its own: the work runs in rota.flow_advance, called once per
--   statement, whose plans are made once per session and cannot scan (see there).
-- * Step rows are updated in place (fillfactor, HOT) and the note is an assignment.
--
-- flows.steps_left is no longer kept: nullable now (a binary of the previous release
-- still writes it while an upgrade rolls), NULL for the flows this release creates.

ALTER TABLE rota.flows ALTER COLUMN steps_left DROP NOT NULL;
COMMENT ON COLUMN rota.flows.steps_left IS
    'Not kept since migration 0025 (a flow ends when its last step succeeds, read from its steps); NULL for new flows.';

ALTER TABLE rota.flow_steps
    -- The steps whose depends_on name this one, in create order. NULL for steps created
    -- before this migration (or by a binary of the previous release): they are then
    -- found by a read of the flow's steps, as before.
    ADD COLUMN dependents text[],
    -- Whether this step's success locks its flow's row first (see the header): true
    -- unless the step is single-task and each of its dependents (there is at least one)
    -- depends on it alone and is single-task. True for steps created before.
    ADD COLUMN locks_flow boolean NOT NULL DEFAULT true;

-- A step's row is updated once or twice in its life (started; succeeded, unless it is a
-- chain's inner step; a fan-out's once per outcome statement of its elements): with
-- room left on each page the new
-- version goes beside the old one (a HOT update, no index entry written) instead of on
-- another page with new entries in both indexes. New pages only; the table holds flows
-- that still run or are kept, not history.
ALTER TABLE rota.flow_steps SET (fillfactor = 50);

-- The note as an assignment: PL/pgSQL evaluates it without starting the executor, which
-- PERFORM does (a query), once for every ended step task.
CREATE OR REPLACE FUNCTION rota.tasks_flow_note() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    ignored text;
BEGIN
    IF pg_trigger_depth() = 1 AND current_setting('rota.flow_quiet', true) IS DISTINCT FROM 'on' THEN
        ignored := set_config('rota.flow_events',
                              coalesce(current_setting('rota.flow_events', true), '') || NEW.flow_id || ' ' || NEW.id || ',',
                              true);
        IF NEW.status <> 'SUCCEEDED' THEN
            ignored := set_config('rota.flow_failed', 'on', true); -- see flow_advance
        END IF;
    END IF;
    RETURN NEW;
END
$$;

-- The steps waiting for step_name of flow f, for a step created before this migration
-- (its dependents NULL): those whose depends_on name it, in create order. Callers write
-- coalesce(s.dependents, rota.flow_step_waiting(...)), which calls it only then.
CREATE FUNCTION rota.flow_step_waiting(f uuid, step_name text) RETURNS text[]
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN ARRAY(SELECT d.name FROM rota.flow_steps d
                 WHERE d.flow_id = f AND step_name = ANY (d.depends_on) ORDER BY d.position);
END
$$;

-- flow_all_succeeded: whether every step of flow f succeeded. A chain's inner step (no
-- locks_flow) keeps state STARTED when its task succeeds (see flow_steps_succeeded):
-- it counts as succeeded when its one task did.
CREATE FUNCTION rota.flow_all_succeeded(f uuid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN NOT EXISTS (
        SELECT 1 FROM rota.flow_steps s
        WHERE s.flow_id = f AND s.state <> 'SUCCEEDED'
          AND NOT (s.state = 'STARTED' AND NOT s.locks_flow
                   AND (SELECT t.status FROM rota.tasks t
                        WHERE t.flow_id = s.flow_id AND t.flow_step = s.name AND t.flow_index = 0) = 'SUCCEEDED'));
END
$$;

-- flow_end_if_done: flow f, RUNNING and locked by the caller, succeeds if every step of
-- it did. Called when a step nothing depends on succeeded (the only step whose success
-- can be the last).
CREATE FUNCTION rota.flow_end_if_done(f uuid) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF rota.flow_all_succeeded(f) THEN
        UPDATE rota.flows
        SET status = 'SUCCEEDED', completed_at = now(), updated_at = now()
        WHERE id = f AND status = 'RUNNING';
    END IF;
END
$$;

-- flow_step_done: as in 0019, without the flow's count-down: the flow succeeds when this
-- step had no dependent and every other step succeeded. The caller holds the flow row.
CREATE OR REPLACE FUNCTION rota.flow_step_done(f uuid, step_name text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    next_step text;
    st        rota.flow_steps;
    step_output jsonb;
    waiting   text[];
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

    waiting := coalesce(st.dependents, rota.flow_step_waiting(f, step_name));
    IF cardinality(waiting) = 0 THEN
        PERFORM rota.flow_end_if_done(f);
        RETURN;
    END IF;
    UPDATE rota.flow_steps
    SET deps_left = deps_left - 1
    WHERE flow_id = f AND name = ANY (waiting) AND state = 'WAITING';
    -- Start the ones that waited for this step last, in create order; one may fail the
    -- flow (a for_each over a non-array), which ends the walk.
    FOR next_step IN
        SELECT name FROM rota.flow_steps
        WHERE flow_id = f AND name = ANY (waiting) AND state = 'WAITING' AND deps_left = 0
        ORDER BY position
    LOOP
        EXIT WHEN (SELECT status FROM rota.flows WHERE id = f) <> 'RUNNING';
        PERFORM rota.flow_activate(f, next_step);
    END LOOP;
END
$$;

-- flow_steps_succeeded: the steps of the statement's succeeded step tasks (flow_ids,
-- names: one element per step, sorted; counts: its tasks that succeeded; outputs: a
-- single-task step's task's output) count them, and every step whose last task that was
-- moves its flow on, in set-based statements, as in 0019. The caller locked the rows of
-- the flows whose steps have locks_flow; the others are read unlocked (see the header on
-- why that is safe). Flows that ended are left alone (ReplayFlow recounts).
DROP FUNCTION rota.flow_steps_succeeded(uuid[]);
CREATE FUNCTION rota.flow_steps_succeeded(flow_ids uuid[], names text[], counts integer[], outputs jsonb[])
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    done_waiting text[]; -- the dependents of the done steps, one element per pair
    waiting_flows uuid[];
    ending       uuid[];
    other_flows  uuid[];
    other_names  text[];
    one          record;
BEGIN
    -- One statement for a chain's step. A step without locks_flow (single-task, its
    -- dependents wait for it alone and are single-task) keeps its row as it is (STARTED,
    -- its output its task's: GetFlow and flow_all_succeeded read them from the task, and
    -- ReplayFlow's recount marks it SUCCEEDED should its flow fail later): its
    -- dependents start, their inputs its output (at most 1 MiB, a task's), and their
    -- tasks are inserted. The other steps count their succeeded tasks; those that reach 0
    -- succeed, with their output (fan-in in element order: a fan-in over 128 tasks is
    -- left for flow_step_done, guarded). Each step and flow through its primary key.
    WITH chained AS (
        SELECT s.flow_id, s.name, c.output, coalesce(s.dependents, rota.flow_step_waiting(s.flow_id, s.name)) AS waiting
        FROM unnest(flow_ids, names, counts, outputs) AS c (flow_id, name, n, output)
        CROSS JOIN LATERAL (SELECT s.flow_id, s.name, s.dependents, s.locks_flow, s.state
                            FROM rota.flow_steps s WHERE s.flow_id = c.flow_id AND s.name = c.name OFFSET 0) s
        WHERE NOT s.locks_flow AND s.state = 'STARTED'
          AND (SELECT f.status FROM rota.flows f WHERE f.id = c.flow_id) = 'RUNNING'
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
        FROM unnest(flow_ids, names, counts, outputs) AS c (flow_id, name, n, output)
        WHERE s.flow_id = c.flow_id AND s.name = c.name AND s.state = 'STARTED' AND s.locks_flow
          AND (SELECT f.status FROM rota.flows f WHERE f.id = c.flow_id) = 'RUNNING'
        RETURNING s.flow_id, s.name, s.tasks_left, s.state,
                  coalesce(s.dependents, rota.flow_step_waiting(s.flow_id, s.name)) AS waiting
    ), lone AS (
        UPDATE rota.flow_steps w
        SET deps_left = 0, state = 'STARTED', tasks_left = 1, task_count = 1,
            inputs = jsonb_build_object(d.name, coalesce(d.output, 'null'::jsonb))
        FROM chained d
        CROSS JOIN LATERAL unnest(d.waiting) AS x (name)
        WHERE w.flow_id = d.flow_id AND w.name = x.name AND w.state = 'WAITING'
        RETURNING w.*
    ), inserted AS (
        INSERT INTO rota.tasks (id, queue, kind, payload, priority, max_attempts, timeout_seconds,
                                group_key, flow_id, flow_step, flow_index)
        SELECT rota.new_task_id(row_number() OVER ()), st.queue, st.kind, st.payload, st.priority,
               st.max_attempts, st.timeout_seconds, st.group_key, st.flow_id, st.name, 0
        FROM lone st
    )
    -- What is left to move: the flows whose step nothing depends on succeeded (they may
    -- end), the steps that wait for the other done steps (one element per dependency
    -- that succeeded), the large fan-ins.
    SELECT e.ending, w.flows, w.names, o.flows, o.names
    INTO ending, waiting_flows, done_waiting, other_flows, other_names
    FROM (SELECT array_agg(DISTINCT flow_id) AS ending FROM counted_down
          WHERE tasks_left = 0 AND state = 'SUCCEEDED' AND cardinality(waiting) = 0) e,
         (SELECT array_agg(d.flow_id ORDER BY d.flow_id, x.name) AS flows, array_agg(x.name ORDER BY d.flow_id, x.name) AS names
          FROM counted_down d CROSS JOIN LATERAL unnest(d.waiting) AS x (name)
          WHERE d.tasks_left = 0 AND d.state = 'SUCCEEDED') w,
         (SELECT array_agg(flow_id ORDER BY flow_id, name) AS flows, array_agg(name ORDER BY flow_id, name) AS names
          FROM counted_down WHERE tasks_left = 0 AND state = 'STARTED') o;

    -- Large fan-ins, one at a time (guarded).
    FOR one IN SELECT * FROM unnest(other_flows, other_names) AS o (flow_id, name) LOOP
        IF (SELECT status FROM rota.flows WHERE id = one.flow_id) = 'RUNNING' THEN
            PERFORM rota.flow_step_done(one.flow_id, one.name);
        END IF;
    END LOOP;

    -- A flow whose step nothing depends on succeeded ends if all of its steps did (such
    -- a step locks its flow: two of them ending at once see each other's state).
    FOR one IN SELECT * FROM unnest(ending) AS e (flow_id) ORDER BY 1 LOOP
        PERFORM rota.flow_end_if_done(one.flow_id);
    END LOOP;
    IF waiting_flows IS NULL THEN
        RETURN;
    END IF;

    -- The other dependents (a join, a for_each step, a dependent of a for_each step)
    -- count them. Those with no dependency left start: a single-task step whose inputs
    -- are at most 1 MiB in the same update, its task inserted by the same statement; the
    -- others one at a time (flow_activate).
    WITH counted AS (
        SELECT p.flow_id, p.name, count(*)::integer AS n
        FROM unnest(waiting_flows, done_waiting) AS p (flow_id, name)
        GROUP BY 1, 2
    ), counted_down AS (
        UPDATE rota.flow_steps w
        SET deps_left = w.deps_left - c.n,
            state = CASE WHEN w.deps_left = c.n AND w.for_each IS NULL AND x.small THEN 'STARTED' ELSE w.state END,
            tasks_left = CASE WHEN w.deps_left = c.n AND w.for_each IS NULL AND x.small THEN 1 ELSE w.tasks_left END,
            task_count = CASE WHEN w.deps_left = c.n AND w.for_each IS NULL AND x.small THEN 1 ELSE w.task_count END,
            inputs = CASE WHEN w.deps_left = c.n AND w.for_each IS NULL AND x.small THEN x.inputs ELSE w.inputs END
        FROM counted c
        -- The inputs and their size, read only for a step whose last dependency this is.
        CROSS JOIN LATERAL (
            SELECT coalesce(jsonb_object_agg(d.name, coalesce(d.output, 'null'::jsonb)), '{}'::jsonb) AS inputs,
                   coalesce(sum(pg_column_size(d.output)), 0) <= 1048576 AS small
            FROM rota.flow_steps ws
            CROSS JOIN LATERAL unnest(ws.depends_on) AS dn (name)
            JOIN rota.flow_steps d ON d.flow_id = ws.flow_id AND d.name = dn.name
            WHERE ws.flow_id = c.flow_id AND ws.name = c.name AND ws.deps_left = c.n AND ws.state = 'WAITING'
            OFFSET 0) x
        WHERE w.flow_id = c.flow_id AND w.name = c.name AND w.state = 'WAITING'
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

-- flow_advance: what the AFTER trigger does for one statement's notes (0019's
-- tasks_flow_advance did it inline, in every call of the row trigger).
--
-- Plans. 0019 planned every statement of the flow machinery per call (plan_cache_mode =
-- force_custom_plan): a plan PL/pgSQL kept from a session's first calls, made while
-- rota.flows and rota.flow_steps were small, scanned them whole ever after. Planning the
-- statements of one outcome statement cost about as much as running them. Here they are
-- planned once per session (force_generic_plan) and such a plan cannot scan: every read
-- goes by a key (a task by id, each one through LATERAL ... OFFSET 0 so that no index on
-- status is used to find them; a step by (flow_id, name); a flow by id), and
-- enable_seqscan, enable_hashjoin and enable_mergejoin are off for it and the functions
-- it calls, which leaves nested loops over index scans (the planner's other choices were
-- a hash join over a scan of rota.flow_steps and a walk of every SUCCEEDED task, both
-- growing with the tables). TestFlowAdvanceIsPlannedWithTheTablesOfTheMoment.
CREATE FUNCTION rota.flow_advance(events text) RETURNS void
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    task_ids  uuid[];
    ev        record;
    s_flows   uuid[];
    s_names   text[];
    s_counts  integer[];
    s_outputs jsonb[];
    locked    uuid[];
    failed    uuid[]; -- the flows of the tasks that did not succeed
BEGIN
    -- The succeeded tasks by step (one read of the ended rows, named by the notes), and
    -- the flows to lock for them: those of the steps with locks_flow.
    SELECT array_agg(c.flow_id ORDER BY c.flow_id, c.flow_step), array_agg(c.flow_step ORDER BY c.flow_id, c.flow_step),
           array_agg(c.n ORDER BY c.flow_id, c.flow_step), array_agg(c.output ORDER BY c.flow_id, c.flow_step),
           array_agg(DISTINCT c.flow_id) FILTER (WHERE s.locks_flow)
    INTO s_flows, s_names, s_counts, s_outputs, locked
    FROM (SELECT t.flow_id, t.flow_step, count(*)::integer AS n,
                 (array_agg(t.output) FILTER (WHERE t.flow_item IS NULL))[1] AS output
          FROM unnest(string_to_array(rtrim(events, ','), ',')) AS e (note)
          CROSS JOIN LATERAL (SELECT t.flow_id, t.flow_step, t.status, t.output, t.flow_item
                              FROM rota.tasks t WHERE t.id = split_part(e.note, ' ', 2)::uuid OFFSET 0) t
          WHERE t.status = 'SUCCEEDED'
          GROUP BY 1, 2) c
    CROSS JOIN LATERAL (SELECT s.locks_flow FROM rota.flow_steps s
                        WHERE s.flow_id = c.flow_id AND s.name = c.flow_step OFFSET 0) s;

    -- rota.flow_failed says whether a task of them ended otherwise than SUCCEEDED: the
    -- failure paths read the rows only then. First the live tasks of every RUNNING flow
    -- that one of them fails, flow by flow (see "Lock order" in 0019: no flow row is held
    -- while these are waited for).
    IF current_setting('rota.flow_failed', true) = 'on' THEN
        PERFORM set_config('rota.flow_failed', 'off', true);
        SELECT array_agg(split_part(note, ' ', 2)::uuid) INTO task_ids
        FROM unnest(string_to_array(rtrim(events, ','), ',')) AS e (note);
        SELECT array_agg(DISTINCT t.flow_id ORDER BY t.flow_id) INTO failed
        FROM unnest(task_ids) AS i (id)
        CROSS JOIN LATERAL (SELECT t.flow_id, t.status FROM rota.tasks t WHERE t.id = i.id OFFSET 0) t
        WHERE t.status <> 'SUCCEEDED';
        FOR ev IN
            SELECT f.id FROM unnest(failed) AS x (id)
            CROSS JOIN LATERAL (SELECT f.id, f.status FROM rota.flows f WHERE f.id = x.id OFFSET 0) f
            WHERE f.status = 'RUNNING'
            ORDER BY f.id
        LOOP
            PERFORM rota.flow_lock_live_tasks(ev.id);
        END LOOP;
        locked := locked || failed;
    END IF;
    -- Then the flows' rows, in flow id order ...
    IF locked IS NOT NULL THEN
        PERFORM 1 FROM rota.flows WHERE id = ANY (locked) ORDER BY id FOR UPDATE;
    END IF;
    -- ... then the failures (each fails its flow, if still RUNNING) ...
    IF failed IS NOT NULL THEN
        FOR ev IN
            SELECT t.flow_id, t.id, t.status, t.flow_step, t.last_error
            FROM unnest(task_ids) AS i (id)
            CROSS JOIN LATERAL (SELECT t.flow_id, t.id, t.status, t.flow_step, t.last_error
                                FROM rota.tasks t WHERE t.id = i.id OFFSET 0) t
            WHERE t.status IN ('DEAD', 'FAILED', 'CANCELED')
            ORDER BY t.flow_id, t.id
        LOOP
            PERFORM rota.flow_task_failed(ev.flow_id, ev.flow_step, ev.id, ev.status, ev.last_error);
        END LOOP;
    END IF;
    -- ... and the successes, all together.
    IF s_flows IS NOT NULL THEN
        PERFORM rota.flow_steps_succeeded(s_flows, s_names, s_counts, s_outputs);
    END IF;
END
$$;

-- The AFTER trigger's function: the statement's notes, taken once (its WHEN queues it
-- for the statement's first noted row only).
CREATE OR REPLACE FUNCTION rota.tasks_flow_advance() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    events text := current_setting('rota.flow_events', true);
BEGIN
    IF pg_trigger_depth() > 1 OR events IS NULL OR events = '' THEN
        RETURN NULL;
    END IF;
    events := set_config('rota.flow_events', '', true) || events; -- an assignment: see tasks_flow_note
    PERFORM rota.flow_advance(events);
    RETURN NULL;
END
$$;
ALTER FUNCTION rota.tasks_flow_advance() RESET plan_cache_mode;

-- Queued for the first row the BEFORE trigger noted in the statement: the notes are
-- then that row's note alone (tasks_flow_note appends "flow_id task_id,"). AFTER row
-- events fire at the end of the statement, when every row's note is in.
DROP TRIGGER tasks_flow_advance ON rota.tasks;
CREATE TRIGGER tasks_flow_advance
    AFTER UPDATE ON rota.tasks
    FOR EACH ROW
    WHEN (NEW.flow_id IS NOT NULL
          AND OLD.status IS DISTINCT FROM NEW.status
          AND NEW.status IN ('SUCCEEDED', 'DEAD', 'FAILED', 'CANCELED')
          AND current_setting('rota.flow_events', true) = NEW.flow_id::text || ' ' || NEW.id::text || ',')
    EXECUTE FUNCTION rota.tasks_flow_advance();

-- flow_replay: as in 0019, without the flow's count of steps left.
CREATE OR REPLACE FUNCTION rota.flow_replay(f uuid) RETURNS text
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan -- as in 0019
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
    SET status = 'RUNNING', completed_at = NULL, updated_at = now(), steps_left = NULL
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
    -- Every step may have succeeded already (the failed tasks were all replayed on their
    -- own and succeeded meanwhile): the walk above then moved nothing.
    PERFORM rota.flow_end_if_done(f);
    RETURN before;
END
$$;

-- Flows already running keep their count in steps_left; it is read no more.
UPDATE rota.flows SET steps_left = NULL WHERE steps_left IS NOT NULL;
