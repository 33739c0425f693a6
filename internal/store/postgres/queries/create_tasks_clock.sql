-- CreateTasks by COPY (createcopy.go), the batch's first statement in its transaction:
-- the transaction's now(), which the copied rows' created_at, updated_at and (for a task
-- due at once) scheduled_for are, and, when $1 (notifyAfter: the caller wakes the workers
-- after the commit, as create_tasks.sql's $13), rota.notify_after_commit for the insert
-- trigger.
SELECT now()
WHERE NOT $1::boolean OR set_config('rota.notify_after_commit', 'on', true) = 'on'
