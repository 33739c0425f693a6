-- ReapExpiredLeases: takes up to $1 PROCESSING tasks whose lease expired (SKIP LOCKED, so
-- any number of reapers run side by side) and ends their attempt: CANCELED when a cancel
-- was requested, DEAD when no attempts remain, else back to $2 ('PENDING' or 'ENQUEUED')
-- after a full-jitter exponential backoff: uniform in [0, min($4, $3 * 2^(attempt-1)))
-- seconds. The attempt rows are closed as LEASE_EXPIRED. Returns how many were reaped.
-- Tasks are updated by primary key and attempt rows found by lease token, one lookup each,
-- as in record_outcomes.sql.
WITH expired AS (
    SELECT id, lease_token
    FROM rota.tasks
    WHERE status = 'PROCESSING'
      AND lease_expires_at < now()
    ORDER BY lease_expires_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), reaped AS (
    UPDATE rota.tasks t
    SET status = CASE
                     WHEN t.cancel_requested_at IS NOT NULL THEN 'CANCELED'
                     WHEN t.attempt_count >= t.max_attempts THEN 'DEAD'
                     ELSE $2::text
                 END,
        scheduled_for = CASE
                            WHEN t.cancel_requested_at IS NOT NULL OR t.attempt_count >= t.max_attempts
                                THEN t.scheduled_for
                            ELSE now() + make_interval(secs => random() * least($4::float8,
                                     $3::float8 * power(2::float8, least(greatest(t.attempt_count, 1) - 1, 62))))
                        END,
        completed_at = CASE
                           WHEN t.cancel_requested_at IS NOT NULL OR t.attempt_count >= t.max_attempts
                               THEN now()
                       END,
        -- Back to ENQUEUED (SQS mode): whether the vanished worker's message survives is
        -- unknown, so the task gets a new one once due (a duplicate is harmless); NULL is
        -- what the enqueuer looks for (enqueue_due.sql).
        enqueued_at = CASE
                          WHEN t.cancel_requested_at IS NULL AND t.attempt_count < t.max_attempts
                               AND $2::text = 'ENQUEUED'
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
    RETURNING e.lease_token, t.last_error
), closed AS (
    UPDATE rota.task_attempts a
    SET finished_at = now(),
        outcome = 'LEASE_EXPIRED',
        error = x.last_error
    FROM (
        SELECT r.last_error, att.row
        FROM reaped r
        CROSS JOIN LATERAL (
            SELECT ctid AS row FROM rota.task_attempts WHERE lease_token = r.lease_token LIMIT 1
        ) AS att
    ) AS x
    WHERE a.ctid = x.row
)
SELECT count(*)
FROM reaped
