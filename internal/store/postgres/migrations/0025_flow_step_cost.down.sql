-- Back to migration 0019's bookkeeping: every step's success locks its flow and counts
-- down flows.steps_left, recounted here from the steps.
DROP TRIGGER tasks_flow_advance ON rota.tasks;
DROP FUNCTION rota.flow_advance(text);
DROP FUNCTION rota.flow_steps_succeeded(uuid[], text[], integer[], jsonb[]);

-- A chain step left STARTED when its task succeeded: 0019 marks every succeeded step.
UPDATE rota.flow_steps s
SET state = 'SUCCEEDED', tasks_left = 0,
    output = (SELECT t.output FROM rota.tasks t WHERE t.flow_id = s.flow_id AND t.flow_step = s.name AND t.flow_index = 0)
WHERE s.state = 'STARTED' AND NOT s.locks_flow
  AND (SELECT t.status FROM rota.tasks t WHERE t.flow_id = s.flow_id AND t.flow_step = s.name AND t.flow_index = 0) = 'SUCCEEDED';

UPDATE rota.flows f
SET steps_left = (SELECT count(*) FROM rota.flow_steps s WHERE s.flow_id = f.id AND s.state <> 'SUCCEEDED');
COMMENT ON COLUMN rota.flows.steps_left IS NULL;
ALTER TABLE rota.flows ALTER COLUMN steps_left SET NOT NULL;

CREATE OR REPLACE FUNCTION rota.flow_step_done(f uuid, step_name text) RETURNS void
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

CREATE OR REPLACE FUNCTION rota.tasks_flow_advance() RETURNS trigger
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

CREATE OR REPLACE FUNCTION rota.flow_replay(f uuid) RETURNS text
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

CREATE TRIGGER tasks_flow_advance
    AFTER UPDATE ON rota.tasks
    FOR EACH ROW
    WHEN (NEW.flow_id IS NOT NULL
          AND OLD.status IS DISTINCT FROM NEW.status
          AND NEW.status IN ('SUCCEEDED', 'DEAD', 'FAILED', 'CANCELED'))
    EXECUTE FUNCTION rota.tasks_flow_advance();

CREATE OR REPLACE FUNCTION rota.tasks_flow_note() RETURNS trigger
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

ALTER TABLE rota.flow_steps RESET (fillfactor);
DROP FUNCTION rota.flow_end_if_done(uuid);
DROP FUNCTION rota.flow_all_succeeded(uuid);

DROP FUNCTION rota.flow_step_waiting(uuid, text);
ALTER TABLE rota.flow_steps DROP COLUMN dependents, DROP COLUMN locks_flow;
