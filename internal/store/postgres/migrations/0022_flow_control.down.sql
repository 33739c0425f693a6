DROP FUNCTION IF EXISTS rota.claim_limited_pending(text, integer, text, interval, uuid[]);
DROP FUNCTION IF EXISTS rota.claim_limited_enqueued(text, integer, text, interval, uuid[]);
DROP FUNCTION IF EXISTS rota.claim_turns_pending(text, smallint, text, text, integer, integer, interval, integer, text[], timestamptz);
DROP FUNCTION IF EXISTS rota.claim_turns_enqueued(text, smallint, text, text, integer, integer, interval, integer, text[], timestamptz);
DROP FUNCTION IF EXISTS rota.claim_ungrouped(text, text, smallint, integer, boolean, uuid[]);
DROP FUNCTION IF EXISTS rota.claim_group_room2(text, text, integer, integer, interval, integer, text[], timestamptz);
DROP FUNCTION IF EXISTS rota.claim_group_room(text, text, rota.queues, integer, timestamptz);
DROP TABLE IF EXISTS rota.queue_cursors;
DROP TABLE IF EXISTS rota.queue_claims;
