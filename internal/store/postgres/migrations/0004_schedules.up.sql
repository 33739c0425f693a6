-- Schedules (DB-driven cron, DESIGN.md section 6): a cron spec, a time zone and a task
-- template per row. The database decides when a schedule fires: next_run_at is always
-- computed by rota.next_cron_tick (migration 0003), and any server claims due schedules
-- with FOR UPDATE SKIP LOCKED, inserting their runs and advancing next_run_at in the same
-- transaction. A run is a task whose idempotency key is schedule:<name>:<unix seconds of
-- the tick>, so a tick never enqueues twice.

CREATE TABLE rota.schedules (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name              text        NOT NULL,
    kind              text        NOT NULL DEFAULT 'task',
    -- The task template: what each run enqueues.
    task_kind         text        NOT NULL,
    task_queue        text        NOT NULL DEFAULT 'default',
    task_payload      jsonb       NOT NULL DEFAULT '{}',
    task_max_attempts integer     NOT NULL DEFAULT 25,
    cron_spec         text        NOT NULL,
    timezone          text        NOT NULL DEFAULT 'UTC',
    -- The next tick to fire; in the past while the schedule is due.
    next_run_at       timestamptz NOT NULL,
    -- The tick of the last run a claim enqueued, and when (database time) it did.
    last_run_at       timestamptz,
    last_enqueued_at  timestamptz,
    enabled           boolean     NOT NULL DEFAULT true,
    catch_up          text        NOT NULL DEFAULT 'one',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT schedules_name_key UNIQUE (name),
    -- Names appear in URLs and in run idempotency keys, which are split on ':'.
    CONSTRAINT schedules_name_valid CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$' AND length(name) <= 128),
    CONSTRAINT schedules_kind_known CHECK (kind IN ('task', 'flow')),
    CONSTRAINT schedules_catch_up_known CHECK (catch_up IN ('skip', 'one', 'all')),
    CONSTRAINT schedules_task_names_nonempty CHECK (task_kind <> '' AND task_queue <> ''),
    CONSTRAINT schedules_task_max_attempts_positive CHECK (task_max_attempts >= 1)
);

-- Claiming: only enabled schedules, by due time.
CREATE INDEX schedules_due ON rota.schedules (next_run_at) WHERE enabled;

-- A schedule's runs, newest first: the name is the second ':'-separated part of the run
-- key (names contain no ':'), so ListScheduleRuns pages by (name, id) without scanning
-- other schedules' runs or sorting.
CREATE INDEX tasks_schedule_runs ON rota.tasks (split_part(idempotency_key, ':', 2), id DESC)
    WHERE idempotency_key LIKE 'schedule:%';

-- A spec or time zone that rota.next_cron_tick rejects never reaches the table, whoever
-- writes it (the adapter also computes next_run_at with it; this guards hand-written SQL).
-- The function raises SQLSTATE 22023 naming the bad field.
CREATE FUNCTION rota.schedules_check_spec() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM rota.next_cron_tick(NEW.cron_spec, now(), NEW.timezone);
    RETURN NEW;
END
$$;

CREATE TRIGGER schedules_check_spec
    BEFORE INSERT OR UPDATE OF cron_spec, timezone ON rota.schedules
    FOR EACH ROW
    EXECUTE FUNCTION rota.schedules_check_spec();

-- The ticks one claim handles, per catch-up policy. The due ticks are first_tick (the
-- schedule's next_run_at) and every following tick up to as_of (the claim's now()).
--
--   all:  every due tick in order, at most max_runs of them; next_run_at is the first
--         tick not handled (still due when more than max_runs were due: the next claim
--         continues from there).
--   one:  only the latest due tick; the others count as skipped.
--   skip: first_tick alone when it is the only due tick (the schedule is on time);
--         when more are due (it fell behind) none, and all count as skipped.
--
-- For one and skip, next_run_at is the first tick after as_of. Missed ticks are counted
-- one by one up to scan_limit (skipped is a lower bound beyond); the latest due tick is
-- then found by bisection, so a schedule years behind costs O(log) calls, not a scan.
CREATE FUNCTION rota.schedule_due_ticks(
    spec text, tz text, first_tick timestamptz, catch_up text,
    max_runs integer, scan_limit integer, as_of timestamptz DEFAULT now(),
    OUT ticks timestamptz[], OUT skipped integer, OUT next_run_at timestamptz)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    t   timestamptz := first_tick;
    nx  timestamptz;
    n   integer := 1;       -- due ticks counted, t being the last of them
    far boolean := false;   -- stopped counting at scan_limit
    hi  timestamptz;
    mid timestamptz;
BEGIN
    ticks := '{}';
    skipped := 0;
    IF first_tick > as_of THEN
        next_run_at := first_tick;
        RETURN;
    END IF;

    IF catch_up = 'all' THEN
        LOOP
            ticks := ticks || t;
            t := rota.next_cron_tick(spec, t, tz);
            EXIT WHEN t > as_of OR cardinality(ticks) >= max_runs;
        END LOOP;
        next_run_at := t;
        RETURN;
    END IF;

    LOOP
        nx := rota.next_cron_tick(spec, t, tz);
        EXIT WHEN nx > as_of;
        t := nx;
        n := n + 1;
        IF n >= scan_limit THEN
            far := true;
            EXIT;
        END IF;
    END LOOP;

    IF far THEN
        -- Bisection for the latest tick <= as_of. Invariant: t <= as_of is a due tick and
        -- no tick lies in (hi, as_of]. It ends with nx = the first tick after t, which is
        -- then the first after as_of.
        hi := as_of;
        LOOP
            nx := rota.next_cron_tick(spec, t, tz);
            EXIT WHEN nx > hi;
            t := nx;
            -- In plain seconds: interval day arithmetic would follow the session's DST.
            mid := t + extract(epoch FROM hi - t) / 2 * interval '1 second';
            nx := rota.next_cron_tick(spec, mid, tz);
            IF nx <= hi THEN
                t := nx;
            ELSE
                hi := mid;
            END IF;
        END LOOP;
    END IF;
    next_run_at := nx;

    IF catch_up = 'one' THEN
        ticks := ARRAY[t];
        skipped := n - 1;
    ELSIF n = 1 THEN
        ticks := ARRAY[first_tick];
    ELSE
        skipped := n;
    END IF;
END
$$;
