-- An experiment for scripts/sqlfloor.sh --setup (docs/performance.md, "Where it stands
-- (session 12)"): rota.record_outcomes as the migrations left it, less its attempts CTE
-- (the INSERT INTO rota.task_attempts), to measure what the attempt row costs the SQL
-- floor. Never a migration: every attempt is recorded (DESIGN.md section 1, promise 4).
DO $experiment$
DECLARE
    def  text := pg_get_functiondef('rota.record_outcomes(uuid[], uuid[], text[], text[], bigint[], jsonb[])'::regprocedure);
    less text;
BEGIN
    less := regexp_replace(def, '\n    \), attempts AS \(.*?\n        FROM updated\n', E'\n');
    IF less = def OR less LIKE '%task_attempts (%' THEN
        RAISE EXCEPTION 'sqlfloor-no-attempt-row.sql: rota.record_outcomes has no attempts CTE of the expected shape';
    END IF;
    EXECUTE less;
END
$experiment$;
