-- Back to 0036's fair round: the step to each next group finds only its key, and a
-- second probe of the group finds and locks its oldest due task.
DO $create$
DECLARE
    v_status text;
BEGIN
FOREACH v_status IN ARRAY ARRAY['PENDING', 'ENQUEUED'] LOOP
EXECUTE replace(replace($fn$
CREATE OR REPLACE FUNCTION rota.claim_turns_{{name}}(p_queue text, p_level smallint, p_from text, p_to text,
    p_gc integer, p_grl integer, p_grper interval, p_max integer, p_taken text[], p_now timestamptz,
    p_glock boolean)
RETURNS refcursor
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
DECLARE
    c refcursor;
BEGIN
    OPEN c FOR
        WITH RECURSIVE turns(g) AS (
            (SELECT t.group_key FROM rota.tasks t
             WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority = p_level
               AND t.group_key > coalesce(p_from, '')
             ORDER BY t.group_key LIMIT 1)
          UNION ALL
            SELECT (SELECT t.group_key FROM rota.tasks t
                    WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority = p_level
                      AND t.group_key > turns.g
                    ORDER BY t.group_key LIMIT 1)
            FROM turns WHERE turns.g IS NOT NULL AND (p_to IS NULL OR turns.g < p_to)
        )
        SELECT turns.g, room.n AS room, room.held, room.retry_ms, x.id
        FROM turns
        CROSS JOIN LATERAL rota.claim_group_room2(p_queue, turns.g, p_gc, p_grl, p_grper, p_max, p_taken, p_now) room
        LEFT JOIN LATERAL (
            SELECT t.id FROM rota.tasks t
            WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority = p_level
              AND t.group_key = turns.g
              AND t.scheduled_for <= now() AND t.attempt_count < t.max_attempts
            ORDER BY t.scheduled_for, t.id
            -- The group's lock last: only a group with room is locked.
            LIMIT CASE WHEN room.n > 0 AND (NOT p_glock OR pg_try_advisory_xact_lock(
                            hashtextextended(p_queue || chr(31) || turns.g, 0))) THEN 1 ELSE 0 END
            FOR UPDATE SKIP LOCKED) x ON true
        WHERE turns.g IS NOT NULL AND (p_to IS NULL OR turns.g <= p_to);
    RETURN c;
END
$$
$fn$, '{{status}}', quote_literal(v_status)), '{{name}}', lower(v_status));
END LOOP;
END
$create$;
