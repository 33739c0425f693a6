DROP FUNCTION IF EXISTS rota.next_cron_tick(text, timestamptz, text);
