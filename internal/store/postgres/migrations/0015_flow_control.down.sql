DROP FUNCTION IF EXISTS rota.claim_limited(text, text, integer, text, interval, uuid[]);
DROP FUNCTION IF EXISTS rota.claim_group_room(text, text, rota.queues, integer);
DROP TABLE IF EXISTS rota.queue_cursors;
DROP TABLE IF EXISTS rota.queue_claims;
