-- CountReplayable: the DEAD and FAILED tasks a bulk replay with these filters would move,
-- counted up to $4 (the inner LIMIT stops the index scan there).
-- $1 queue, $2 kind, $3 reason ('' = DEAD and FAILED), $4 at most.
SELECT count(*)
FROM (
    SELECT 1
    FROM rota.tasks t
    WHERE t.status IN ('DEAD', 'FAILED')
      AND ($1::text = '' OR t.queue = $1)
      AND ($2::text = '' OR t.kind = $2)
      AND ($3::text = '' OR t.status = $3)
    LIMIT $4
) AS capped
