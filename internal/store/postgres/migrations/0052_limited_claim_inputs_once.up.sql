-- A limited claim answers a step's inputs once per step, not once per task (issue #16:
-- flows keep their cost with flow control; docs/performance.md "Session 15").
-- rota.claim_limited read its step's inputs for every claimed task: a claim of 500
-- elements of a fan-out over 2,000 numbers carried the 10 KB array 500 times, 6.5 MB
-- and 61 ms against the plain claim's 0.33 MB and 9 ms (BenchmarkClaimFanOutElements),
-- and a 10,000-wide fan-out five times that. Now its answer has them on the claim's
-- first task of each step only, as claim_tasks.sql and claim_tasks_by_id.sql do, and the
-- store shares them (shareStepInputs). The function is 0044's otherwise.

DROP FUNCTION rota.claim_limited_pending(text, integer, text, interval, uuid[]);
DROP FUNCTION rota.claim_limited_enqueued(text, integer, text, interval, uuid[]);

-- ClaimTasks for a queue with settings or grouped tasks: the same writes as
-- claim_tasks.sql (p_ids NULL) and claim_tasks_by_id.sql (p_ids set), obeying the
-- queue's settings and, walking the queue, taking its groups in turn. Returns the
-- claimed tasks (held NULL, plain NULL), then at most one report row, every task column
-- NULL: when a setting held the claim back, held set ('paused', 'concurrency', 'rate',
-- 'group_concurrency', 'group_rate') and retry_ms for rates; when the queue is not flow
-- controlled at all (no setting that limits or pauses it, no grouped tasks of the
-- status: the plain statement's gate, migration 0027, would have let it through),
-- plain true, so that the store claims it through the plain statement again (lease.go).
--
-- A queue with limits is serialised: its rota.queues row is locked (FOR NO KEY UPDATE),
-- then its advisory lock (exclusively), before anything is counted, and each count below
-- is a statement of its own, whose snapshot sees every claim committed before the lock
-- was granted. Except a walk of a queue whose only limit is group_concurrency: it holds
-- the queue's advisory lock shared (so it overlaps other such walks, never a serialised
-- claim) and each group's advisory lock from the moment it takes a task of it, and
-- counts the groups it took again once all their locks are held (see the top of this
-- file). Paused queues and queues whose only reason to be here is grouped tasks
-- (fairness) take no lock.
--
-- One function per status, rota.claim_limited_pending and rota.claim_limited_enqueued,
-- made from one text (the DO block below), in which {{status}} stands for the status
-- claimed from, as a literal: so that each statement's plan is made once per session
-- (plan_cache_mode = force_generic_plan) and not on every claim (planning was about a
-- third of a claim), and is still index-bound. A generic plan is made without the
-- values of the variables: the status must be a literal for the partial indexes
-- (WHERE status = 'PENDING' / 'ENQUEUED') to match, as in claim_tasks.sql, and
-- enable_seqscan = off keeps a plan made from any statistics (an empty table) from
-- scanning rota.tasks (TestFlowControlledClaimsNeverScanTasks). Below, "p_status" in
-- comments means {{status}}.
DO $create$
DECLARE
    v_status text;
