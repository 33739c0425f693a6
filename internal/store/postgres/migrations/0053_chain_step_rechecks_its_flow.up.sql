-- A chain step whose flow it reads otherwise than RUNNING locks the flow and looks again
-- (session 15's review). A chain step (no locks_flow) reads its flow's status without a
-- lock. A task replayed on its own (ReplayTask) while its flow was FAILED could succeed
-- while ReplayFlow was open: its outcome read the flow FAILED and moved nothing, the
-- replay's recount read the task as not succeeded, and the flow came back RUNNING with
-- a step that never moved on (TestFlowReplayMeetsAStepFinishingMeanwhile). Now such a
-- step's flow is locked with the others (in id order), which waits for the replay's
-- commit, and rota.flow_steps_succeeded moves it under the lock. Both ways a chain step
-- is moved take it: flow_steps_ended (the outcomes) and flow_advance (every other
-- statement, and outcome batches with a failure). A chain step of a RUNNING flow, the
-- common case, still takes no lock.

-- flow_steps_ended: flow_advance for a statement whose ended step tasks all succeeded,
-- given them by step (record_outcomes has the rows it updated at hand). One statement
-- reads each step's row once: a chain's step (no locks_flow) of a flow it reads RUNNING
-- moves its chain on from it there, unlocked (0025 on why that is safe); the others, and
-- the chain steps of flows read otherwise, are returned, their flows are locked in flow
-- id order, and flow_steps_succeeded moves them (the chain steps again as chain steps,
-- under the lock). Plans as
-- flow_advance's, for the same reasons (TestFlowAdvanceIsPlannedWithTheTablesOfTheMoment).
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
    l_locks   boolean[];
    locked    uuid[]; -- ... and their flows
BEGIN
    WITH step AS MATERIALIZED (
        -- A step row that is gone (its flow was deleted) counts as locking: it moves nothing.
        SELECT c.ord, c.flow_id, c.name, c.n, c.output, coalesce(s.locks_flow, true) AS locks,
               s.dependents, s.state,
               -- a chain step's flow, read without a lock (0053: see the lock below)
               CASE WHEN NOT s.locks_flow AND s.state = 'STARTED'
                    THEN (SELECT f.status FROM rota.flows f WHERE f.id = c.flow_id) END AS flow_status
        FROM unnest(flow_ids, names, counts, outputs) WITH ORDINALITY AS c (flow_id, name, n, output, ord)
        LEFT JOIN LATERAL (SELECT s.locks_flow, s.dependents, s.state FROM rota.flow_steps s
                           WHERE s.flow_id = c.flow_id AND s.name = c.name OFFSET 0) s ON true
    ), chained AS MATERIALIZED (
        -- A chain's step keeps its row as it is (STARTED, see 0031); its dependents (each
        -- waits for it alone and is single-task) start with its output as their input.
        SELECT c.flow_id, c.name, c.output, x.name AS waiting_name
        FROM step c
        CROSS JOIN LATERAL unnest(coalesce(c.dependents, rota.flow_step_waiting(c.flow_id, c.name))) AS x (name)
        WHERE NOT c.locks AND c.state = 'STARTED' AND c.flow_status = 'RUNNING'
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
    -- What is left: the steps that lock their flow, and the chain steps whose flow read
    -- otherwise than RUNNING (handed on with locks false, so flow_steps_succeeded moves
    -- them as chain steps).
    SELECT array_agg(flow_id ORDER BY ord) FILTER (WHERE locks OR again),
           array_agg(name ORDER BY ord) FILTER (WHERE locks OR again),
           array_agg(n ORDER BY ord) FILTER (WHERE locks OR again),
           array_agg(output ORDER BY ord) FILTER (WHERE locks OR again),
           array_agg(locks ORDER BY ord) FILTER (WHERE locks OR again),
           array_agg(DISTINCT flow_id) FILTER (WHERE locks OR again)
    INTO l_flows, l_names, l_counts, l_outputs, l_locks, locked
    FROM (SELECT *, NOT locks AND flow_status <> 'RUNNING' AS again FROM step) s;
    IF locked IS NULL THEN
        RETURN;
    END IF;
    -- A chain step whose flow it read not RUNNING locks that flow too. The flow may be
    -- being replayed: a task replayed on its own (ReplayTask) while its flow was FAILED
    -- can succeed while the flow's replay is open, and the replay's recount, reading
    -- the task from its snapshot, counts it as not succeeded; had this moved nothing,
    -- the flow came back RUNNING with a step that never moves on. Under the lock (the
    -- replay holds the flow's row until it commits) flow_steps_succeeded reads the flow
    -- and the successor's row again, in a snapshot of its own. In id order with the
    -- others: only a flow that is not RUNNING costs a chain step a lock.
    PERFORM 1 FROM rota.flows WHERE id = ANY (locked) ORDER BY id FOR UPDATE;
    PERFORM rota.flow_steps_succeeded(l_flows, l_names, l_counts, l_outputs, l_locks);
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
    recheck   uuid[]; -- flows of chain steps read not RUNNING (see flow_steps_ended, 0053)
    failed    uuid[]; -- the flows of the tasks that did not succeed
BEGIN
    -- The succeeded tasks by step (one read of the ended rows, named by the notes), and
    -- the flows to lock for them: those of the steps with locks_flow.
    SELECT array_agg(c.flow_id ORDER BY c.flow_id, c.flow_step), array_agg(c.flow_step ORDER BY c.flow_id, c.flow_step),
           array_agg(c.n ORDER BY c.flow_id, c.flow_step), array_agg(c.output ORDER BY c.flow_id, c.flow_step),
           array_agg(s.locks_flow ORDER BY c.flow_id, c.flow_step),
           array_agg(DISTINCT c.flow_id) FILTER (WHERE s.locks_flow),
           array_agg(DISTINCT c.flow_id) FILTER (WHERE NOT s.locks_flow
               AND (SELECT f.status FROM rota.flows f WHERE f.id = c.flow_id) <> 'RUNNING')
    INTO s_flows, s_names, s_counts, s_outputs, s_locks, locked, recheck
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
    -- A chain step takes no flow lock, but one whose flow it read not RUNNING takes it:
    -- the flow may be being replayed (see flow_steps_ended, 0053); flow_steps_succeeded
    -- then reads it again under the lock.
    locked := locked || recheck;
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

