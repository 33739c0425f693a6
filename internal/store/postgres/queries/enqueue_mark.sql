-- EnqueueDue, step 2: marks the tasks whose ids ($1) were sent to SQS as ENQUEUED, with
-- enqueued_at = the time of this statement (after the send returned, so the redelivery
-- timeout counts from the send, not from the start of the transaction). The rows are
-- the ones enqueue_due.sql locked earlier in the same transaction; the status guard only
-- keeps a caller's mistake from touching any other row. ENQUEUED -> ENQUEUED (a re-send)
-- changes no status, so the state-machine trigger does not fire for it.
--
-- The statement is the function rota.enqueue_mark (migration 0033), planned once per
-- session; it returns how many rows it marked.
SELECT rota.enqueue_mark($1::uuid[])
