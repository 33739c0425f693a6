ALTER TABLE rota.tasks DROP COLUMN IF EXISTS group_key;
DROP TABLE IF EXISTS rota.queues;
