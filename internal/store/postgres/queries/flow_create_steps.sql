-- CreateFlow, 2 of 3: the steps, one array element each, in create order (position).
-- $3 holds each step's depends_on as a JSON array (arrays of arrays of different lengths
-- cannot be SQL arrays). Then flow_start (3 of 3) starts the steps without dependencies.
INSERT INTO rota.flow_steps (flow_id, name, position, kind, queue, payload, depends_on,
                             for_each, max_attempts, priority, timeout_seconds, group_key, deps_left)
SELECT $1, s.name, (s.ord - 1)::integer, s.kind, s.queue, s.payload,
       ARRAY(SELECT jsonb_array_elements_text(s.deps)), nullif(s.for_each, ''),
       s.max_attempts, s.priority, s.timeout_seconds, nullif(s.group_key, ''), jsonb_array_length(s.deps)
FROM unnest($2::text[], $3::jsonb[], $4::text[], $5::text[], $6::jsonb[], $7::text[],
            $8::integer[], $9::smallint[], $10::integer[], $11::text[])
    WITH ORDINALITY AS s (name, deps, kind, queue, payload, for_each, max_attempts, priority,
                          timeout_seconds, group_key, ord)
