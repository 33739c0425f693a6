-- ReplayFlow (migration 0019's rota.flow_replay): the flow's status before, NULL when
-- there is no such flow; only a FAILED or CANCELED one was changed.
SELECT rota.flow_replay($1)
