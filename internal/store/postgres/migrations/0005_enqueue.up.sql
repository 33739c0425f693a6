-- SQS mode's enqueuer (queries/enqueue_due.sql) finds the ENQUEUED tasks that need a new
-- message without reading the ones whose message is in SQS right now (that backlog can
-- be most of a large table). "Needs a message" is explicit: a retry or a reaped task
-- returns to ENQUEUED with enqueued_at = NULL (its old message is deleted by the worker),
-- and a message that looks lost has an old enqueued_at. Due PENDING tasks come from
-- tasks_claim_pending (migration 0001).

-- ENQUEUED tasks not sent since they became due (or not due yet), in claim order.
CREATE INDEX tasks_enqueue_unsent ON rota.tasks (queue, priority DESC, scheduled_for, id)
    WHERE status = 'ENQUEUED' AND enqueued_at IS NULL;
-- ENQUEUED tasks by when their message was sent: redelivery reads only the oldest.
CREATE INDEX tasks_enqueue_sent ON rota.tasks (queue, enqueued_at)
    WHERE status = 'ENQUEUED' AND enqueued_at IS NOT NULL;
