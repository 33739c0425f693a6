-- Back to 0051's rota.flow_steps_ended and 0031's rota.flow_advance.

CREATE OR REPLACE FUNCTION rota.flow_steps_ended(flow_ids uuid[], names text[], counts integer[], outputs jsonb[])
RETURNS void
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    l_flows   uuid[]; -- the steps that lock their flow, one element per step ...
    l_names   text[];
    l_counts  integer[];
    l_outputs jsonb[];
    locked    uuid[]; -- ... and their flows
BEGIN
    WITH step AS MATERIALIZED (
        -- A step row that is gone (its flow was deleted) counts as locking: it moves nothing.
        SELECT c.ord, c.flow_id, c.name, c.n, c.output, coalesce(s.locks_flow, true) AS locks,
               s.dependents, s.state
        FROM unnest(flow_ids, names, counts, outputs) WITH ORDINALITY AS c (flow_id, name, n, output, ord)
        LEFT JOIN LATERAL (SELECT s.locks_flow, s.dependents, s.state FROM rota.flow_steps s
                           WHERE s.flow_id = c.flow_id AND s.name = c.name OFFSET 0) s ON true
    ), chained AS MATERIALIZED (
        -- A chain's step keeps its row as it is (STARTED, see 0031); its dependents (each
        -- waits for it alone and is single-task) start with its output as their input.
        SELECT c.flow_id, c.name, c.output, x.name AS waiting_name
        FROM step c
        CROSS JOIN LATERAL unnest(coalesce(c.dependents, rota.flow_step_waiting(c.flow_id, c.name))) AS x (name)
        WHERE NOT c.locks AND c.state = 'STARTED'
          AND (SELECT f.status FROM rota.flows f WHERE f.id = c.flow_id) = 'RUNNING'
    ), lone AS (
        UPDATE rota.flow_steps w
        SET deps_left = 0, state = 'STARTED', tasks_left = 1, task_count = 1,
            inputs = jsonb_build_object(d.name, coalesce(d.output, 'null'::jsonb))
        FROM chained d
        WHERE w.flow_id = d.flow_id AND w.name = d.waiting_name AND w.state = 'WAITING'
        RETURNING w.flow_id, w.name, w.queue, w.kind, w.payload, w.priority, w.max_attempts,
                  w.timeout_seconds, w.group_key
    ), inserted AS (
        INSERT INTO rota.tasks (id, queue, kind, payload, priority, max_attempts, timeout_seconds,
                                group_key, flow_id, flow_step, flow_index)
        SELECT rota.new_task_id(row_number() OVER ()), st.queue, st.kind, st.payload, st.priority,
               st.max_attempts, st.timeout_seconds, st.group_key, st.flow_id, st.name, 0
        FROM lone st
    )
    SELECT array_agg(flow_id ORDER BY ord) FILTER (WHERE locks), array_agg(name ORDER BY ord) FILTER (WHERE locks),
           array_agg(n ORDER BY ord) FILTER (WHERE locks), array_agg(output ORDER BY ord) FILTER (WHERE locks),
           array_agg(DISTINCT flow_id) FILTER (WHERE locks)
    INTO l_flows, l_names, l_counts, l_outputs, locked
    FROM step;
    IF locked IS NULL THEN
        RETURN;
    END IF;
    PERFORM 1 FROM rota.flows WHERE id = ANY (locked) ORDER BY id FOR UPDATE;
    PERFORM rota.flow_steps_succeeded(l_flows, l_names, l_counts, l_outputs,
                                      array_fill(true, ARRAY[cardinality(l_flows)]));
END
$$;

CREATE OR REPLACE FUNCTION rota.flow_advance(events text) RETURNS void
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
    s_locks   boolean[];
    locked    uuid[];
    failed    uuid[]; -- the flows of the tasks that did not succeed
BEGIN
    -- The succeeded tasks by step (one read of the ended rows, named by the notes), and
    -- the flows to lock for them: those of the steps with locks_flow.
    SELECT array_agg(c.flow_id ORDER BY c.flow_id, c.flow_step), array_agg(c.flow_step ORDER BY c.flow_id, c.flow_step),
           array_agg(c.n ORDER BY c.flow_id, c.flow_step), array_agg(c.output ORDER BY c.flow_id, c.flow_step),
           array_agg(s.locks_flow ORDER BY c.flow_id, c.flow_step),
           array_agg(DISTINCT c.flow_id) FILTER (WHERE s.locks_flow)
    INTO s_flows, s_names, s_counts, s_outputs, s_locks, locked
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
        PERFORM rota.flow_steps_succeeded(s_flows, s_names, s_counts, s_outputs, s_locks);
    END IF;
END
$$;

