-- The fair round's step takes the next group's first task (issue #14's cost target,
-- docs/performance.md "Flow control (session 10)"). Under 0036 each group of a round
-- cost two descents of tasks_fair_*: the loose-scan step found the next group's key, and
-- a second probe of the same index found the group's oldest due task to lock. The
-- step's entry is that task already (the index is (queue, priority DESC, group_key,
-- scheduled_for, id): the first entry past a group is the next group's oldest task), so
-- the step now returns its ctid and whether it is due, and the round locks it by ctid
-- (a TID scan). The second probe is left for what the first entry cannot answer: its
-- task was locked by another claim or changed since the step read it (the lock by ctid
-- rechecks the conditions on the latest version and skips it), or it is due by its time
-- but out of attempts. A group whose first task is not due yet has no due task (the
-- index orders a group's tasks by scheduled_for), and is passed as before.
--
-- Same signature and rows as 0036 (rota.claim_limited_* is unchanged): one group per
-- row, its room (rota.claim_group_room2), and the id of its oldest due task when the
-- group has room (and, with p_glock, its advisory lock could be taken), locked.
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
        -- Each step: the first entry of tasks_fair_* past the previous group, that is
        -- the next group's key and its oldest task (ctid, id; whether it is due by its
        -- time, and claimable).
        WITH RECURSIVE turns(g, tid, id, timely, due) AS (
            (SELECT t.group_key, t.ctid, t.id, t.scheduled_for <= now(),
                    t.scheduled_for <= now() AND t.attempt_count < t.max_attempts
             FROM rota.tasks t
             WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority = p_level
               AND t.group_key > coalesce(p_from, '')
             ORDER BY t.group_key, t.scheduled_for, t.id LIMIT 1)
          UNION ALL
            SELECT n.group_key, n.ctid, n.id, n.timely, n.due
            FROM turns
            CROSS JOIN LATERAL (
                SELECT t.group_key, t.ctid, t.id, t.scheduled_for <= now() AS timely,
                       t.scheduled_for <= now() AND t.attempt_count < t.max_attempts AS due
                FROM rota.tasks t
                WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority = p_level
                  AND t.group_key > turns.g
                ORDER BY t.group_key, t.scheduled_for, t.id LIMIT 1) n
            WHERE p_to IS NULL OR turns.g < p_to
        )
        SELECT turns.g, room.n AS room, room.held, room.retry_ms, coalesce(f.id, x.id) AS id
        FROM turns
        CROSS JOIN LATERAL rota.claim_group_room2(p_queue, turns.g, p_gc, p_grl, p_grper, p_max, p_taken, p_now) room
        -- The step's task, locked by its ctid; its conditions are checked again on the
        -- version the lock finds (a task claimed meanwhile is skipped). The group's lock
        -- last: only a group with room is locked.
        LEFT JOIN LATERAL (
            SELECT t.id FROM rota.tasks t
            WHERE t.ctid = turns.tid AND t.id = turns.id
              AND t.status = {{status}} AND t.queue = p_queue AND t.priority = p_level
              AND t.group_key = turns.g
              AND t.scheduled_for <= now() AND t.attempt_count < t.max_attempts
            LIMIT CASE WHEN turns.due AND room.n > 0 AND (NOT p_glock OR pg_try_advisory_xact_lock(
                            hashtextextended(p_queue || chr(31) || turns.g, 0))) THEN 1 ELSE 0 END
            FOR UPDATE SKIP LOCKED) f ON true
        -- 0036's probe of the group, when the step's task could not be taken but the
        -- group may have another due one: that task was locked or changed, or is out of
        -- attempts. (Its group lock, when taken above, is taken again: locks stack.)
        LEFT JOIN LATERAL (
            SELECT t.id FROM rota.tasks t
            WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority = p_level
              AND t.group_key = turns.g
              AND t.scheduled_for <= now() AND t.attempt_count < t.max_attempts
            ORDER BY t.scheduled_for, t.id
            LIMIT CASE WHEN f.id IS NULL AND turns.timely AND room.n > 0 AND (NOT p_glock OR pg_try_advisory_xact_lock(
                            hashtextextended(p_queue || chr(31) || turns.g, 0))) THEN 1 ELSE 0 END
            FOR UPDATE SKIP LOCKED) x ON true
        WHERE p_to IS NULL OR turns.g <= p_to;
    RETURN c;
END
$$
$fn$, '{{status}}', quote_literal(v_status)), '{{name}}', lower(v_status));
END LOOP;
END
$create$;
