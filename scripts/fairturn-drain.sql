-- An experiment, never a migration: see scripts/fairturn-setup.sql. Drains one queue
-- serially (claim 563, commit, record the outcomes, commit) and prints the time taken.
-- v=plain: rota.claim_tasks_pending; v=groups: rota.claim_limited_pending (the walk);
-- v=vt: a claim of 563 in turn order that tries each taken group's advisory lock and
-- counts its running tasks (group_concurrency 10), as the walk does, then updates the
-- tasks by id. Not in the copy: the recount after the group locks, the report row.
SELECT set_config('my.v', :'v', false);
\timing on
DO $$
DECLARE ids uuid[]; toks uuid[]; n int := 0; c int;
BEGIN
  LOOP
    IF current_setting('my.v') = 'groups' THEN
      SELECT array_agg(id), array_agg(lease_token) INTO ids, toks FROM rota.claim_limited_pending('groups', 563, 'w', '30 seconds', NULL) WHERE id IS NOT NULL;
    ELSIF current_setting('my.v') = 'vt' THEN
      WITH cand AS MATERIALIZED (
        SELECT t.id, t.group_key FROM rota.tasks t
        WHERE t.status = 'PENDING' AND t.queue = 'vtq' AND t.priority = 0 AND t.vt IS NOT NULL
          AND t.scheduled_for <= now() AND t.attempt_count < t.max_attempts
        ORDER BY t.vt, t.id LIMIT 563 FOR UPDATE SKIP LOCKED),
      rooms AS MATERIALIZED (
        SELECT g.group_key,
               CASE WHEN pg_try_advisory_xact_lock(hashtextextended('vtq' || chr(31) || g.group_key, 0)) THEN
                 10 - (SELECT count(*) FROM (SELECT 1 FROM rota.tasks r WHERE r.status = 'PROCESSING' AND r.queue = 'vtq' AND r.group_key = g.group_key ORDER BY r.queue, r.group_key LIMIT 10) x)
               ELSE 0 END AS room
        FROM (SELECT DISTINCT c.group_key FROM cand c) g),
      ok AS (
        SELECT c.id FROM (SELECT c.id, c.group_key, row_number() OVER (PARTITION BY c.group_key ORDER BY c.id) rn FROM cand c) c
        JOIN rooms r USING (group_key) WHERE c.rn <= r.room),
      upd AS (
        UPDATE rota.tasks t SET status = 'PROCESSING', worker_id = 'w', lease_token = gen_random_uuid(),
               lease_expires_at = now() + interval '30 seconds', attempt_count = t.attempt_count + 1,
               processing_started_at = now(), updated_at = now()
        WHERE t.id = ANY (ARRAY(SELECT id FROM ok)) RETURNING t.id, t.lease_token)
      SELECT array_agg(id), array_agg(lease_token) INTO ids, toks FROM upd;
    ELSE
      SELECT array_agg(id), array_agg(lease_token) INTO ids, toks FROM rota.claim_tasks_pending('plain', 563, 'w', '30 seconds', NULL, NULL, NULL);
    END IF;
    COMMIT;
    EXIT WHEN ids IS NULL;
    c := cardinality(ids);
    PERFORM rota.record_outcomes(ids, toks, array_fill('succeed'::text, ARRAY[c]), array_fill(''::text, ARRAY[c]), array_fill(0::bigint, ARRAY[c]), array_fill(NULL::jsonb, ARRAY[c]));
    COMMIT;
    n := n + c;
  END LOOP;
  RAISE NOTICE 'drained %', n;
END $$;
