-- rota:no-transaction
-- The two list indexes hold task ids ascending instead of descending. Ids are UUIDv7,
-- so a new entry (a created task, a task that finished) has the largest id of its
-- (queue, kind, status) or (status) group. Descending, that put it first in its group:
-- every page split there halved a page that later entries never reach again, so both
-- indexes stayed half full (twice the pages and the splits: measured after 30,000
-- creates, tasks_list 392 pages against 219 ascending, tasks_status_id 270 against
-- 150). Ascending, it goes last, where PostgreSQL splits to leave pages full. The list
-- reads them backwards (ORDER BY id DESC after equality on the leading columns), at the
-- same cost. Built concurrently under a new name, then swapped in, so enqueues and
-- claims go on (docs/architecture.md, "Online migrations"); each statement is safe to
-- repeat.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_list_ascending ON rota.tasks (queue, kind, status, id)
    WHERE status <> 'PROCESSING';
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_list;
ALTER INDEX IF EXISTS rota.tasks_list_ascending RENAME TO tasks_list;
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_status_id_ascending ON rota.tasks (status, id)
    WHERE status <> 'PROCESSING';
DROP INDEX CONCURRENTLY IF EXISTS rota.tasks_status_id;
ALTER INDEX IF EXISTS rota.tasks_status_id_ascending RENAME TO tasks_status_id;
