-- ServeQueues: enqueuer $1 serves queues $2 until now() + $3 seconds; $3 = 0 withdraws
-- its rows. Rows of enqueuers gone for an hour are dropped on the way, so the table
-- holds about one row per live enqueuer and queue.
WITH dropped AS (
    DELETE FROM rota.sqs_enqueuers
    WHERE served_until < now() - interval '1 hour'
       OR ($3::float8 = 0 AND enqueuer_id = $1 AND queue = ANY ($2::text[]))
)
INSERT INTO rota.sqs_enqueuers (queue, enqueuer_id, served_until)
SELECT q, $1, now() + make_interval(secs => $3::float8)
FROM unnest($2::text[]) AS q
WHERE $3::float8 > 0
ON CONFLICT (queue, enqueuer_id) DO UPDATE SET served_until = excluded.served_until
