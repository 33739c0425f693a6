DROP FUNCTION IF EXISTS rota.record_outcomes(uuid[], uuid[], text[], text[], bigint[], jsonb[]);
DROP FUNCTION IF EXISTS rota.claim_tasks_pending(text, integer, text, interval, smallint, timestamptz, uuid);
DROP FUNCTION IF EXISTS rota.claim_tasks_enqueued(text, integer, text, interval, smallint, timestamptz, uuid);
-- The foreign key comes back; attempts of tasks deleted without them go first.
DELETE FROM rota.task_attempts a WHERE NOT EXISTS (SELECT FROM rota.tasks t WHERE t.id = a.task_id);
ALTER TABLE rota.task_attempts ADD CONSTRAINT task_attempts_task_id_fkey
    FOREIGN KEY (task_id) REFERENCES rota.tasks (id) ON DELETE CASCADE;
