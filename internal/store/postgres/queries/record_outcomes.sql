-- RecordOutcomes: writes a batch of finished attempts in one statement, each fenced by
-- its lease token, and closes the matching attempt rows.
--
-- $1..$6 hold one element per outcome (the caller removes repeated (id, token) pairs):
-- task id, lease token, kind ('succeed', 'retry', 'fail', 'cancel'), error ('' = none,
-- already truncated), retry_at (NULL = now), retry status ('PENDING' or 'ENQUEUED').
-- Returns (ord, status) for every outcome that matched; ord is the 1-based input position.
--
-- Plan shape, on purpose: each task is found by primary key and locked in a LATERAL
-- subquery, then updated by primary key; each attempt row is found through its unique
-- lease_token index and updated by ctid. Every step is an index or TID lookup per outcome,
-- so a plan made while the tables were small cannot turn into full scans as they grow.
--
-- The fence is the lease token alone: only a PROCESSING task has one (CHECK
-- tasks_lease_iff_processing).
WITH input AS (
    -- Sorted by task id: the tasks are locked in this order, the same in every call (and
    -- in claim_tasks_by_id.sql), so two batches naming the same tasks in different orders
    -- (a committer retrying while its first attempt still runs) cannot deadlock.
    -- The LIMIT changes no result. It changes the planner's guess for a cached generic
    -- plan, from 10 rows (an unnest of a parameter) to 1, which keeps the joins below
    -- nested loops of lookups even while the tables look tiny.
    SELECT *
    FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::timestamptz[], $6::text[])
        WITH ORDINALITY AS u (task_id, lease_token, kind, error, retry_at, retry_status, ord)
    ORDER BY task_id
    LIMIT cardinality($1::uuid[])
), target AS (
    -- Lock, then decide: a locking read returns the latest committed version of the row,
    -- and checks the token on it, so a cancel request that landed meanwhile is not missed,
    -- and a lease taken over meanwhile no longer matches. (The token is also matched on
    -- the version this statement's snapshot sees, before the lock; a current token was
    -- committed by the claim before the worker could send it, so that version has it too.)
    SELECT i.ord, i.task_id, i.lease_token, nullif(i.error, '') AS error,
           CASE
               WHEN i.kind = 'succeed' THEN 'SUCCEEDED'
               WHEN i.kind = 'cancel' OR t.cancel_requested_at IS NOT NULL THEN 'CANCELED'
               WHEN i.kind = 'fail' THEN 'FAILED'
               WHEN t.attempt_count >= t.max_attempts THEN 'DEAD'
               ELSE i.retry_status
           END AS status,
           coalesce(i.retry_at, now()) AS retry_at
    FROM input i
    CROSS JOIN LATERAL (
        SELECT cancel_requested_at, attempt_count, max_attempts
        FROM rota.tasks
        WHERE id = i.task_id
          AND lease_token = i.lease_token
        FOR UPDATE
    ) AS t
), updated AS (
    UPDATE rota.tasks t
    SET status = x.status,
        scheduled_for = CASE WHEN x.status IN ('PENDING', 'ENQUEUED') THEN x.retry_at
                             ELSE t.scheduled_for END,
        completed_at = CASE WHEN x.status IN ('PENDING', 'ENQUEUED') THEN NULL ELSE now() END,
        -- A retry in SQS mode needs a new message once due (the worker deletes the old
        -- one after this commit): NULL is what the enqueuer looks for (enqueue_due.sql).
        enqueued_at = CASE WHEN x.status = 'ENQUEUED' THEN NULL ELSE t.enqueued_at END,
        last_error = coalesce(x.error, t.last_error),
        lease_token = NULL,
        lease_expires_at = NULL,
        updated_at = now()
    FROM target x
    -- By id, not by the locked row's ctid: when the lock had to wait for another writer
    -- (a heartbeat extending this very lease), the locked version was committed after
    -- this statement's snapshot, and a TID lookup, which uses the snapshot, would not find
    -- it: the outcome would be dropped as a lost lease. Found by id, the snapshot's
    -- version leads the update to the latest one, the one locked above.
    WHERE t.id = x.task_id
    RETURNING x.ord, x.lease_token, x.error, t.status
), closed AS (
    UPDATE rota.task_attempts a
    SET finished_at = now(),
        outcome = CASE WHEN x.status IN ('PENDING', 'ENQUEUED') THEN 'RETRIED' ELSE x.status END,
        error = x.error
    FROM (
        SELECT u.status, u.error, att.row
        FROM updated u
        CROSS JOIN LATERAL (
            SELECT ctid AS row FROM rota.task_attempts WHERE lease_token = u.lease_token LIMIT 1
        ) AS att
    ) AS x
    -- By ctid, safely: an attempt row is written only here and by the reaper, each under
    -- its task's lock with the lease still current, so the version this statement's
    -- snapshot sees is the latest.
    WHERE a.ctid = x.row
)
SELECT ord, status
FROM updated
