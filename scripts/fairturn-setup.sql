-- An experiment, never a migration (docs/performance.md, "Session 14"): the fair claim
-- with each grouped task's turn in an index, against the walk and the plain claim.
-- Run on a scratch database migrated with `rota migrate up` (it adds a column and an
-- index to rota.tasks and empties it):
--
--   psql "$SCRATCH" -f scripts/fairturn-setup.sql
--   psql "$SCRATCH" -v v=vt -f scripts/fairturn-drain.sql    # or v=groups, v=plain
--
-- (run the setup again before each drain). Queues: 'plain' (20,000 ungrouped tasks),
-- 'groups' (20,000 tasks over 1,000 groups, drained by rota.claim_limited_pending's
-- walk) and 'vtq' (the same, with vt = the task's place in its group).
TRUNCATE rota.tasks, rota.task_attempts, rota.queue_cursors CASCADE;
ALTER TABLE rota.tasks ADD COLUMN IF NOT EXISTS vt bigint;
DROP INDEX IF EXISTS rota.tasks_vt;
INSERT INTO rota.tasks(id, queue, kind, scheduled_for, group_key)
SELECT gen_random_uuid(), 'groups', 'noop', now() - interval '1 second' + (i * interval '1 microsecond'), 'tenant-' || (i % 1000) FROM generate_series(1, 20000) i;
INSERT INTO rota.tasks(id, queue, kind, scheduled_for, group_key)
SELECT gen_random_uuid(), 'vtq', 'noop', now() - interval '1 second' + (i * interval '1 microsecond'), 'tenant-' || (i % 1000) FROM generate_series(1, 20000) i;
UPDATE rota.tasks t SET vt = x.rn FROM (SELECT id, row_number() OVER (PARTITION BY group_key ORDER BY scheduled_for, id) rn FROM rota.tasks WHERE queue = 'vtq') x WHERE t.id = x.id;
INSERT INTO rota.tasks(id, queue, kind, scheduled_for)
SELECT gen_random_uuid(), 'plain', 'noop', now() - interval '1 second' + (i * interval '1 microsecond') FROM generate_series(1, 20000) i;
CREATE INDEX tasks_vt ON rota.tasks (queue, priority DESC, vt, id) WHERE status = 'PENDING' AND vt IS NOT NULL;
INSERT INTO rota.queues(name, group_concurrency) VALUES ('vtq', 10) ON CONFLICT DO NOTHING;
VACUUM ANALYZE rota.tasks;
