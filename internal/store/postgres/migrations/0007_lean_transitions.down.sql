DROP INDEX rota.tasks_status_id;
CREATE INDEX tasks_status_id ON rota.tasks (status, id DESC);

DROP TRIGGER tasks_check_transition ON rota.tasks;
CREATE TRIGGER tasks_check_transition
    BEFORE UPDATE ON rota.tasks
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.lease_token IS DISTINCT FROM NEW.lease_token)
    EXECUTE FUNCTION rota.tasks_check_transition();

-- Attempts running now get back the open rows the older code expects to close.
INSERT INTO rota.task_attempts (task_id, attempt, worker_id, lease_token, started_at)
SELECT id, attempt_count, worker_id, lease_token, coalesce(processing_started_at, now())
FROM rota.tasks
WHERE status = 'PROCESSING';
CREATE UNIQUE INDEX task_attempts_lease ON rota.task_attempts (lease_token) WHERE lease_token IS NOT NULL;
