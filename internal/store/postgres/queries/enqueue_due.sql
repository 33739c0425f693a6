-- EnqueueDue, step 1: locks up to $2 tasks of queue $1 that need an SQS message and
-- returns their ids, highest priority first, then oldest scheduled_for, then id. $3 is the
-- redelivery timeout. The caller sends the ids while holding the locks, then marks the
-- sent ones with enqueue_mark.sql in the same transaction.
--
-- Two kinds of task need a message, each read through a partial index that holds only
-- candidates, so a round never walks the ENQUEUED tasks whose message is in SQS now:
--   pending: due PENDING tasks (tasks_claim_pending, the poll-mode claim's index): new
--            tasks, and retries, reaped and released tasks, which go back to PENDING
--            without their message (migration 0009);
--   lost:    ENQUEUED tasks sent more than $3 ago, oldest send first (tasks_enqueue_sent).
--
-- pending steps through priority levels and stops at the first task not yet due, as
-- claim_tasks.sql does and for its reasons: retries in backoff and delayed tasks wait in
-- that index too. FOR UPDATE is not allowed inside a UNION, so each kind is
-- its own CTE with the claim's proven shape (ordered index scans, LockRows, LIMIT): it
-- locks rows only as it returns them and steps over rows other enqueuers hold (SKIP
-- LOCKED). The price: when more
-- than $2 tasks need a message, up to $2 locked rows of the other kinds are not returned;
-- they are released at commit and stay eligible.
--
-- Flow control (DESIGN.md section 11, LIMITS.md rule 9): pending sends no more than the
-- queue's settings let run now (budget): nothing while it is paused; with a concurrency
-- limit, the limit less the queue's PROCESSING and sent-but-unclaimed (ENQUEUED) tasks;
-- with a rate, the claims the window admits now less the sent-but-unclaimed tasks. Each
-- count reads at most the limit's entries of an index (tasks_running, tasks_enqueue_sent,
-- queue_claims_queue). Without a settings row the budget is $2 (one probe of its primary
-- key). No lock: the claim enforces the limits; this only keeps SQS from holding
-- messages workers would have to hide again. Lost messages are sent again regardless:
-- their tasks are counted as sent already.
WITH RECURSIVE budget(n) AS (
    SELECT CASE
        WHEN q.paused THEN 0
        -- CASE, not NULL arithmetic: a limit not set must not run its counts (a strict
        -- operator evaluates its arguments before it sees the NULL).
        ELSE least($2,
            CASE WHEN q.concurrency IS NOT NULL THEN q.concurrency
              - (SELECT count(*) FROM (SELECT 1 FROM rota.tasks t
                                       WHERE t.status = 'PROCESSING' AND t.queue = $1
                                       ORDER BY t.queue, t.group_key LIMIT q.concurrency) r)
              - (SELECT count(*) FROM (SELECT 1 FROM rota.tasks t
                                       WHERE t.status = 'ENQUEUED' AND t.queue = $1 AND t.enqueued_at IS NOT NULL
                                       ORDER BY t.queue, t.enqueued_at LIMIT q.concurrency) e) END,
            CASE WHEN q.rate_limit IS NOT NULL THEN q.rate_limit
              - (SELECT count(*) FROM (SELECT 1 FROM rota.queue_claims c
                                       WHERE c.queue = $1
                                         AND c.claimed_at > clock_timestamp() - make_interval(secs => q.rate_per_seconds)
                                       ORDER BY c.claimed_at DESC LIMIT q.rate_limit) w)
              - (SELECT count(*) FROM (SELECT 1 FROM rota.tasks t
                                       WHERE t.status = 'ENQUEUED' AND t.queue = $1 AND t.enqueued_at IS NOT NULL
                                       ORDER BY t.queue, t.enqueued_at LIMIT q.rate_limit) e) END)
        END
    FROM (SELECT) AS one
    LEFT JOIN rota.queues q ON q.name = $1
), pending_levels(priority) AS (
    SELECT 32767::smallint -- above every priority: where the walk starts (claim_tasks.sql)
  UNION ALL
    SELECT (SELECT t.priority FROM rota.tasks t
            WHERE t.status = 'PENDING' AND t.queue = $1 AND t.priority < l.priority
            ORDER BY t.priority DESC LIMIT 1)
    FROM pending_levels l
    WHERE l.priority IS NOT NULL
), pending AS (
    SELECT level.*
    FROM pending_levels l
    CROSS JOIN LATERAL (
        SELECT id, priority, scheduled_for
        FROM rota.tasks
        WHERE status = 'PENDING'
          AND queue = $1
          AND priority = l.priority
          AND scheduled_for <= now()
          AND attempt_count < max_attempts
        ORDER BY scheduled_for, id
        LIMIT $2
        FOR UPDATE SKIP LOCKED
    ) level
    LIMIT greatest(0, coalesce((SELECT n FROM budget), $2))
), lost AS (
    SELECT id, priority, scheduled_for
    FROM rota.tasks
    WHERE status = 'ENQUEUED'
      AND queue = $1
      AND enqueued_at < now() - $3::interval
      AND scheduled_for <= now()
      AND attempt_count < max_attempts
    ORDER BY enqueued_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
SELECT id
FROM (
    SELECT * FROM pending
    UNION ALL
    SELECT * FROM lost
) AS due
ORDER BY priority DESC, scheduled_for, id
LIMIT $2
