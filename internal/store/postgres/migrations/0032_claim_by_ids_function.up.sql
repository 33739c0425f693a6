-- The SQS worker's claim by id (issue #16 item 3), cheaper per task: one UPDATE instead
-- of a FOR UPDATE step and then an UPDATE that looked each row up again, in a function
-- planned once per session, as migration 0027 made the plain claim: planning was about
-- 0.45 ms of a claim of 30 ids that executed in about 1 ms (EXPLAIN ANALYZE,
-- docs/performance.md "SQS mode (session 9)"). The store calls it when the claim takes
-- every id it names (store.ClaimParams.Limit at least len(TaskIDs), which is what the
-- SQS Source asks); a smaller limit still runs queries/claim_tasks_by_id.sql, which
-- orders by priority first. The statement's comments are in the store's
-- queries/claim_tasks_by_ids.sql.
--
-- enable_seqscan = off, as for the other hot-path functions: the primary key is the only
-- index of rota.tasks without a predicate, and the conditions imply no other index's
-- predicate, so the generic plan reaches the rows through it whatever the statistics
-- said when it was made (TestHotPathNeverScansTasks).
CREATE FUNCTION rota.claim_tasks_by_ids(p_queue text, p_worker text, p_lease interval,
    p_ids uuid[], p_from text)
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
    WITH claimed AS (
        UPDATE rota.tasks t
        SET status = 'PROCESSING',
            worker_id = p_worker,
            lease_token = gen_random_uuid(),
            lease_expires_at = now() + p_lease,
            attempt_count = t.attempt_count + 1,
            processing_started_at = now(),
            enqueued_at = CASE WHEN p_from = 'ENQUEUED' THEN coalesce(t.enqueued_at, now())
                               ELSE t.enqueued_at END,
            updated_at = now()
        WHERE t.id = ANY (p_ids)
          AND (t.status = p_from OR (p_from = 'ENQUEUED' AND t.status = 'PENDING'))
          AND t.queue = p_queue
          AND t.scheduled_for <= now()
          AND t.attempt_count < t.max_attempts
          AND NOT EXISTS (SELECT FROM rota.queues q
                          WHERE q.name = p_queue
                            AND (q.paused OR q.concurrency IS NOT NULL OR q.rate_limit IS NOT NULL
                                 OR q.group_concurrency IS NOT NULL OR q.group_rate_limit IS NOT NULL))
        RETURNING t.id, t.queue, t.kind, t.payload, t.status, t.priority, t.scheduled_for,
                  t.attempt_count, t.max_attempts, t.idempotency_key, t.timeout_seconds,
                  t.worker_id, t.lease_token, t.lease_expires_at, t.cancel_requested_at,
                  t.enqueued_at, t.processing_started_at, t.completed_at, t.last_error,
                  t.created_at, t.updated_at, t.output, t.group_key, t.trace_context,
                  t.flow_id, t.flow_step, t.flow_index, t.flow_item
    )
    SELECT c.id, c.queue, c.kind, c.payload, c.status, c.priority, c.scheduled_for,
           c.attempt_count, c.max_attempts, c.idempotency_key, c.timeout_seconds,
           c.worker_id, c.lease_token, c.lease_expires_at, c.cancel_requested_at,
           c.enqueued_at, c.processing_started_at, c.completed_at, c.last_error,
           c.created_at, c.updated_at, c.output, c.group_key, c.trace_context,
           c.flow_id, c.flow_step, c.flow_index, c.flow_item,
           CASE WHEN c.flow_id IS NOT NULL
                     AND row_number() OVER (PARTITION BY c.flow_id, c.flow_step ORDER BY c.id) = 1
                THEN (SELECT s.inputs FROM rota.flow_steps s WHERE s.flow_id = c.flow_id AND s.name = c.flow_step)
           END AS flow_inputs
    FROM claimed c
    ORDER BY c.priority DESC, c.scheduled_for, c.id;
END
$$;
