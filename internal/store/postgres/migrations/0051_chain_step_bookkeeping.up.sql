-- A chain step's bookkeeping costs less (issue #16: flows keep their cost target, a step
-- at most 1.5x a plain task, docs/performance.md "Session 15"). Measured by replaying
-- waves of 1,000 chain-step outcomes (record_outcomes of 1,000 ten-step flows, ten times):
-- a wave took 49 ms, and the last one, which ends the flows, 88-93 ms. Now:
--
-- * A step whose success is its flow's (ends_flow: the only step nothing depends on, so
--   every other step is its ancestor and succeeded before its task existed) ends its
--   flow without rota.flow_all_succeeded, which read every step of the flow and each
--   chain step's task (30 us of the 40 a flow's end cost). One UPDATE ends all such flows
--   of a statement. Flows created before this migration have ends_flow false and keep
--   the check.
-- * flow_steps_ended reads each step row once: it moved a chain's steps itself (what
--   flow_steps_succeeded's first statement did) from the row it read for locks_flow,
--   which that statement read a second time. flow_steps_succeeded gets only the steps
--   that lock their flow.
-- * rota.new_task_id is one SQL expression on bytes (no PL/pgSQL call, no hex text).
-- * rota.record_outcomes keeps the ended step tasks as ids and writes them as notes for
--   flow_advance only when one failed.
--
-- Together: 542 ms for the ten waves before, 450 after (docs/performance.md).

ALTER TABLE rota.flow_steps ADD COLUMN ends_flow boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN rota.flow_steps.ends_flow IS
    'the flow''s only step that nothing depends on: its success is the flow''s (migration 0051)';

-- A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds from clock_timestamp(), version 7,
-- then seq's 24 low bits in rand_a (12) and after the variant (12), so that one
-- statement's ids follow its seq order within a millisecond, and 48 random bits.
CREATE OR REPLACE FUNCTION rota.new_task_id(seq bigint) RETURNS uuid
LANGUAGE sql VOLATILE AS $$
    SELECT encode(overlay(overlay(uuid_send(gen_random_uuid())
                                  PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                                  FROM 1 FOR 6)
                          PLACING int4send(((28672 | ((seq >> 12) & 4095)::integer) << 16) | 32768 | (seq & 4095)::integer)
                          FROM 7 FOR 4),
                  'hex')::uuid
$$;

-- flow_steps_succeeded: as in 0031, but a flow whose ends_flow step succeeded ends here,
-- all such flows in one UPDATE (the caller holds their rows: an ends_flow step has no
-- dependent, so it locks its flow); the others still ask flow_end_if_done.
CREATE OR REPLACE FUNCTION rota.flow_steps_succeeded(flow_ids uuid[], names text[], counts integer[], outputs jsonb[],
    locks boolean[])
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    done_waiting text[]; -- the dependents of the done steps, one element per pair
    waiting_flows uuid[];
    ending       uuid[]; -- flows whose step nothing depends on succeeded: they may end ...
    ended        uuid[]; -- ... and those whose step was ends_flow: they do
    other_flows  uuid[];
    other_names  text[];
    one          record;
