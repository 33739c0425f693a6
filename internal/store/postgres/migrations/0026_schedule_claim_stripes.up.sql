-- The schedule claim walks due schedules stripe by stripe (queries/schedule_claim_lock.sql):
-- stripe = id % 64, each stripe under an advisory lock a claim takes without waiting, so
-- that concurrent claimers (every server's scheduler) work in different stripes instead
-- of all walking the same first due rows and failing to lock them
-- (docs/performance.md, "Schedules (session 7)"). This index replaces schedules_due:
-- per stripe, the due schedules in next_run_at order. (64: scheduleClaimStripes in
-- schedules.go.)
CREATE INDEX schedules_due_stripes ON rota.schedules ((id % 64), next_run_at) WHERE enabled;
DROP INDEX rota.schedules_due;
