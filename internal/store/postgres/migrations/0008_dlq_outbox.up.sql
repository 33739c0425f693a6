-- The dead-letter outbox. In SQS mode every DeadTaskEvent is also published to the SQS
-- dead-letter queue, whichever path ended the task: a worker's outcome, the HTTP worker
-- protocol or the lease reaper. The database decides which dead letters await
-- publication, in the same transaction that records them, and SQS mode's relay (run by
-- `rota serve --mode sqs` beside the enqueuer) publishes them and clears the mark:
-- at least once, and none is lost to a worker dying or the DLQ being unreachable.
--
-- A dead letter awaits publication when its task went through SQS mode: enqueued_at is
-- set by every send, kept through the claim and the outcome (and set by a claim by id,
-- claim_tasks_by_id.sql), and never set in poll mode, whose dead letters are not marked.
ALTER TABLE rota.dead_letters ADD COLUMN dlq_pending boolean NOT NULL DEFAULT false;
-- The relay's queue: empty nearly always, so polling it costs next to nothing.
CREATE INDEX dead_letters_dlq_pending ON rota.dead_letters (id) WHERE dlq_pending;

CREATE OR REPLACE FUNCTION rota.tasks_record_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IN ('DEAD', 'FAILED') THEN
        INSERT INTO rota.dead_letters (task_id, kind, queue, worker_id, attempt_count, max_attempts, error, reason, dlq_pending)
        VALUES (NEW.id, NEW.kind, NEW.queue, NEW.worker_id, NEW.attempt_count, NEW.max_attempts, NEW.last_error, NEW.status,
                NEW.enqueued_at IS NOT NULL);
    ELSIF NEW.status = 'PENDING' AND OLD.status IN ('DEAD', 'FAILED', 'CANCELED') THEN
        INSERT INTO rota.task_attempts (task_id, attempt, started_at, finished_at, outcome, error)
        VALUES (NEW.id, OLD.attempt_count, now(), now(), 'REPLAYED', 'replayed from ' || OLD.status);
        UPDATE rota.dead_letters SET replayed_at = now() WHERE task_id = NEW.id AND replayed_at IS NULL;
    END IF;
    RETURN NULL;
END
$$;