BEGIN
    -- One statement for a chain's step (see 0031; flow_steps_ended does the same for its
    -- own callers' chain steps). The other steps count their succeeded tasks; those that
    -- reach 0 succeed, with their output (fan-in in element order: a fan-in over 128
    -- tasks is left for flow_step_done, guarded). Each step and flow through its primary
    -- key.
    WITH chained AS MATERIALIZED (
        SELECT s.flow_id, s.name, c.output, x.name AS waiting_name
        FROM unnest(flow_ids, names, counts, outputs, locks) AS c (flow_id, name, n, output, locks)
        CROSS JOIN LATERAL (SELECT s.flow_id, s.name, s.dependents, s.state
                            FROM rota.flow_steps s WHERE s.flow_id = c.flow_id AND s.name = c.name OFFSET 0) s
        CROSS JOIN LATERAL unnest(coalesce(s.dependents, rota.flow_step_waiting(s.flow_id, s.name))) AS x (name)
        WHERE NOT c.locks AND s.state = 'STARTED'
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
        FROM unnest(flow_ids, names, counts, outputs, locks) AS c (flow_id, name, n, output, locks)
        WHERE c.locks AND s.flow_id = c.flow_id AND s.name = c.name AND s.state = 'STARTED' AND s.locks_flow
          AND (SELECT f.status FROM rota.flows f WHERE f.id = c.flow_id) = 'RUNNING'
        RETURNING s.flow_id, s.name, s.tasks_left, s.state, s.ends_flow,
                  coalesce(s.dependents, rota.flow_step_waiting(s.flow_id, s.name)) AS waiting
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
    -- What is left to move: the flows whose step nothing depends on succeeded (they may
    -- end; those of an ends_flow step do), the steps that wait for the other done steps
    -- (one element per dependency that succeeded), the large fan-ins.
    SELECT e.ending, e.ended, w.flows, w.names, o.flows, o.names
    INTO ending, ended, waiting_flows, done_waiting, other_flows, other_names
    FROM (SELECT array_agg(DISTINCT flow_id) FILTER (WHERE NOT ends_flow) AS ending,
                 array_agg(DISTINCT flow_id) FILTER (WHERE ends_flow) AS ended
          FROM counted_down
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

    -- The flows whose ends_flow step succeeded: every other step succeeded before it
    -- started (each is its ancestor), so they end without a look at their steps.
    IF ended IS NOT NULL THEN
        UPDATE rota.flows SET status = 'SUCCEEDED', completed_at = now(), updated_at = now()
        WHERE id = ANY (ended) AND status = 'RUNNING';
    END IF;
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

-- flow_steps_ended: flow_advance for a statement whose ended step tasks all succeeded,
-- given them by step (record_outcomes has the rows it updated at hand). One statement
-- reads each step's row once: a chain's step (no locks_flow) moves its chain on from it
-- there, unlocked (0025 on why that is safe); the others are returned, their flows are
-- locked in flow id order, and flow_steps_succeeded counts them down. Plans as
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

-- rota.record_outcomes as in 0050, but the ended step tasks' notes for flow_advance are
-- written only when one of them failed (see the comment at its aggregate).
CREATE OR REPLACE FUNCTION rota.record_outcomes(p_ids uuid[], p_tokens uuid[], p_kinds text[],
    p_errors text[], p_retry_in_us bigint[], p_outputs jsonb[])
RETURNS TABLE (ord bigint, status text)
-- A large batch is planned per call, with the batch's arrays as values
-- (force_custom_plan); a small one runs the plan made once per session (below). Both are
-- bound to the batch's own rows: the id = ANY (p_ids) beside the join leaves the primary
-- key, probed by the batch's ids, as the only way into rota.tasks (enable_seqscan = off;
-- every other index is partial, on a predicate the statement does not imply). Without it,
-- a generic plan made while rota.tasks looked empty guessed one row on both sides of the
-- join and put the table outside, walking its whole primary key for every batch (found
-- with auto_explain: 3.8 s for 1,000 outcomes beside 10,000 tasks), which is why every
-- batch was planned per call until migration 0050. TestHotPathNeverScansTasks,
-- TestSmallOutcomeBatchesNeverWalkTheTable.
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
    v_ords     bigint[];
    v_statuses text[];
    v_events   text;    -- the flow step tasks that ended, as tasks_flow_note writes them,
    v_ev_flows uuid[];  -- made from these (their flows and ids) only when one failed
    v_ev_ids   uuid[];
    v_failed   boolean; -- one of them ended otherwise than SUCCEEDED
    v_flows    uuid[];  -- the steps of the succeeded step tasks, one element per step ...
    v_steps    text[];
    v_counts   integer[]; -- ... its tasks that succeeded here ...
    v_outputs  jsonb[];   -- ... and a single-task step's task's output
BEGIN
    -- A trickle's batches (5-10 outcomes at 1,000-2,000 tasks/s) spent about 0.3 ms of each
    -- write planning the statement (docs/performance.md "Outcome batches: a plan per
    -- session for small ones"). The session's plan cannot walk the table (above), and at
    -- 64 outcomes even its worst shape (made while the table looked empty: the table's
    -- rows found by the batch's ids, each matched against the whole batch) costs less than
    -- planning; past that a plan for the batch at hand (a hash or merge join) is worth its
    -- planning. The function's SET clause restores plan_cache_mode when it returns.
    IF cardinality(p_ids) <= 64 THEN
        PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    END IF;
    -- Flows (migration 0025): the row triggers note every ended step task in a setting
    -- that each note copies whole, so a batch of n step tasks cost n^2/2 copies (a
    -- 10,000-wide fan-out written in batches of 1,000 ran at a ninth of plain tasks'
    -- pace). Here they stay quiet, and the statement's ended step tasks are handed to
    -- rota.flow_advance once, from the rows it returned, as the statement trigger would.
    PERFORM set_config('rota.flow_quiet', 'on', true);
    WITH input AS (
        -- Sorted by task id: the tasks are updated (locked) in this order, the same in every
        -- call (and in claim_tasks_by_id.sql), so two batches naming the same tasks in
        -- different orders (a committer retrying while its first attempt still runs) cannot
        -- deadlock. A plan that puts the table outside reads it through id = ANY (p_ids),
        -- which a btree returns in id order too. The LIMIT changes no result. It changes the
        -- planner's guess for a generic plan, from 10 rows (an unnest of a parameter) to 1.
        SELECT *,
               -- retrying: the attempt ended without a result and may run again, unless the
               -- task says otherwise (checked below on the task's latest version).
               kind IN ('retry', 'release') AS retry,
               -- released: the worker gave the attempt up (shutdown); it does not count, so
               -- max_attempts grows by one and a last attempt is not DEAD.
               kind = 'release' AS release
        FROM unnest(p_ids, p_tokens, p_kinds, p_errors, p_retry_in_us, p_outputs)
            WITH ORDINALITY AS u (task_id, lease_token, kind, error, retry_in_us, output, ord)
        ORDER BY task_id
        LIMIT cardinality(p_ids)
    ), updated AS (
        UPDATE rota.tasks t
        SET status = CASE
                         WHEN i.kind = 'succeed' THEN 'SUCCEEDED'
                         WHEN i.kind = 'cancel' OR t.cancel_requested_at IS NOT NULL THEN 'CANCELED'
                         WHEN i.kind = 'fail' THEN 'FAILED'
                         WHEN t.attempt_count >= t.max_attempts AND NOT i.release THEN 'DEAD'
                         -- Waiting to run again is PENDING in every mode (migration 0009): a
                         -- poll worker claims it, or the enqueuer of its queue sends it.
                         ELSE 'PENDING'
                     END,
            -- The four columns below follow the status above: "runs again" is exactly the
            -- ELSE branch (a retry or release, no cancel request, attempts left or released).
            scheduled_for = CASE WHEN i.retry AND t.cancel_requested_at IS NULL AND (t.attempt_count < t.max_attempts OR i.release)
                                 THEN now() + i.retry_in_us * interval '1 microsecond'
                                 ELSE t.scheduled_for END,
            completed_at = CASE WHEN i.retry AND t.cancel_requested_at IS NULL AND (t.attempt_count < t.max_attempts OR i.release)
                                THEN NULL
                                ELSE now() END,
            -- A task that runs again has no message (an SQS worker deletes the old one after
            -- this commit); the enqueuer of its queue sends a new one once it is due.
            enqueued_at = CASE WHEN i.retry AND t.cancel_requested_at IS NULL AND (t.attempt_count < t.max_attempts OR i.release)
                               THEN NULL
                               ELSE t.enqueued_at END,
            max_attempts = CASE WHEN i.release AND t.cancel_requested_at IS NULL
                                THEN t.max_attempts + 1
                                ELSE t.max_attempts END,
            last_error = coalesce(nullif(i.error, ''), t.last_error),
            -- A task has an output only once it SUCCEEDED (DESIGN.md section 10, "Results").
            output = CASE WHEN i.kind = 'succeed' THEN i.output END,
            lease_token = NULL,
            lease_expires_at = NULL,
            updated_at = now()
        FROM input i
        WHERE t.id = i.task_id
          AND t.lease_token = i.lease_token
          -- The batch's ids again, as an index condition of the primary key: no plan,
          -- however the statistics looked when it was made, reads more of rota.tasks than
          -- the batch's rows (see the header).
          AND t.id = ANY (p_ids)
        -- worker_id, attempt_count and processing_started_at are the attempt's own: the
        -- update leaves them as the claim set them.
        RETURNING i.ord, t.status, t.id, t.attempt_count, t.worker_id, i.lease_token,
                  t.processing_started_at, nullif(i.error, '') AS error, t.flow_id,
                  -- what rota.flow_advance would read back by id (a plain task's output is
                  -- not carried along)
                  t.flow_step, t.flow_item IS NULL AS single, CASE WHEN t.flow_id IS NOT NULL THEN t.output END AS step_output
    ), attempts AS (
        INSERT INTO rota.task_attempts (task_id, attempt, worker_id, lease_token, started_at, finished_at, outcome, error)
        SELECT id, attempt_count, worker_id, lease_token, coalesce(processing_started_at, now()), now(),
               CASE WHEN status = 'PENDING' THEN 'RETRIED' ELSE status END,
               error
        FROM updated
    )
    SELECT a.ords, a.statuses, a.ev_flows, a.ev_ids, a.failed, s.flows, s.steps, s.counts, s.outputs
    INTO v_ords, v_statuses, v_ev_flows, v_ev_ids, v_failed, v_flows, v_steps, v_counts, v_outputs
    FROM (SELECT array_agg(u.ord) AS ords, array_agg(u.status) AS statuses,
                 -- The ended step tasks as ids, not yet as notes: two uuids made text and
                 -- sorted for every step task cost 2.5 us of a chain step's 47, and the
                 -- notes are needed only on the failure path (migration 0051).
                 array_agg(u.flow_id) FILTER (WHERE u.flow_id IS NOT NULL AND u.status IN ('SUCCEEDED', 'DEAD', 'FAILED', 'CANCELED')) AS ev_flows,
                 array_agg(u.id) FILTER (WHERE u.flow_id IS NOT NULL AND u.status IN ('SUCCEEDED', 'DEAD', 'FAILED', 'CANCELED')) AS ev_ids,
                 bool_or(u.flow_id IS NOT NULL AND u.status IN ('DEAD', 'FAILED', 'CANCELED')) AS failed
          FROM updated u) a,
         -- The succeeded step tasks by step, as flow_advance groups them (migration 0031).
         (SELECT array_agg(g.flow_id ORDER BY g.flow_id, g.flow_step) AS flows,
                 array_agg(g.flow_step ORDER BY g.flow_id, g.flow_step) AS steps,
                 array_agg(g.n ORDER BY g.flow_id, g.flow_step) AS counts,
                 array_agg(g.output ORDER BY g.flow_id, g.flow_step) AS outputs
          FROM (SELECT u.flow_id, u.flow_step, count(*)::integer AS n,
                       (array_agg(u.step_output) FILTER (WHERE u.single))[1] AS output
                FROM updated u
                WHERE u.flow_id IS NOT NULL AND u.status = 'SUCCEEDED'
                GROUP BY 1, 2) g) s;
    PERFORM set_config('rota.flow_quiet', '', true);
    IF v_failed THEN
        -- A failure locks the live tasks of its flow before any flow row: the general path.
        PERFORM set_config('rota.flow_failed', 'on', true); -- as tasks_flow_note does
        SELECT string_agg(e.flow_id::text || ' ' || e.id::text || ',', '' ORDER BY e.flow_id, e.id)
        INTO v_events
        FROM unnest(v_ev_flows, v_ev_ids) AS e (flow_id, id);
        PERFORM rota.flow_advance(v_events);
    ELSIF v_flows IS NOT NULL THEN
        -- Only successes: what flow_advance does for them, without reading the tasks back.
        PERFORM rota.flow_steps_ended(v_flows, v_steps, v_counts, v_outputs);
    END IF;
    RETURN QUERY SELECT * FROM unnest(v_ords, v_statuses);
END
$$;
