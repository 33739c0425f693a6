-- Stats (GET /api/stats, the dashboard's overview) counts every task by queue and status.
-- Finished tasks are nearly all of a large table, so their counts come from this narrow
-- partial index (an index-only scan in (queue, status) order) instead of the table; live
-- tasks are counted from the claim and lease indexes of migration 0001, which hold only
-- them. Partial, so that a task adds an entry once, when it finishes, rather than on
-- every status change.
CREATE INDEX tasks_finished_queue_status ON rota.tasks (queue, status)
    WHERE status IN ('SUCCEEDED', 'FAILED', 'DEAD', 'CANCELED');