BEGIN
FOREACH v_status IN ARRAY ARRAY['PENDING', 'ENQUEUED'] LOOP
EXECUTE replace(replace($fn$
CREATE FUNCTION rota.claim_limited_{{name}}(p_queue text, p_limit integer, p_worker text,
    p_lease interval, p_ids uuid[])
RETURNS TABLE (held text, retry_ms double precision, plain boolean,
    id uuid, queue text, kind text, payload jsonb, status text, priority smallint,
    scheduled_for timestamptz, attempt_count integer, max_attempts integer,
    idempotency_key text, timeout_seconds integer, worker_id text, lease_token uuid,
    lease_expires_at timestamptz, cancel_requested_at timestamptz, enqueued_at timestamptz,
    processing_started_at timestamptz, completed_at timestamptz, last_error text,
    created_at timestamptz, updated_at timestamptz, output jsonb, group_key text,
    trace_context jsonb, flow_id uuid, flow_step text, flow_index integer, flow_item jsonb,
    flow_inputs jsonb)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
    -- the walk's lateral subqueries never see the same key twice: a cache of their
    -- results (Memoize) is only work
    SET enable_memoize = off AS $$
#variable_conflict use_column
DECLARE
    s rota.queues;
    v_limited boolean := false;
    v_glock boolean := false;   -- a group-only walk: group locks instead of the queue's
    v_gids uuid[] := '{}';      -- the grouped tasks taken (v_tg holds their groups)
    v_drop uuid[];              -- taken beyond a group's limit, given back
    v_rates boolean := false;
    v_room integer := p_limit;  -- what the queue's own limits let this claim take
    v_cut text;                 -- the queue limit that cut v_room below p_limit
    v_cut_retry double precision;
    v_n integer;
    v_oldest timestamptz;
    v_ids uuid[] := '{}';
    -- The claim's time: its tasks' processing_started_at and its record in queue_claims.
    -- Under the queue's lock, the clock once the lock is held: claims of a limited queue
    -- then have times in the order they held the lock, so a window counted by one claim
    -- holds every earlier claim that may share a window with it, and pruning the claims
    -- older than every window never removes one a later claim would count (now(), the
    -- transaction's start, is earlier the longer a claim waited for the lock).
    v_now timestamptz := now();
    -- Group limits: the room each group seen has left (parallel arrays).
    v_gkeys text[] := '{}';
    v_grooms integer[] := '{}';
    v_gretries double precision[] := '{}';
    v_gheld text;               -- the strongest group limit that held a due group back
    v_gretry double precision;
    v_gfull text;               -- the group limit a group that used up its room hit
    -- The fair walk.
    v_grouped boolean;
    v_level smallint;
    v_start text;               -- the turn's cursor when the claim began
    v_has_cursor boolean;       -- the queue has a cursor row
    v_cursor text;              -- the last group served
    v_moved boolean := false;
    v_phase integer;
    v_from text;
    v_to text;
    v_gotg text[];              -- the groups of the tasks a round took (v_got)
    v_rheld text;               -- the strongest group limit that held back a round's group
    v_rretry double precision;
    v_live text[];              -- the groups that took a task in this level's last round
    v_live_null boolean;        -- the ungrouped turn did
    v_next text[];
    v_prev text;
    v_c integer;
    v_k integer;
    v_got uuid[];
    v_tg text[] := '{}';        -- the group of each task taken, for the rooms left
    v_gc integer;               -- the group limits (NULL: none)
    v_grl integer;
    v_grper interval;
    r record;
    gr record;
BEGIN
    -- A serialised claim locks the queue's advisory lock (exclusively: it waits for the
    -- group-only walks in flight, which hold it shared, so their claims are committed,
    -- and counted below, before this claim counts anything) and then its row at once
    -- (one statement): the claim waits for the queue's other claims, and reads the
    -- settings as they are once they are done (a change committed meanwhile is in force
    -- for it: the row is read again after the wait, and if it no longer has such limits
    -- it is not locked). The same statement looks whether the queue has grouped tasks
    -- (fairness; not a count a limit relies on) and reads the fair turn's cursor.
    SELECT q AS settings, (SELECT true FROM rota.tasks t WHERE t.status = {{status}} AND t.queue = p_queue
                                  AND t.group_key IS NOT NULL
                                  -- tasks_fair_*'s order: one probe of it, never a scan of
                                  -- the table (EXISTS would drop the ORDER BY, and the
                                  -- planner likes a scan when many tasks are grouped).
                                  ORDER BY t.priority DESC, t.group_key LIMIT 1) IS NOT NULL AS grouped,
           (SELECT c.group_key FROM rota.queue_cursors c WHERE c.queue = p_queue) AS cursor,
           (SELECT true FROM rota.queue_cursors c WHERE c.queue = p_queue) AS has_cursor,
           -- computed for the row found, before its lock (taken in this order by every
           -- serialised claim; a group-only walk never waits for the row)
           pg_advisory_xact_lock(hashtextextended(p_queue, 1)) AS queue_lock
    INTO r
    FROM rota.queues q
    WHERE q.name = p_queue AND NOT q.paused
      AND (q.concurrency IS NOT NULL OR q.rate_limit IS NOT NULL OR q.group_rate_limit IS NOT NULL
           -- group_concurrency alone: only a claim by id is serialised
           OR (q.group_concurrency IS NOT NULL AND p_ids IS NOT NULL))
    FOR NO KEY UPDATE OF q;
    IF FOUND THEN
        s := r.settings;
        v_grouped := r.grouped;
        v_start := r.cursor;
        v_has_cursor := r.has_cursor IS NOT NULL;
        v_limited := true;
        v_now := clock_timestamp();
    ELSE
        -- Paused, no limits, no settings, or a walk whose only limit is
        -- group_concurrency: no row lock. Such a walk (see migration 0036's header) holds
        -- the queue's advisory lock shared, taken in this statement: it overlaps other
        -- such walks, never a serialised claim; the groups' locks are taken by the walk.
        SELECT q AS settings, (SELECT true FROM rota.tasks t WHERE t.status = {{status}} AND t.queue = p_queue
                                      AND t.group_key IS NOT NULL
                                      ORDER BY t.priority DESC, t.group_key LIMIT 1) IS NOT NULL AS grouped,
               (SELECT c.group_key FROM rota.queue_cursors c WHERE c.queue = p_queue) AS cursor,
               (SELECT true FROM rota.queue_cursors c WHERE c.queue = p_queue) AS has_cursor,
               CASE WHEN p_ids IS NULL AND NOT q.paused AND q.group_concurrency IS NOT NULL
                         AND q.concurrency IS NULL AND q.rate_limit IS NULL AND q.group_rate_limit IS NULL
                    THEN pg_advisory_xact_lock_shared(hashtextextended(p_queue, 1)) END AS queue_lock
        INTO r
        FROM (SELECT 1) one LEFT JOIN rota.queues q ON q.name = p_queue;
        s := r.settings;
        v_grouped := r.grouped;
        v_start := r.cursor;
        v_has_cursor := r.has_cursor IS NOT NULL;
        IF s.paused THEN
            held := 'paused';
            RETURN NEXT;
            RETURN;
        END IF;
        IF p_ids IS NULL AND s.group_concurrency IS NOT NULL AND s.concurrency IS NULL
           AND s.rate_limit IS NULL AND s.group_rate_limit IS NULL THEN
            v_limited := true;
            v_glock := true;
            v_now := clock_timestamp();
        END IF;
    END IF;
    v_gfull := CASE WHEN s.group_concurrency IS NOT NULL THEN 'group_concurrency' ELSE 'group_rate' END;
    v_rates := v_limited AND (s.rate_limit IS NOT NULL OR s.group_rate_limit IS NOT NULL);

    IF v_limited AND s.concurrency IS NOT NULL THEN
        -- tasks_running: never more entries than the limit read.
        SELECT count(*) INTO v_n FROM (
            SELECT 1 FROM rota.tasks t WHERE t.status = 'PROCESSING' AND t.queue = p_queue
            ORDER BY t.queue, t.group_key -- tasks_running's order: never a scan
            LIMIT s.concurrency) x;
        IF s.concurrency - v_n < v_room THEN
            v_room := greatest(0, s.concurrency - v_n);
            v_cut := 'concurrency';
        END IF;
    END IF;
    IF v_rates THEN
        -- Claims older than every window of the queue are of no more use.
        DELETE FROM rota.queue_claims c WHERE c.queue = p_queue
          AND c.claimed_at <= v_now - make_interval(secs =>
                greatest(coalesce(s.rate_per_seconds, 0), coalesce(s.group_rate_per_seconds, 0)));
    END IF;
    IF v_limited AND s.rate_limit IS NOT NULL AND v_room > 0 THEN
        SELECT count(*), min(w.claimed_at) INTO v_n, v_oldest FROM (
            SELECT c.claimed_at FROM rota.queue_claims c
            WHERE c.queue = p_queue
              AND c.claimed_at > v_now - make_interval(secs => s.rate_per_seconds)
            ORDER BY c.claimed_at DESC
            LIMIT s.rate_limit) w;
        IF s.rate_limit - v_n < v_room THEN
            v_room := greatest(0, s.rate_limit - v_n);
            v_cut := 'rate';
            -- The window admits another claim when its oldest claim leaves it (this
            -- claim's own, at v_now, when it had none).
            v_cut_retry := greatest(0, 1000 * extract(epoch FROM
                coalesce(v_oldest, v_now) + make_interval(secs => s.rate_per_seconds) - clock_timestamp()));
        END IF;
    END IF;
    IF v_room = 0 THEN
        held := v_cut;
        retry_ms := v_cut_retry;
        RETURN NEXT;
        RETURN;
    END IF;

    IF p_ids IS NOT NULL THEN
        -- By id, as claim_tasks_by_id.sql: each id locked (waiting) on its own, in id
        -- order, its conditions checked on the locked, latest version.
        FOR r IN
            SELECT t.id, t.group_key
            FROM (SELECT DISTINCT u.id FROM unnest(p_ids) AS u (id) ORDER BY u.id) AS want
            CROSS JOIN LATERAL (
                SELECT t.id, t.status, t.queue, t.priority, t.scheduled_for, t.attempt_count,
                       t.max_attempts, t.group_key
                FROM rota.tasks t WHERE t.id = want.id
                LIMIT 1 -- keeps the conditions below out of the locking subquery
                FOR UPDATE) AS t
            WHERE (t.status = {{status}} OR ({{status}} = 'ENQUEUED' AND t.status = 'PENDING'))
              AND t.queue = p_queue
              AND t.scheduled_for <= now()
              AND t.attempt_count < t.max_attempts
            ORDER BY t.priority DESC, t.scheduled_for, t.id
        LOOP
            IF v_room = 0 THEN
                v_n := -1; -- a due id was left for the queue's limit
                EXIT;
            END IF;
            IF r.group_key IS NOT NULL AND v_limited
               AND (s.group_concurrency IS NOT NULL OR s.group_rate_limit IS NOT NULL) THEN
                v_k := array_position(v_gkeys, r.group_key);
                IF v_k IS NULL THEN
                    gr := rota.claim_group_room(p_queue, r.group_key, s, p_limit, v_now);
                    v_gkeys := v_gkeys || r.group_key;
                    v_grooms := v_grooms || gr.room;
                    v_gretries := v_gretries || gr.retry_ms;
                    v_k := cardinality(v_gkeys);
                    IF gr.held IS NOT NULL THEN
                        v_gheld := CASE WHEN v_gheld = 'group_concurrency' THEN v_gheld ELSE gr.held END;
                        v_gretry := least(v_gretry, gr.retry_ms);
                    END IF;
                END IF;
                IF v_grooms[v_k] <= 0 THEN
                    v_gheld := coalesce(v_gheld, v_gfull);
                    v_gretry := least(v_gretry, v_gretries[v_k]);
                    CONTINUE;
                END IF;
                v_grooms[v_k] := v_grooms[v_k] - 1;
            END IF;
            v_ids := v_ids || r.id;
            v_room := v_room - 1;
        END LOOP;
        IF v_n = -1 THEN
            v_gheld := NULL; -- the queue's limit is the one that held back
        ELSE
            v_cut := NULL;   -- every due id fitted the queue's limits
        END IF;
    ELSE
        -- The walk: priority levels highest first; within a level, the groups in turn
        -- from the cursor, one task each (round one), then again among those that had
        -- one, sharing the room left (further rounds); the ungrouped tasks take their
        -- turns as one more group, which closes each round. A queue without grouped tasks
        -- has only that turn: the claim of claim_tasks.sql under the queue's limits.
        -- Each round is one statement over the groups (a loose index scan of tasks_fair_*,
        -- read lazily: it stops once the room is filled), not one per group.
        v_cursor := v_start;
        IF v_limited THEN
            v_gc := s.group_concurrency;
            v_grl := s.group_rate_limit;
            v_grper := make_interval(secs => s.group_rate_per_seconds);
        END IF;
        IF NOT v_grouped THEN
            -- The claim of claim_tasks.sql (without its hint), for what the limits let in.
            SELECT array_agg(d.id) INTO v_got FROM (
                WITH RECURSIVE levels(priority) AS (
                    SELECT 32767::smallint
                  UNION ALL
                    SELECT (SELECT t.priority FROM rota.tasks t
                            WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority < levels.priority
                            ORDER BY t.priority DESC LIMIT 1)
                    FROM levels WHERE levels.priority IS NOT NULL
                )
                SELECT l.id FROM levels
                CROSS JOIN LATERAL (
                    SELECT t.id FROM rota.tasks t
                    WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority = levels.priority
                      AND t.scheduled_for <= now() AND t.attempt_count < t.max_attempts
                    ORDER BY t.scheduled_for, t.id
                    LIMIT v_room
                    FOR UPDATE SKIP LOCKED) l
                LIMIT v_room) d;
            v_ids := coalesce(v_got, '{}');
            v_room := v_room - cardinality(v_ids);
        END IF;
        v_level := 32767;
        <<levels>>
        WHILE v_grouped AND v_room > 0 LOOP
            SELECT t.priority INTO v_level FROM rota.tasks t
            WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority < v_level
            ORDER BY t.priority DESC LIMIT 1;
            EXIT levels WHEN NOT FOUND;
            v_live := '{}';
            v_live_null := false;
            -- Round one. Phase 1: the groups after the cursor; 2: the ungrouped turn;
            -- 3: the groups up to the cursor (when the round began past the first).
            FOR v_phase IN 1..3 LOOP
                EXIT WHEN v_room = 0;
                IF v_phase = 2 THEN
                    v_got := rota.claim_ungrouped(p_queue, {{status}}, v_level,
                        CASE WHEN v_grouped THEN 1 ELSE v_room END, v_grouped, v_ids);
                    IF v_got IS NOT NULL THEN
                        v_ids := v_ids || v_got;
                        v_room := v_room - cardinality(v_got);
                        v_live_null := v_grouped;
                        v_cursor := NULL;
                        v_moved := true;
                    END IF;
                    CONTINUE;
                END IF;
                CONTINUE WHEN NOT v_grouped OR (v_phase = 3 AND v_start IS NULL);
                v_from := CASE WHEN v_phase = 1 THEN v_start END;
                v_to := CASE WHEN v_phase = 3 THEN v_start END;
                -- The round in one statement: a walk (WITH RECURSIVE) that carries how many
                -- tasks it took, one step per group, and stops once the room is filled.
                -- Each step is 0038's: the first entry of tasks_fair_* past the previous
                -- group, that is the next group's key and its oldest task; the group's room
                -- (rota.claim_group_room3); that task locked by its ctid (its conditions
                -- checked again on the version the lock finds) or, when it could not be
                -- taken but the group may have another due one, the group's oldest due
                -- task; with v_glock, only once the group's advisory lock is held (tried,
                -- never waited for; a group another claim holds is skipped like a locked
                -- task). A group past v_to is never locked, and ends the walk. (0038 ran
                -- the same walk as a cursor this function fetched from one row at a time.)
                WITH RECURSIVE walk(d, g, n, id, held, retry_ms) AS (
                    SELECT 0, coalesce(v_from, ''), 0, NULL::uuid, NULL::text, NULL::double precision
                  UNION ALL
                    SELECT walk.d + 1, s.group_key, walk.n + (coalesce(f.id, x.id) IS NOT NULL)::integer,
                           coalesce(f.id, x.id), room.held, room.retry_ms
                    FROM walk
                    CROSS JOIN LATERAL (
                        SELECT t.group_key, t.ctid, t.id, t.scheduled_for <= now() AS timely,
                               t.scheduled_for <= now() AND t.attempt_count < t.max_attempts AS due
                        FROM rota.tasks t
                        WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority = v_level
                          AND t.group_key > walk.g
                        ORDER BY t.group_key, t.scheduled_for, t.id LIMIT 1) s
                    CROSS JOIN LATERAL rota.claim_group_room3(p_queue, s.group_key, v_gc, v_grl, v_grper,
                        p_limit, v_tg, v_now) room
                    LEFT JOIN LATERAL (
                        SELECT t.id FROM rota.tasks t
                        WHERE t.ctid = s.ctid AND t.id = s.id
                          AND t.status = {{status}} AND t.queue = p_queue AND t.priority = v_level
                          AND t.group_key = s.group_key
                          AND t.scheduled_for <= now() AND t.attempt_count < t.max_attempts
                        LIMIT CASE WHEN s.due AND room.n > 0 AND (v_to IS NULL OR s.group_key <= v_to)
                                        AND (NOT v_glock OR pg_try_advisory_xact_lock(
                                            hashtextextended(p_queue || chr(31) || s.group_key, 0)))
                                   THEN 1 ELSE 0 END
                        FOR UPDATE SKIP LOCKED) f ON true
                    LEFT JOIN LATERAL (
                        SELECT t.id FROM rota.tasks t
                        WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority = v_level
                          AND t.group_key = s.group_key
                          AND t.scheduled_for <= now() AND t.attempt_count < t.max_attempts
                        ORDER BY t.scheduled_for, t.id
                        LIMIT CASE WHEN f.id IS NULL AND s.timely AND room.n > 0
                                        AND (v_to IS NULL OR s.group_key <= v_to)
                                        AND (NOT v_glock OR pg_try_advisory_xact_lock(
                                            hashtextextended(p_queue || chr(31) || s.group_key, 0)))
                                   THEN 1 ELSE 0 END
                        FOR UPDATE SKIP LOCKED) x ON true
                    WHERE walk.n < v_room AND (v_to IS NULL OR walk.g < v_to)
                )
                SELECT array_agg(w.id ORDER BY w.d) FILTER (WHERE w.id IS NOT NULL),
                       array_agg(w.g ORDER BY w.d) FILTER (WHERE w.id IS NOT NULL),
                       -- a group with no room held the claim back: group_concurrency first
                       CASE WHEN bool_or(w.held = 'group_concurrency') FILTER (WHERE w.id IS NULL)
                            THEN 'group_concurrency' ELSE max(w.held) FILTER (WHERE w.id IS NULL) END,
                       min(w.retry_ms) FILTER (WHERE w.id IS NULL AND w.held IS NOT NULL)
                INTO v_got, v_gotg, v_rheld, v_rretry
                FROM walk w
                WHERE w.d > 0 AND (v_to IS NULL OR w.g <= v_to);
                IF v_got IS NOT NULL THEN
                    v_ids := v_ids || v_got;
                    v_gids := v_gids || v_got;
                    v_tg := v_tg || v_gotg;
                    v_room := v_room - cardinality(v_got);
                    v_live := v_live || v_gotg;
                    v_cursor := v_gotg[cardinality(v_gotg)];
                    v_moved := true;
                END IF;
                IF v_rheld IS NOT NULL THEN
                    v_gheld := CASE WHEN 'group_concurrency' IN (v_gheld, v_rheld) THEN 'group_concurrency'
                                    ELSE v_rheld END;
                    v_gretry := least(v_gretry, v_rretry);
                END IF;
            END LOOP;
            -- Further rounds: the groups that took a task share the room left, each
            -- taking its share in one statement, until the room or the groups run out.
            WHILE v_room > 0 AND (cardinality(v_live) > 0 OR v_live_null) LOOP
                v_k := ceil(v_room::numeric / (cardinality(v_live) + v_live_null::integer));
                v_next := '{}';
                v_prev := NULL;
                v_c := 0;
                IF cardinality(v_live) > 0 THEN
                    FOR r IN
                        SELECT l.g, room.n AS room, room.held, room.retry_ms, x.id,
                               -- A group out of room: held back if it has more due.
                               room.n <= 0 AND EXISTS (SELECT 1 FROM rota.tasks t
                                   WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority = v_level
                                     AND t.group_key = l.g AND t.scheduled_for <= now()
                                     AND t.attempt_count < t.max_attempts AND t.id <> ALL (v_ids)) AS more
                        FROM unnest(v_live) AS l (g)
                        CROSS JOIN LATERAL rota.claim_group_room3(p_queue, l.g, v_gc, v_grl, v_grper, p_limit, v_tg, v_now) room
                        LEFT JOIN LATERAL (
                            SELECT t.id FROM rota.tasks t
                            WHERE t.status = {{status}} AND t.queue = p_queue AND t.priority = v_level
                              AND t.group_key = l.g
                              AND t.scheduled_for <= now() AND t.attempt_count < t.max_attempts
                              AND t.id <> ALL (v_ids) -- those this claim locked already
                            ORDER BY t.scheduled_for, t.id
                            LIMIT greatest(0, least(v_k, room.n))
                            FOR UPDATE SKIP LOCKED) x ON true
                    LOOP
                        IF r.g IS DISTINCT FROM v_prev THEN
                            IF v_c = v_k THEN
                                v_next := v_next || v_prev;
                            END IF;
                            v_prev := r.g;
                            v_c := 0;
                        END IF;
                        IF r.id IS NOT NULL AND v_room > 0 THEN
                            v_ids := v_ids || r.id;
                            v_gids := v_gids || r.id;
                            v_tg := v_tg || r.g;
                            v_room := v_room - 1;
                            v_c := v_c + 1;
                        ELSIF r.more THEN
                            v_gheld := CASE WHEN v_gheld = 'group_concurrency' THEN v_gheld ELSE r.held END;
                            v_gretry := least(v_gretry, r.retry_ms);
                        END IF;
                    END LOOP;
                    IF v_c = v_k THEN
                        v_next := v_next || v_prev;
                    END IF;
                END IF;
                IF v_live_null AND v_room > 0 THEN
                    v_got := rota.claim_ungrouped(p_queue, {{status}}, v_level, least(v_k, v_room), true, v_ids);
                    v_live_null := v_got IS NOT NULL AND cardinality(v_got) = least(v_k, v_room);
                    IF v_got IS NOT NULL THEN
                        v_ids := v_ids || v_got;
                        v_room := v_room - cardinality(v_got);
                    END IF;
                END IF;
                v_live := v_next;
            END LOOP;
        END LOOP levels;
        IF v_glock AND cardinality(v_gids) > 0 THEN
            -- Every taken group's lock is held: count its running tasks again, in a
            -- statement whose snapshot sees every claim of the group committed before
            -- the lock was granted (a round's count predates it), and give back what is
            -- beyond the limit, the group's last taken first. The tasks stay locked
            -- until the claim commits, unchanged.
            SELECT array_agg(d.id) INTO v_drop
            FROM (SELECT u.g, array_agg(u.id ORDER BY u.o DESC) AS ids, count(*)::integer AS n
                  FROM unnest(v_gids, v_tg) WITH ORDINALITY AS u (id, g, o)
                  GROUP BY u.g) k
            CROSS JOIN LATERAL (SELECT count(*)::integer AS n FROM (
                    SELECT 1 FROM rota.tasks t
                    WHERE t.status = 'PROCESSING' AND t.queue = p_queue AND t.group_key = k.g
                    ORDER BY t.queue, t.group_key -- tasks_running's order: never a scan
                    LIMIT v_gc) x) running
            CROSS JOIN LATERAL unnest(k.ids[1:k.n + running.n - v_gc]) AS d (id);
            IF v_drop IS NOT NULL THEN
                v_ids := ARRAY(SELECT u.id FROM unnest(v_ids) AS u (id) WHERE u.id <> ALL (v_drop));
                v_gheld := 'group_concurrency';
            END IF;
        END IF;
        IF v_grouped AND v_moved AND v_cursor IS DISTINCT FROM v_start THEN
            -- Move the turn on, unless another claim holds the cursor (never waited for).
            IF v_has_cursor THEN
                UPDATE rota.queue_cursors c SET group_key = v_cursor
                WHERE c.ctid = (SELECT x.ctid FROM rota.queue_cursors x WHERE x.queue = p_queue
                                FOR UPDATE SKIP LOCKED);
            ELSE
                INSERT INTO rota.queue_cursors (queue, group_key) VALUES (p_queue, v_cursor)
                ON CONFLICT DO NOTHING;
            END IF;
        END IF;
        IF v_room > 0 THEN
            v_cut := NULL; -- the queue's limits left room: they held nothing back
        END IF;
    END IF;

    RETURN QUERY
    WITH claimed AS (
        UPDATE rota.tasks t
        SET status = 'PROCESSING',
            worker_id = p_worker,
            lease_token = gen_random_uuid(),
            lease_expires_at = v_now + p_lease,
            attempt_count = t.attempt_count + 1,
            processing_started_at = v_now,
            enqueued_at = CASE WHEN {{status}} = 'ENQUEUED' THEN coalesce(t.enqueued_at, now())
                               ELSE t.enqueued_at END,
            updated_at = v_now
        WHERE t.id = ANY (v_ids)
        RETURNING t.*
    ), logged AS (
        INSERT INTO rota.queue_claims (queue, group_key, claimed_at)
        SELECT p_queue, c.group_key, c.processing_started_at FROM claimed c WHERE v_rates
    )
    SELECT NULL::text, NULL::double precision, NULL::boolean,
           c.id, c.queue, c.kind, c.payload, c.status, c.priority, c.scheduled_for,
           c.attempt_count, c.max_attempts, c.idempotency_key, c.timeout_seconds,
           c.worker_id, c.lease_token, c.lease_expires_at, c.cancel_requested_at,
           c.enqueued_at, c.processing_started_at, c.completed_at, c.last_error,
           c.created_at, c.updated_at, c.output, c.group_key, c.trace_context,
           c.flow_id, c.flow_step, c.flow_index, c.flow_item, -- flowScan; the inputs are the step's,
           -- on the claim's first task of each step only, as claim_tasks.sql answers them
           -- (the store gives the others the same inputs: shareStepInputs; migration 0052)
           CASE WHEN c.flow_id IS NOT NULL
                     AND row_number() OVER (PARTITION BY c.flow_id, c.flow_step ORDER BY c.id) = 1
                THEN (SELECT fs.inputs FROM rota.flow_steps fs WHERE fs.flow_id = c.flow_id AND fs.name = c.flow_step)
           END
    FROM claimed c
    ORDER BY c.priority DESC, c.scheduled_for, c.id;

    IF s.paused IS NOT TRUE AND s.concurrency IS NULL AND s.rate_limit IS NULL
       AND s.group_concurrency IS NULL AND s.group_rate_limit IS NULL AND NOT v_grouped THEN
        -- Not flow controlled: the plain statement found nothing because there was
        -- nothing due when it ran (a task may have come in since; this claim took it).
        plain := true;
        RETURN NEXT;
    ELSIF cardinality(v_ids) < p_limit AND (v_cut IS NOT NULL OR v_gheld IS NOT NULL) THEN
        held := coalesce(v_cut, v_gheld);
        retry_ms := CASE WHEN v_cut IS NOT NULL THEN v_cut_retry
                         WHEN v_gheld = 'group_rate' THEN v_gretry END;
        RETURN NEXT;
    END IF;
END
$$
$fn$, '{{status}}', quote_literal(v_status)), '{{name}}', lower(v_status));
END LOOP;
END
$create$;
