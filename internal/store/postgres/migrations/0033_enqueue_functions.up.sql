-- The SQS enqueuer's two statements (issue #16 item 3) become functions planned once per
-- session, as migrations 0027 and 0032 made the claims: planned on every call, the
-- locking statement (queries/enqueue_due.sql) spent about 2.1 ms planning and 1.5 ms
-- executing a round of 250, and the mark (queries/enqueue_mark.sql) 1.2 ms planning
-- and 4.2 ms executing (EXPLAIN ANALYZE on the stock cluster, docs/performance.md "SQS
-- mode (session 9)"). The statements and their comments stay in those files, which call
-- these functions.
--
-- enable_seqscan = off keeps a plan made from any statistics (an empty table after
-- retention) from scanning rota.tasks: the lock reads the partial indexes its conditions
-- name (tasks_claim_pending, tasks_enqueue_sent, and for a queue's limits tasks_running
-- and queue_claims_queue), the mark reaches its ids through the primary key
-- (TestEnqueueNeverScansTasks).
CREATE FUNCTION rota.enqueue_due(p_queue text, p_limit integer, p_redeliver interval)
RETURNS SETOF uuid
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
BEGIN
    RETURN QUERY
    WITH RECURSIVE budget(n) AS (
        SELECT CASE
            WHEN q.paused THEN 0
            -- CASE, not NULL arithmetic: a limit not set must not run its counts (a strict
            -- operator evaluates its arguments before it sees the NULL).
            ELSE least(p_limit,
                CASE WHEN q.concurrency IS NOT NULL THEN q.concurrency
                  - (SELECT count(*) FROM (SELECT 1 FROM rota.tasks t
                                           WHERE t.status = 'PROCESSING' AND t.queue = p_queue
                                           ORDER BY t.queue, t.group_key LIMIT q.concurrency) r)
                  - (SELECT count(*) FROM (SELECT 1 FROM rota.tasks t
                                           WHERE t.status = 'ENQUEUED' AND t.queue = p_queue AND t.enqueued_at IS NOT NULL
                                           ORDER BY t.queue, t.enqueued_at LIMIT q.concurrency) e) END,
                CASE WHEN q.rate_limit IS NOT NULL THEN q.rate_limit
                  - (SELECT count(*) FROM (SELECT 1 FROM rota.queue_claims c
                                           WHERE c.queue = p_queue
                                             AND c.claimed_at > clock_timestamp() - make_interval(secs => q.rate_per_seconds)
                                           ORDER BY c.claimed_at DESC LIMIT q.rate_limit) w)
                  - (SELECT count(*) FROM (SELECT 1 FROM rota.tasks t
                                           WHERE t.status = 'ENQUEUED' AND t.queue = p_queue AND t.enqueued_at IS NOT NULL
                                           ORDER BY t.queue, t.enqueued_at LIMIT q.rate_limit) e) END)
            END
        FROM (SELECT) AS one
        LEFT JOIN rota.queues q ON q.name = p_queue
    ), pending_levels(priority) AS (
        SELECT 32767::smallint -- above every priority: where the walk starts (claim_tasks.sql)
      UNION ALL
        SELECT (SELECT t.priority FROM rota.tasks t
                WHERE t.status = 'PENDING' AND t.queue = p_queue AND t.priority < l.priority
                ORDER BY t.priority DESC LIMIT 1)
        FROM pending_levels l
        WHERE l.priority IS NOT NULL
    ), pending AS (
        SELECT level.*
        FROM pending_levels l
        CROSS JOIN LATERAL (
            SELECT id, priority, scheduled_for
            FROM rota.tasks
            WHERE status = 'PENDING'
              AND queue = p_queue
              AND priority = l.priority
              AND scheduled_for <= now()
              AND attempt_count < max_attempts
            ORDER BY scheduled_for, id
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        ) level
        LIMIT greatest(0, coalesce((SELECT n FROM budget), p_limit))
    ), lost AS (
        SELECT id, priority, scheduled_for
        FROM rota.tasks
        WHERE status = 'ENQUEUED'
          AND queue = p_queue
          AND enqueued_at < now() - p_redeliver
          AND scheduled_for <= now()
          AND attempt_count < max_attempts
        ORDER BY enqueued_at
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    )
    SELECT id
    FROM (
        SELECT * FROM pending
        UNION ALL
        SELECT * FROM lost
    ) AS due
    ORDER BY priority DESC, scheduled_for, id
    LIMIT p_limit;
END
$$;

CREATE FUNCTION rota.enqueue_mark(p_ids uuid[]) RETURNS integer
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
DECLARE
    v_marked integer;
BEGIN
    UPDATE rota.tasks
    SET status = 'ENQUEUED',
        enqueued_at = statement_timestamp(),
        updated_at = statement_timestamp()
    WHERE id = ANY (p_ids)
      -- The status guard as a CASE, which no index can serve: a plain IN made the planner
      -- of a table without statistics read tasks_status_id for every PENDING and ENQUEUED
      -- task (TestEnqueueNeverScansTasks); the primary key is the only way in.
      AND CASE WHEN status IN ('PENDING', 'ENQUEUED') THEN true ELSE false END;
    GET DIAGNOSTICS v_marked = ROW_COUNT;
    RETURN v_marked;
END
$$;
