-- The claim of this release needs the function; going below 0049 means running a release
-- whose claim holds such a run (see the up migration).
DROP FUNCTION rota.schedule_run_key_taken(text);
