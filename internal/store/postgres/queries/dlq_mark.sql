-- PublishDeadLetters, step 2: the dead letters $1, locked by step 1 in this transaction
-- and reported published, no longer await publication.
UPDATE rota.dead_letters
SET dlq_pending = false
WHERE id = ANY ($1::bigint[])
  AND dlq_pending
