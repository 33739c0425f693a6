-- The store's HeartbeatMany needs this function; going below 0043 means running a
-- release whose worker heartbeats one task per statement.
DROP FUNCTION rota.heartbeat_many(uuid[], uuid[], interval);
