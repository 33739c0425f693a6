CREATE OR REPLACE FUNCTION rota.tasks_notify_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rota_tasks', q.queue)
    FROM (SELECT DISTINCT queue FROM new_rows WHERE status = 'PENDING' AND scheduled_for <= now()) AS q;
    RETURN NULL;
END
$$;
DROP FUNCTION IF EXISTS rota.record_outcomes(uuid[], uuid[], text[], text[], bigint[], jsonb[]);
DROP FUNCTION IF EXISTS rota.claim_tasks_pending(text, integer, text, interval, smallint, timestamptz, uuid);
DROP FUNCTION IF EXISTS rota.claim_tasks_enqueued(text, integer, text, interval, smallint, timestamptz, uuid);
-- The foreign key comes back; attempts of tasks deleted without them go first.
DELETE FROM rota.task_attempts a WHERE NOT EXISTS (SELECT FROM rota.tasks t WHERE t.id = a.task_id);
ALTER TABLE rota.task_attempts ADD CONSTRAINT task_attempts_task_id_fkey
    FOREIGN KEY (task_id) REFERENCES rota.tasks (id) ON DELETE CASCADE;
