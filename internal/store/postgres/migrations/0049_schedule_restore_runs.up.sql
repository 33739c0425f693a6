-- buffer_one over restored ticks (a schedule moved back onto ticks it has run): when the
-- tick that was to run has its run already (the insert does nothing for it), the tick
-- behind it runs instead of being held. Held, it would wait for a run that does not run,
-- and the next claim, seeing the schedule idle, would hold another run and leave this one
-- held for good. queries/schedule_claim.sql asks this of the first tick's key; a function,
-- as rota.schedule_run_status is (migration 0017), so that the claim statement does not
-- name rota.tasks outside its INSERT. The predicate is the insert's conflict arbiter's
-- (tasks_idempotency_key): exactly the keys whose insert would do nothing.
CREATE FUNCTION rota.schedule_run_key_taken(run_key text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT FROM rota.tasks
                   WHERE idempotency_key = run_key
                     AND status NOT IN ('DEAD', 'FAILED', 'CANCELED'));
END
$$;
