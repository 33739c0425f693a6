-- Fewer writes per task. A task's two hot transitions (claim: PENDING/ENQUEUED ->
-- PROCESSING; outcome: PROCESSING -> SUCCEEDED or a retry) used to rewrite two tables and
-- touch nine index entries between them; docs/performance.md has what each part below
-- bought on the drain benchmark.
--
-- 1. A running attempt lives on the task row (worker_id, lease_token,
--    processing_started_at, attempt_count), which the claim writes anyway. Its
--    rota.task_attempts row is written once, complete, when the attempt ends: by the
--    outcome (record_outcomes.sql) or by the lease reaper (reap_expired_leases.sql), each
--    under the task's lock with the lease still current, so exactly once. ListAttempts
--    shows the running attempt from the task row. The claim no longer inserts a row that
--    the outcome must find again and update, and the lookup index by lease token goes.
--    The open rows of attempts running now become redundant with their task rows: they
--    are removed, so their outcome does not leave a second row. Stop workers of older
--    versions before migrating: they would still write (and look for) open rows.
DELETE FROM rota.task_attempts a
USING rota.tasks t
WHERE a.task_id = t.id
  AND a.finished_at IS NULL
  AND t.status = 'PROCESSING'
  AND a.lease_token = t.lease_token;
DROP INDEX rota.task_attempts_lease;

-- 2. The state machine's trigger function runs only for a transition that is not legal,
--    to raise the error: legality is decided in the trigger's WHEN condition, an
--    expression evaluated in the executor, instead of a PL/pgSQL call for every claimed
--    and finished task. It is the same table as in rota.tasks_check_transition()
--    (migration 0001), which still decides, and words the error, when it runs.
DROP TRIGGER tasks_check_transition ON rota.tasks;
CREATE TRIGGER tasks_check_transition
    BEFORE UPDATE ON rota.tasks
    FOR EACH ROW
    WHEN ((OLD.status IS DISTINCT FROM NEW.status OR OLD.lease_token IS DISTINCT FROM NEW.lease_token)
          AND NOT CASE
              WHEN OLD.status = NEW.status THEN NEW.status <> 'PROCESSING'
              WHEN NEW.status = 'PROCESSING' THEN OLD.status IN ('PENDING', 'ENQUEUED')
                   AND NEW.attempt_count = OLD.attempt_count + 1
                   AND OLD.scheduled_for <= now()
              WHEN OLD.status = 'PROCESSING' THEN NEW.status IN ('SUCCEEDED', 'PENDING', 'ENQUEUED', 'DEAD', 'FAILED', 'CANCELED')
              WHEN OLD.status = 'PENDING' THEN NEW.status IN ('ENQUEUED', 'CANCELED')
              WHEN OLD.status = 'ENQUEUED' THEN NEW.status = 'CANCELED'
              WHEN OLD.status IN ('DEAD', 'FAILED', 'CANCELED') THEN NEW.status = 'PENDING'
              ELSE false
          END)
    EXECUTE FUNCTION rota.tasks_check_transition();

-- 3. Listing by status skips PROCESSING: a claim then adds no entry here (the outcome
--    still does). Running tasks are few and are listed through tasks_lease_expiry.
DROP INDEX rota.tasks_status_id;
CREATE INDEX tasks_status_id ON rota.tasks (status, id DESC) WHERE status <> 'PROCESSING';
