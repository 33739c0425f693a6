-- The hot path, cheaper per task (issue #16). Measured with EXPLAIN (ANALYZE) of the
-- claim and the outcome statements at batches of 200 (scripts/sqlfloor.sh --explain):
--
-- 1. rota.task_attempts loses its foreign key to rota.tasks. Its check ran once per
--    attempt row, as a query of its own (SELECT ... FOR KEY SHARE of the task row that
--    the same statement had just updated), and took about half of the outcome
--    statement's time. Every attempt row is written by a statement that has the task's
--    row locked (record_outcomes, the reaper, the replay trigger), so the task exists;
--    the cascade the key gave is now written out where tasks are deleted (retention:
--    delete_finished_tasks.sql, delete_finished_flows.sql), which deletes only ended
--    tasks it holds locked, so no attempt can be added to a task being deleted.
--
-- 2. The plain claim (claim_tasks.sql until now) becomes a function whose plans are made
--    once per session, generic, instead of on every call: planning was a fifth to a third
--    of a claim. The outcome statement (record_outcomes.sql) becomes a function too, but
--    stays planned per call (see there).
--    enable_seqscan = off keeps a plan made from any statistics (an empty table after
--    retention) from scanning rota.tasks, the reason the statements were planned per
--    call (TestHotPathNeverScansTasks), as migration 0022 does for claim_limited. One
--    claim function per status, made from one text (the DO block below), in which
--    {{status}} stands for the literal status claimed from: the partial indexes
--    tasks_claim_pending / tasks_claim_enqueued match only a literal.
--    The statements' comments are in the store's queries/claim_tasks.sql and
--    queries/record_outcomes.sql, which call these functions.
--
-- 3. The insert trigger's NOTIFY is skipped when the inserting client sends the wake-up
--    itself after its commit (rota.notify_after_commit, set for its transaction by
--    create_tasks.sql). A transaction that notifies holds PostgreSQL's one notify lock
--    (on the database) through its commit, WAL flush included, so every create committed
--    one after another: measured, 16 concurrent single creates made 380 tasks/s on stock
--    settings, and 1,700-1,900 without the notification. The store's own wake-up is a
--    transaction of its own that commits without waiting for a flush (notify_tasks.sql).
ALTER TABLE rota.task_attempts DROP CONSTRAINT IF EXISTS task_attempts_task_id_fkey;

CREATE OR REPLACE FUNCTION rota.tasks_notify_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('rota.notify_after_commit', true) = 'on' THEN
        RETURN NULL;
    END IF;
    PERFORM pg_notify('rota_tasks', q.queue)
    FROM (SELECT DISTINCT queue FROM new_rows WHERE status = 'PENDING' AND scheduled_for <= now()) AS q;
    RETURN NULL;
END
$$;

DO $create$
DECLARE
    v_status text;
BEGIN
FOREACH v_status IN ARRAY ARRAY['PENDING', 'ENQUEUED'] LOOP
EXECUTE replace(replace($fn$
CREATE FUNCTION rota.claim_tasks_{{name}}(p_queue text, p_limit integer, p_worker text,
    p_lease interval, p_after_level smallint, p_after_at timestamptz, p_after_id uuid)
RETURNS TABLE (
    id uuid, queue text, kind text, payload jsonb, status text, priority smallint,
    scheduled_for timestamptz, attempt_count integer, max_attempts integer,
    idempotency_key text, timeout_seconds integer, worker_id text, lease_token uuid,
    lease_expires_at timestamptz, cancel_requested_at timestamptz, enqueued_at timestamptz,
    processing_started_at timestamptz, completed_at timestamptz, last_error text,
    created_at timestamptz, updated_at timestamptz, output jsonb, group_key text,
    trace_context jsonb, flow_id uuid, flow_step text, flow_index integer, flow_item jsonb,
    flow_inputs jsonb)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH RECURSIVE levels(priority) AS (
        SELECT 32767::smallint -- above every priority (a smallint): where the walk starts
        WHERE NOT EXISTS (SELECT FROM rota.queues q
                          WHERE q.name = p_queue
                            AND (q.paused OR q.concurrency IS NOT NULL OR q.rate_limit IS NOT NULL
                                 OR q.group_concurrency IS NOT NULL OR q.group_rate_limit IS NOT NULL))
          AND (SELECT true FROM rota.tasks g
               WHERE g.status = {{status}} AND g.queue = p_queue AND g.group_key IS NOT NULL
               -- tasks_fair_*'s order: one probe of it, never a scan of the table (NOT
               -- EXISTS would drop the ORDER BY, and the planner likes a scan when
               -- statistics say many tasks are grouped)
               ORDER BY g.priority DESC, g.group_key LIMIT 1) IS NULL
      UNION ALL
        -- With a hint, the levels above the hint's are probed down to it, not past it, and
        -- the hint's level follows them unprobed: a probe into it would step over the
        -- entries the hint is there to skip. Below it, levels are probed as without a hint
        -- (-32768, below every priority a task may have, stands for no lower bound).
        SELECT coalesce(
                 (SELECT t.priority FROM rota.tasks t
                  WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority < levels.priority
                    AND t.priority > CASE WHEN levels.priority > p_after_level THEN p_after_level ELSE -32768 END
                  ORDER BY t.priority DESC LIMIT 1),
                 CASE WHEN levels.priority > p_after_level THEN p_after_level END)
        FROM levels
        WHERE levels.priority IS NOT NULL
    ), due AS (
        SELECT level.row
        FROM levels
        CROSS JOIN LATERAL (
            SELECT ctid AS row
            FROM rota.tasks
            WHERE status = {{status}}
              AND queue = p_queue
              AND priority = levels.priority
              AND scheduled_for <= now()
              AND attempt_count < max_attempts
              -- The hint's level starts just past the hint, other levels at their start: a
              -- bound the index scan starts from, over the entries of tasks claimed since
              -- the last vacuum, which a long drain would otherwise step over every claim.
              AND (scheduled_for, id) > (
                    CASE WHEN levels.priority = p_after_level THEN p_after_at ELSE '-infinity' END,
                    CASE WHEN levels.priority = p_after_level THEN p_after_id ELSE '00000000-0000-0000-0000-000000000000' END)
            ORDER BY scheduled_for, id
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        ) level
        LIMIT p_limit
    ), claimed AS (
        UPDATE rota.tasks t
        SET status = 'PROCESSING',
            worker_id = p_worker,
            lease_token = gen_random_uuid(),
            lease_expires_at = now() + p_lease,
            attempt_count = t.attempt_count + 1,
            processing_started_at = now(),
            -- A task claimed from ENQUEUED is an SQS-mode task even when its retry was not
            -- sent yet (the HTTP worker protocol of a server in SQS mode claims so): its dead
            -- letter must reach the DLQ (migration 0008), as claim_tasks_by_id.sql does.
            enqueued_at = CASE WHEN {{status}} = 'ENQUEUED' THEN coalesce(t.enqueued_at, now()) ELSE t.enqueued_at END,
            updated_at = now()
        WHERE t.ctid = ANY (ARRAY(SELECT row FROM due))
        RETURNING t.id, t.queue, t.kind, t.payload, t.status, t.priority, t.scheduled_for,
                  t.attempt_count, t.max_attempts, t.idempotency_key, t.timeout_seconds,
                  t.worker_id, t.lease_token, t.lease_expires_at, t.cancel_requested_at,
                  t.enqueued_at, t.processing_started_at, t.completed_at, t.last_error,
                  t.created_at, t.updated_at, t.output, t.group_key, t.trace_context,
                  -- flowScan: the flow step the task runs (migration 0019); its inputs below
                  t.flow_id, t.flow_step, t.flow_index, t.flow_item
    )
    SELECT c.id, c.queue, c.kind, c.payload, c.status, c.priority, c.scheduled_for,
           c.attempt_count, c.max_attempts, c.idempotency_key, c.timeout_seconds,
           c.worker_id, c.lease_token, c.lease_expires_at, c.cancel_requested_at,
           c.enqueued_at, c.processing_started_at, c.completed_at, c.last_error,
           c.created_at, c.updated_at, c.output, c.group_key, c.trace_context,
           c.flow_id, c.flow_step, c.flow_index, c.flow_item,
           -- A step task's inputs are its step's, kept once on the step's row and read through
           -- its primary key; in the answer only on the claim's first task of each step (the
           -- store gives the others the same inputs: collectClaimedTasks), so a claim of 100
           -- elements of a fan-out carries the array it fans out over once, not 100 times. A
           -- plain task (flow_id NULL) reads nothing. The first of a step is found with a
           -- window over the claimed rows (one sort), not by comparing each claimed row with
           -- every other (a claim of 100 step tasks made 10,000 comparisons).
           CASE WHEN c.flow_id IS NOT NULL
                     AND row_number() OVER (PARTITION BY c.flow_id, c.flow_step ORDER BY c.id) = 1
                THEN (SELECT s.inputs FROM rota.flow_steps s WHERE s.flow_id = c.flow_id AND s.name = c.flow_step)
           END AS flow_inputs
    FROM claimed c
    ORDER BY c.priority DESC, c.scheduled_for, c.id;
END
$$
$fn$, '{{status}}', quote_literal(v_status)), '{{name}}', lower(v_status));
END LOOP;
END
$create$;

