-- CreateFlow, 2 of 3: the steps, one array element each, in create order (position).
-- $3 holds each step's depends_on as a JSON array (arrays of arrays of different lengths
-- cannot be SQL arrays). Then flow_start (3 of 3) starts the steps without dependencies.
-- Each step also gets its dependents (the steps whose depends_on name it, in create
-- order) and locks_flow: false for a single-task step each of whose dependents (one at
-- least) waits for it alone and is single-task; its success then moves its flow without
-- locking the flow's row (migration 0025). ends_flow marks the flow's only step that
-- nothing depends on, when it has one: every other step is then its ancestor, so its
-- success ends the flow without a look at the others (migration 0051).
WITH s AS (
    SELECT s.name, s.deps, s.kind, s.queue, s.payload, nullif(s.for_each, '') AS for_each,
           s.max_attempts, s.priority, s.timeout_seconds, nullif(s.group_key, '') AS group_key, s.ord
    FROM unnest($2::text[], $3::jsonb[], $4::text[], $5::text[], $6::jsonb[], $7::text[],
                $8::integer[], $9::smallint[], $10::integer[], $11::text[])
        WITH ORDINALITY AS s (name, deps, kind, queue, payload, for_each, max_attempts, priority,
                              timeout_seconds, group_key, ord)
), waiting AS (
    SELECT e.dep AS name, array_agg(w.name ORDER BY w.ord) AS dependents,
           bool_and(jsonb_array_length(w.deps) = 1 AND w.for_each IS NULL) AS lone
    FROM s w, jsonb_array_elements_text(w.deps) AS e (dep)
    GROUP BY e.dep
), sinks AS (
    SELECT count(*) AS n FROM s WHERE NOT EXISTS (SELECT FROM waiting w WHERE w.name = s.name)
)
INSERT INTO rota.flow_steps (flow_id, name, position, kind, queue, payload, depends_on,
                             for_each, max_attempts, priority, timeout_seconds, group_key, deps_left,
                             dependents, locks_flow, ends_flow)
SELECT $1, s.name, (s.ord - 1)::integer, s.kind, s.queue, s.payload,
       ARRAY(SELECT jsonb_array_elements_text(s.deps)), s.for_each,
       s.max_attempts, s.priority, s.timeout_seconds, s.group_key, jsonb_array_length(s.deps),
       coalesce(w.dependents, '{}'),
       NOT (s.for_each IS NULL AND coalesce(w.lone, false)),
       w.name IS NULL AND (SELECT n FROM sinks) = 1
FROM s LEFT JOIN waiting w ON w.name = s.name
ORDER BY s.ord
