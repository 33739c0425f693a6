-- EnqueueDue, step 2: marks the tasks whose ids ($1) were sent to SQS as ENQUEUED, with
-- enqueued_at = the time of this statement (after the send returned, so the redelivery
-- timeout counts from the send, not from the start of the transaction). The rows are
-- the ones enqueue_due.sql locked earlier in the same transaction; the status guard only
-- keeps a caller's mistake from touching any other row. ENQUEUED -> ENQUEUED (a re-send)
-- changes no status, so the state-machine trigger does not fire for it.
UPDATE rota.tasks
SET status = 'ENQUEUED',
    enqueued_at = statement_timestamp(),
    updated_at = statement_timestamp()
WHERE id = ANY($1::uuid[])
  AND status IN ('PENDING', 'ENQUEUED')
