-- ClaimTasks restricted to the ids $5 (the SQS worker claims the id a message named):
-- the same writes as claim_tasks.sql. $1 queue, $2 limit, $3 worker id, $4 lease
-- duration, $6 the status to claim from. From ENQUEUED, a due PENDING task is claimed
-- too: it came back to PENDING (a retry, a reaped lease, a queue no enqueuer served)
-- after this message was sent, and the message still delivers it (migration 0009).
--
-- Each id is looked up (primary key) and locked on its own in a LATERAL subquery, in id
-- order (as record_outcomes.sql locks, so the two cannot deadlock), and the claim
-- conditions are checked on the locked, latest version of the row. The lock
-- waits rather than skips: a row locked here is one another transaction is changing
-- right now, typically the enqueuer that sent this very id and has not yet committed
-- ENQUEUED. Waiting lets the claim see that commit instead of reporting "nothing to
-- claim" for a task that is about to be claimable. Every locker holds such a row for one
-- short statement or transaction, never across a handler run.
--
-- Flow control (migration 0022): for a queue whose settings hold claims back (pause,
-- limits) nothing is locked or claimed here (one probe of its settings row), and
-- ClaimTasks calls rota.claim_limited instead. Fairness does not apply to a claim by id.
WITH due AS (
    SELECT t.id
    FROM (SELECT DISTINCT id FROM unnest($5::uuid[]) AS u (id)
          WHERE NOT EXISTS (SELECT FROM rota.queues q
                            WHERE q.name = $1
                              AND (q.paused OR q.concurrency IS NOT NULL OR q.rate_limit IS NOT NULL
                                   OR q.group_concurrency IS NOT NULL OR q.group_rate_limit IS NOT NULL))
          ORDER BY id) AS want
    CROSS JOIN LATERAL (
        SELECT id, status, queue, priority, scheduled_for, attempt_count, max_attempts
        FROM rota.tasks
        WHERE id = want.id
        -- The LIMIT changes no result (ids are unique). It keeps the planner from pushing
        -- the conditions below into this subquery, under the lock: there they would be
        -- checked on the version this statement's snapshot sees (still PENDING while the
        -- enqueuer has not committed), and the row would be skipped instead of waited for.
        LIMIT 1
        FOR UPDATE
    ) AS t
    WHERE (t.status = $6::text OR ($6::text = 'ENQUEUED' AND t.status = 'PENDING'))
      AND t.queue = $1
      AND t.scheduled_for <= now()
      AND t.attempt_count < t.max_attempts
    ORDER BY t.priority DESC, t.scheduled_for, t.id
    LIMIT $2
), claimed AS (
    UPDATE rota.tasks t
    SET status = 'PROCESSING',
        worker_id = $3,
        lease_token = gen_random_uuid(),
        lease_expires_at = now() + $4::interval,
        attempt_count = t.attempt_count + 1,
        processing_started_at = now(),
        -- From ENQUEUED it is normally set already (by the send of the message being
        -- claimed). A claim from an older message, of a task back in PENDING and not yet
        -- sent again, sets it: a task claimed through SQS is an SQS-mode task, whose dead
        -- letter is published to the DLQ (migration 0008).
        enqueued_at = CASE WHEN $6::text = 'ENQUEUED' THEN coalesce(t.enqueued_at, now())
                           ELSE t.enqueued_at END,
        updated_at = now()
    FROM due
    -- By id, not by ctid as claim_tasks.sql does: after a wait, the locked version was
    -- committed after this statement's snapshot, so a TID scan would not see it. Found
    -- by id, the snapshot's version leads the update to the latest one (the one locked
    -- above, which nothing else can change now).
    WHERE t.id = due.id
    RETURNING t.id, t.queue, t.kind, t.payload, t.status, t.priority, t.scheduled_for,
              t.attempt_count, t.max_attempts, t.idempotency_key, t.timeout_seconds,
              t.worker_id, t.lease_token, t.lease_expires_at, t.cancel_requested_at,
              t.enqueued_at, t.processing_started_at, t.completed_at, t.last_error,
              t.created_at, t.updated_at, t.output, t.group_key, t.trace_context,
              -- flowScan: the flow step the task runs (migration 0019); its inputs below
              t.flow_id, t.flow_step, t.flow_index, t.flow_item
)
SELECT c.id, c.queue, c.kind, c.payload, c.status, c.priority, c.scheduled_for,
       c.attempt_count, c.max_attempts, c.idempotency_key, c.timeout_seconds,
       c.worker_id, c.lease_token, c.lease_expires_at, c.cancel_requested_at,
       c.enqueued_at, c.processing_started_at, c.completed_at, c.last_error,
       c.created_at, c.updated_at, c.output, c.group_key, c.trace_context,
       c.flow_id, c.flow_step, c.flow_index, c.flow_item,
       -- A step task's inputs are its step's, kept once on the step's row and read through
       -- its primary key; in the answer only on the claim's first task of each step (the
       -- store gives the others the same inputs: collectClaimedTasks), so a claim of 100
       -- elements of a fan-out carries the array it fans out over once, not 100 times. A
       -- plain task (flow_id NULL) reads nothing.
       CASE WHEN c.flow_id IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM claimed o
                                 WHERE o.flow_id = c.flow_id AND o.flow_step = c.flow_step AND o.id < c.id)
            THEN (SELECT s.inputs FROM rota.flow_steps s WHERE s.flow_id = c.flow_id AND s.name = c.flow_step)
       END AS flow_inputs
FROM claimed c
ORDER BY c.priority DESC, c.scheduled_for, c.id
