-- Back to 0031's flow functions and 0019's rota.new_task_id; flow_create_steps.sql of an
-- older binary does not write ends_flow.
CREATE OR REPLACE FUNCTION rota.flow_steps_succeeded(flow_ids uuid[], names text[], counts integer[], outputs jsonb[],
    locks boolean[])
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
    --
    -- locks says, element by element, what the caller read of the step's locks_flow: each
    -- part below looks up only the steps that are its own. chained holds one row per
    -- (step, dependent) and is materialized, so that the dependents' rows are found by
    -- their primary key (left to itself, the planner joined them before the dependent's
    -- name was known, through flow_steps_position, reading every step of the flow).
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
        RETURNING s.flow_id, s.name, s.tasks_left, s.state,
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

CREATE OR REPLACE FUNCTION rota.flow_steps_ended(flow_ids uuid[], names text[], counts integer[], outputs jsonb[])
RETURNS void
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    locks  boolean[];
    locked uuid[];
BEGIN
    SELECT array_agg(coalesce(s.locks_flow, true) ORDER BY c.ord),
           array_agg(DISTINCT c.flow_id) FILTER (WHERE coalesce(s.locks_flow, true))
    INTO locks, locked
    FROM unnest(flow_ids, names) WITH ORDINALITY AS c (flow_id, name, ord)
    LEFT JOIN LATERAL (SELECT s.locks_flow FROM rota.flow_steps s
                       WHERE s.flow_id = c.flow_id AND s.name = c.name OFFSET 0) s ON true;
    IF locked IS NOT NULL THEN
        PERFORM 1 FROM rota.flows WHERE id = ANY (locked) ORDER BY id FOR UPDATE;
    END IF;
    PERFORM rota.flow_steps_succeeded(flow_ids, names, counts, outputs, locks);
END
$$;

CREATE OR REPLACE FUNCTION rota.new_task_id(seq bigint) RETURNS uuid
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN (lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
            || '7' || lpad(to_hex((seq >> 12) & 4095), 3, '0')
            || '8' || lpad(to_hex(seq & 4095), 3, '0')
            || right(replace(gen_random_uuid()::text, '-', ''), 12))::uuid;
END
$$;

ALTER TABLE rota.flow_steps DROP COLUMN ends_flow;

-- rota.record_outcomes as 0050 left it.
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
    v_events   text;    -- the flow step tasks that ended, as tasks_flow_note writes them
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
    SELECT a.ords, a.statuses, a.events, a.failed, s.flows, s.steps, s.counts, s.outputs
    INTO v_ords, v_statuses, v_events, v_failed, v_flows, v_steps, v_counts, v_outputs
    FROM (SELECT array_agg(u.ord) AS ords, array_agg(u.status) AS statuses,
                 string_agg(u.flow_id::text || ' ' || u.id::text || ',', '' ORDER BY u.flow_id, u.id)
                     FILTER (WHERE u.flow_id IS NOT NULL AND u.status IN ('SUCCEEDED', 'DEAD', 'FAILED', 'CANCELED')) AS events,
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
        PERFORM rota.flow_advance(v_events);
    ELSIF v_flows IS NOT NULL THEN
        -- Only successes: what flow_advance does for them, without reading the tasks back.
        PERFORM rota.flow_steps_ended(v_flows, v_steps, v_counts, v_outputs);
    END IF;
    RETURN QUERY SELECT * FROM unnest(v_ords, v_statuses);
END
$$;
