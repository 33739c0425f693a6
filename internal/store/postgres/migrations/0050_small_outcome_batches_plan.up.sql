-- Outcome batches: small ones run a plan made once per session (issue #16, steady state).
-- rota.record_outcomes was planned on every call (force_custom_plan, migrations 0027 and
-- 0031) because its generic plan could walk the whole table; now the batch's ids bound
-- every plan (id = ANY beside the join), and a batch of at most 64 outcomes (a worker
-- writes 1-10 under a trickle) skips the per-call planning. Larger batches (a drain's
-- hundreds) are still planned for their own arrays. Nothing else in the function changes.
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
