-- CancelFlow (migration 0019's rota.flow_cancel): the flow's status afterwards, NULL
-- when there is no such flow.
SELECT rota.flow_cancel($1)
