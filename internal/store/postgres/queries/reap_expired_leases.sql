-- ReapExpiredLeases: takes up to $1 PROCESSING tasks whose lease expired (SKIP LOCKED, so
-- any number of reapers run side by side) and ends their attempt: CANCELED when a cancel
-- was requested, DEAD when no attempts remain, else back to PENDING (in every mode:
-- migration 0009) after a full-jitter exponential backoff: uniform in
-- [0, min($3, $2 * 2^(attempt-1))) seconds. Each reaped attempt's rota.task_attempts row is written, as LEASE_EXPIRED
-- (a running attempt lives on the task row until it ends: migration 0007). Returns how
-- many were reaped. Tasks the caller holds ($4) are left alone. Tasks are updated by primary key, as in record_outcomes.sql.
WITH expired AS (
    SELECT id, lease_token
    FROM rota.tasks
    WHERE status = 'PROCESSING'
      AND lease_expires_at < now()
      -- $4: tasks the caller holds (its outcome is on its way: ReapParams.HeldTaskIDs).
      AND id <> ALL ($4::uuid[])
      -- $5: when positive, only leases that expired at most $5 seconds ago
      -- (ReapParams.ExpiredWithin). Planned per call, the test folds away at 0, and
      -- bounds the walk of tasks_lease_expiry from below otherwise.
      AND ($5::float8 <= 0 OR lease_expires_at >= now() - make_interval(secs => $5::float8))
    ORDER BY lease_expires_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), reaped AS (
    UPDATE rota.tasks t
    SET status = CASE
                     WHEN t.cancel_requested_at IS NOT NULL THEN 'CANCELED'
                     WHEN t.attempt_count >= t.max_attempts THEN 'DEAD'
                     ELSE 'PENDING'
                 END,
        scheduled_for = CASE
                            WHEN t.cancel_requested_at IS NOT NULL OR t.attempt_count >= t.max_attempts
                                THEN t.scheduled_for
                            ELSE now() + make_interval(secs => random() * least($3::float8,
                                     $2::float8 * power(2::float8, least(greatest(t.attempt_count, 1) - 1, 62))))
                        END,
        completed_at = CASE
                           WHEN t.cancel_requested_at IS NOT NULL OR t.attempt_count >= t.max_attempts
                               THEN now()
                       END,
        -- Back to PENDING: whether the vanished worker's SQS message survives is unknown,
        -- so in a queue an enqueuer serves the task gets a new one once due (a duplicate
        -- is harmless: the claim by id takes it once).
        enqueued_at = CASE
                          WHEN t.cancel_requested_at IS NULL AND t.attempt_count < t.max_attempts
                              THEN NULL
                          ELSE t.enqueued_at
                      END,
        last_error = 'lease expired (worker ' || coalesce(t.worker_id, 'unknown') || ')',
        lease_token = NULL,
        lease_expires_at = NULL,
        updated_at = now()
    FROM expired e
    -- By id, not by the locked row's ctid: a row another transaction updated after this
    -- statement's snapshot (a cancel request) is locked in its latest version, which a
    -- TID lookup (it uses the snapshot) would not find, leaving the task locked but not
    -- reaped. Found by id, the snapshot's version leads the update to the latest one.
    WHERE t.id = e.id
    -- worker_id, attempt_count and processing_started_at are the attempt's own: the
    -- update leaves them as the claim set them.
    RETURNING t.id, t.attempt_count, t.worker_id, e.lease_token, t.processing_started_at, t.last_error
), attempts AS (
    INSERT INTO rota.task_attempts (task_id, attempt, worker_id, lease_token, started_at, finished_at, outcome, error)
    SELECT id, attempt_count, worker_id, lease_token, coalesce(processing_started_at, now()), now(),
           'LEASE_EXPIRED', last_error
    FROM reaped
)
SELECT count(*)
FROM reaped
