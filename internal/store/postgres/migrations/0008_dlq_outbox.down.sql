CREATE OR REPLACE FUNCTION rota.tasks_record_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IN ('DEAD', 'FAILED') THEN
        INSERT INTO rota.dead_letters (task_id, kind, queue, worker_id, attempt_count, max_attempts, error, reason)
        VALUES (NEW.id, NEW.kind, NEW.queue, NEW.worker_id, NEW.attempt_count, NEW.max_attempts, NEW.last_error, NEW.status);
    ELSIF NEW.status = 'PENDING' AND OLD.status IN ('DEAD', 'FAILED', 'CANCELED') THEN
        INSERT INTO rota.task_attempts (task_id, attempt, started_at, finished_at, outcome, error)
        VALUES (NEW.id, OLD.attempt_count, now(), now(), 'REPLAYED', 'replayed from ' || OLD.status);
        UPDATE rota.dead_letters SET replayed_at = now() WHERE task_id = NEW.id AND replayed_at IS NULL;
    END IF;
    RETURN NULL;
END
$$;
DROP INDEX rota.dead_letters_dlq_pending;
ALTER TABLE rota.dead_letters DROP COLUMN dlq_pending;
