-- Back to 0025's rota.flow_replay.

CREATE OR REPLACE FUNCTION rota.flow_replay(f uuid) RETURNS text
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan -- as in 0019
AS $$
DECLARE
    before    text;
    step_name text;
    st        rota.flow_steps;
BEGIN
    SELECT status INTO before FROM rota.flows WHERE id = f FOR UPDATE;
    IF before IS NULL OR before NOT IN ('FAILED', 'CANCELED') THEN
        RETURN before;
    END IF;
    -- A task still running (its cancel request not answered yet) would end CANCELED and
    -- fail the replayed flow at once: the caller is told to wait for it.
    IF EXISTS (SELECT 1 FROM rota.tasks WHERE flow_id = f AND status = 'PROCESSING') THEN
        RETURN 'PROCESSING';
    END IF;
    UPDATE rota.flows
    SET status = 'RUNNING', completed_at = NULL, updated_at = now(), steps_left = NULL
    WHERE id = f;
    UPDATE rota.tasks
    SET status = 'PENDING', attempt_count = 0, scheduled_for = now(), last_error = NULL,
        completed_at = NULL, cancel_requested_at = NULL, updated_at = now()
    WHERE flow_id = f AND status IN ('DEAD', 'FAILED', 'CANCELED');
    UPDATE rota.flow_steps s
    SET error = NULL,
        tasks_left = (SELECT count(*) FROM rota.tasks t
                      WHERE t.flow_id = f AND t.flow_step = s.name AND t.status <> 'SUCCEEDED')
    WHERE s.flow_id = f AND s.state = 'STARTED';
    UPDATE rota.flow_steps s
    SET state = 'WAITING', error = NULL,
        deps_left = (SELECT count(*) FROM rota.flow_steps d
                     WHERE d.flow_id = f AND d.name = ANY (s.depends_on) AND d.state <> 'SUCCEEDED')
    WHERE s.flow_id = f AND s.state IN ('FAILED', 'CANCELED');
    -- Move what can move, in create order (a dependency always comes first in a walk of
    -- one step at a time: flow_step_done starts what it unblocks itself).
    FOR step_name IN SELECT name FROM rota.flow_steps WHERE flow_id = f ORDER BY position LOOP
        EXIT WHEN (SELECT status FROM rota.flows WHERE id = f) <> 'RUNNING';
        SELECT * INTO st FROM rota.flow_steps WHERE flow_id = f AND name = step_name;
        IF st.state = 'STARTED' AND st.tasks_left = 0 THEN
            PERFORM rota.flow_step_done(f, step_name);
        ELSIF st.state = 'WAITING' AND st.deps_left = 0 THEN
            PERFORM rota.flow_activate(f, step_name);
        END IF;
    END LOOP;
    -- Every step may have succeeded already (the failed tasks were all replayed on their
    -- own and succeeded meanwhile): the walk above then moved nothing.
    PERFORM rota.flow_end_if_done(f);
    RETURN before;
END
$$;

