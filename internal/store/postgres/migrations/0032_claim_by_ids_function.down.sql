-- The store's claim by id goes back to queries/claim_tasks_by_id.sql for every limit.
DROP FUNCTION rota.claim_tasks_by_ids(text, text, interval, uuid[], text);
