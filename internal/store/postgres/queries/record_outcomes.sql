-- RecordOutcomes: writes a batch of finished attempts in one statement, each fenced by
-- its lease token, and writes each attempt's rota.task_attempts row (the first and only
-- time: a running attempt lives on the task row, migration 0007).
--
-- $1..$6 hold one element per outcome (the caller removes repeated (id, token) pairs):
-- task id, lease token, kind ('succeed', 'retry', 'release', 'fail', 'cancel'), error ('' = none,
-- already truncated), retry_in_us (microseconds after now() at which a retry is due:
-- the database's clock decides, never the worker's), output (jsonb, NULL = none; the
-- caller checked its size, store.CheckOutput; only a 'succeed' writes it).
-- Returns (ord, status) for every outcome that matched; ord is the 1-based input position.
--
-- The fence is the lease token alone: only a PROCESSING task has one (CHECK
-- tasks_lease_iff_processing).
--
-- One UPDATE both decides and writes, with no separate locking read first: when the row
-- is being changed by another transaction (a heartbeat extending this very lease, a
-- cancel request), the UPDATE waits for it and, in READ COMMITTED, evaluates its WHERE
-- and its SET on the version that transaction committed (EvalPlanQual). So a lease taken
-- over meanwhile no longer matches and writes nothing, a cancel request that landed
-- meanwhile turns a retry into CANCELED, and an extended lease is still this lease. The
-- task is found by id, never by ctid: a TID lookup would see only the version of this
-- statement's snapshot.
WITH input AS (
    -- Sorted by task id: the tasks are updated (locked) in this order, the same in every
    -- call (and in claim_tasks_by_id.sql), so two batches naming the same tasks in
    -- different orders (a committer retrying while its first attempt still runs) cannot
    -- deadlock. The LIMIT changes no result. It changes the planner's guess for a cached
    -- generic plan, from 10 rows (an unnest of a parameter) to 1, which keeps the join
    -- below a nested loop of primary-key lookups even while the table looks tiny.
    SELECT *,
           -- retrying: the attempt ended without a result and may run again, unless the
           -- task says otherwise (checked below on the task's latest version).
           kind IN ('retry', 'release') AS retry,
           -- released: the worker gave the attempt up (shutdown); it does not count, so
           -- max_attempts grows by one and a last attempt is not DEAD.
           kind = 'release' AS release
    FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::bigint[], $6::jsonb[])
        WITH ORDINALITY AS u (task_id, lease_token, kind, error, retry_in_us, output, ord)
    ORDER BY task_id
    LIMIT cardinality($1::uuid[])
), updated AS (
    UPDATE rota.tasks t
    SET status = CASE
                     WHEN i.kind = 'succeed' THEN 'SUCCEEDED'
                     WHEN i.kind = 'cancel' OR t.cancel_requested_at IS NOT NULL THEN 'CANCELED'
                     WHEN i.kind = 'fail' THEN 'FAILED'
                     WHEN t.attempt_count >= t.max_attempts AND NOT i.release THEN 'DEAD'
                     -- Waiting to run again is PENDING in every mode (migration 0009): a
                     -- poll worker claims it, or the enqueuer of its queue sends it.
                     ELSE 'PENDING'
                 END,
        -- The four columns below follow the status above: "runs again" is exactly the
        -- ELSE branch (a retry or release, no cancel request, attempts left or released).
        scheduled_for = CASE WHEN i.retry AND t.cancel_requested_at IS NULL AND (t.attempt_count < t.max_attempts OR i.release)
                             THEN now() + i.retry_in_us * interval '1 microsecond'
                             ELSE t.scheduled_for END,
        completed_at = CASE WHEN i.retry AND t.cancel_requested_at IS NULL AND (t.attempt_count < t.max_attempts OR i.release)
                            THEN NULL
                            ELSE now() END,
        -- A task that runs again has no message (an SQS worker deletes the old one after
        -- this commit); the enqueuer of its queue sends a new one once it is due.
        enqueued_at = CASE WHEN i.retry AND t.cancel_requested_at IS NULL AND (t.attempt_count < t.max_attempts OR i.release)
                           THEN NULL
                           ELSE t.enqueued_at END,
        max_attempts = CASE WHEN i.release AND t.cancel_requested_at IS NULL
                            THEN t.max_attempts + 1
                            ELSE t.max_attempts END,
        last_error = coalesce(nullif(i.error, ''), t.last_error),
        -- A task has an output only once it SUCCEEDED (DESIGN.md section 10, "Results").
        output = CASE WHEN i.kind = 'succeed' THEN i.output END,
        lease_token = NULL,
        lease_expires_at = NULL,
        updated_at = now()
    FROM input i
    WHERE t.id = i.task_id
      AND t.lease_token = i.lease_token
    -- worker_id, attempt_count and processing_started_at are the attempt's own: the
    -- update leaves them as the claim set them.
    RETURNING i.ord, t.status, t.id, t.attempt_count, t.worker_id, i.lease_token,
              t.processing_started_at, nullif(i.error, '') AS error
), attempts AS (
    INSERT INTO rota.task_attempts (task_id, attempt, worker_id, lease_token, started_at, finished_at, outcome, error)
    SELECT id, attempt_count, worker_id, lease_token, coalesce(processing_started_at, now()), now(),
           CASE WHEN status = 'PENDING' THEN 'RETRIED' ELSE status END,
           error
    FROM updated
)
SELECT ord, status
FROM updated
