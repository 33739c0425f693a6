-- A worker's heartbeats in one statement (store.HeartbeatMany): every lease of a worker's
-- running tasks extended at once, instead of a statement per task every heartbeat
-- interval (a worker runs up to 1,000 tasks at its default concurrency). The statement's
-- comments are in the store's queries/heartbeat_many.sql.
--
-- A function planned once per session with enable_seqscan = off, as the other hot-path
-- functions (0027, 0032): a statement planned on statistics that say rota.tasks is empty
-- joined the ids to a sequential scan of the table (TestHeartbeatManyNeverScansTasks).
-- Each lookup is a probe of the primary key by one id (a locking LATERAL subquery, a
-- scalar subquery, id = ANY of the locked ids), which no join strategy can turn into a
-- walk of a whole index: as a join, the generic plan read all 20,000 entries.
CREATE FUNCTION rota.heartbeat_many(p_ids uuid[], p_tokens uuid[], p_lease interval)
RETURNS TABLE (ord bigint, result text, lease_expires_at timestamptz,
               cancel_requested_at timestamptz)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH req AS (
        SELECT r.id, r.token, r.ord
        FROM unnest(p_ids, p_tokens) WITH ORDINALITY AS r(id, token, ord)
    ), locked AS (
        SELECT l.id
        FROM req
        CROSS JOIN LATERAL (SELECT x.id FROM rota.tasks x
                            WHERE x.id = req.id AND x.lease_token = req.token
                            FOR UPDATE SKIP LOCKED) l
    ), extended AS (
        UPDATE rota.tasks t
        SET lease_expires_at = now() + p_lease,
            updated_at = now()
        WHERE t.id = ANY (ARRAY(SELECT id FROM locked))
        RETURNING t.id, t.lease_token, t.lease_expires_at, t.cancel_requested_at
    )
    SELECT req.ord,
           CASE
               WHEN e.id IS NOT NULL THEN 'extended'
               ELSE coalesce((SELECT CASE WHEN x.lease_token = req.token THEN 'busy' ELSE 'lost' END
                              FROM rota.tasks x WHERE x.id = req.id), 'not_found')
           END,
           e.lease_expires_at,
           e.cancel_requested_at
    FROM req
    LEFT JOIN extended e ON e.id = req.id AND e.lease_token = req.token
    ORDER BY req.ord;
END
$$;
