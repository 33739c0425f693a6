-- A task's output (issue 13, DESIGN.md section 10 "Results"): any JSON a SUCCEEDED
-- attempt returned, at most 1 MiB (store.MaxOutputBytes, checked before the write), NULL
-- when none. Only the succeed outcome writes it (record_outcomes.sql).
--
-- A nullable column without a default is a catalog change only: no table rewrite, no
-- scan, and the ACCESS EXCLUSIVE lock is held for milliseconds (lock_timeout bounds its
-- wait behind a long reader: docs/architecture.md, "Online migrations").
ALTER TABLE rota.tasks ADD COLUMN IF NOT EXISTS output jsonb;