CREATE FUNCTION rota.record_outcomes(p_ids uuid[], p_tokens uuid[], p_kinds text[],
    p_errors text[], p_retry_in_us bigint[], p_outputs jsonb[])
RETURNS TABLE (ord bigint, status text)
-- Planned per call, with the batch's arrays as values (force_custom_plan): a generic plan
-- made while rota.tasks looked empty guessed one row on both sides of the join and put
-- the table outside, walking its whole primary key for every batch (found with
-- auto_explain: 3.8 s for 1,000 outcomes beside 10,000 tasks).
-- TestOutcomesNeverWalkTheTable.
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
    v_ords     bigint[];
    v_statuses text[];
    v_events   text;    -- the flow step tasks that ended, as tasks_flow_note writes them
    v_failed   boolean; -- one of them ended otherwise than SUCCEEDED
BEGIN
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
        -- deadlock. The LIMIT changes no result. It changes the planner's guess for a cached
        -- generic plan, from 10 rows (an unnest of a parameter) to 1, which keeps the join
        -- below a nested loop of primary-key lookups even while the table looks tiny.
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
        -- worker_id, attempt_count and processing_started_at are the attempt's own: the
        -- update leaves them as the claim set them.
        RETURNING i.ord, t.status, t.id, t.attempt_count, t.worker_id, i.lease_token,
                  t.processing_started_at, nullif(i.error, '') AS error, t.flow_id
    ), attempts AS (
        INSERT INTO rota.task_attempts (task_id, attempt, worker_id, lease_token, started_at, finished_at, outcome, error)
        SELECT id, attempt_count, worker_id, lease_token, coalesce(processing_started_at, now()), now(),
               CASE WHEN status = 'PENDING' THEN 'RETRIED' ELSE status END,
               error
        FROM updated
    )
    SELECT array_agg(u.ord), array_agg(u.status),
           string_agg(u.flow_id::text || ' ' || u.id::text || ',', '' ORDER BY u.flow_id, u.id)
               FILTER (WHERE u.flow_id IS NOT NULL AND u.status IN ('SUCCEEDED', 'DEAD', 'FAILED', 'CANCELED')),
           bool_or(u.flow_id IS NOT NULL AND u.status IN ('DEAD', 'FAILED', 'CANCELED'))
    INTO v_ords, v_statuses, v_events, v_failed
    FROM updated u;
    PERFORM set_config('rota.flow_quiet', '', true);
    IF v_events IS NOT NULL THEN
        IF v_failed THEN
            PERFORM set_config('rota.flow_failed', 'on', true); -- as tasks_flow_note does
        END IF;
        PERFORM rota.flow_advance(v_events);
    END IF;
    RETURN QUERY SELECT * FROM unnest(v_ords, v_statuses);
END
$$;
