-- CountSent: per queue of $1, the ENQUEUED tasks sent more than $2 ago, at most $3 each.
-- Each count is a bounded range scan of tasks_enqueue_sent (queue, enqueued_at), which
-- holds only ENQUEUED tasks that were sent.
SELECT q.queue,
       (SELECT count(*)
        FROM (SELECT 1
              FROM rota.tasks t
              WHERE t.status = 'ENQUEUED'
                AND t.enqueued_at IS NOT NULL
                AND t.queue = q.queue
                AND t.enqueued_at < now() - $2::interval
              LIMIT $3) AS sent)
FROM unnest($1::text[]) AS q(queue)
