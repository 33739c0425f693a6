-- rota.next_cron_tick(spec, from_time, tz): the first tick of a 5-field cron spec strictly
-- after from_time, at minute resolution, computed in time zone tz. Plain PL/pgSQL; the Go
-- package internal/cron implements the same semantics (its package documentation is the
-- reference) and a property test keeps the two in agreement:
--
--   * Vixie cron / cronie syntax: *, lists, ranges, steps (*/15, 1-30/5, 5/10 = 5 to the
--     field's end every 10), jan..dec and sun..sat in any case, day-of-week 0-7 (0 and 7
--     are Sunday, also in ranges), @yearly @annually @monthly @weekly @daily @midnight
--     @hourly in any case. If either day field starts with '*' a day must match both day
--     fields, otherwise either.
--   * DST: a local time skipped by a gap fires at the first instant after the gap (all
--     ticks inside one gap collapse into that firing); a repeated local time fires once, at
--     its first occurrence. (PostgreSQL's own timestamp AT TIME ZONE reads a skipped time
--     with the pre-gap offset, i.e. after the gap's end, and a repeated time as its second
--     occurrence; neither is used for that reason: wall times are mapped to instants here
--     from the zone's UTC offsets.) The zone is assumed to change its offset at most once
--     in any 32 hours, as every zone has since the 1950s.
--   * An invalid spec, a spec that can never fire (0 0 30 2 *), an unknown time zone or an
--     infinite from_time raise SQLSTATE 22023 with a message naming the field, e.g.
--     'rota.next_cron_tick: minute: 61 is out of range 0-59'. The work is bounded: the
--     spec is parsed into bitsets and the search jumps to the next matching month, day,
--     hour and minute; it never scans minutes.
--   * NULL in any argument gives NULL (STRICT); tz '' means UTC.
--   * tz is an IANA zone name. Names PostgreSQL would read as fixed-offset abbreviations
--     (PST, CEST; and CET, EET, MET, WET, which the tz database gives DST rules) and POSIX
--     strings (UTC+3) are rejected, so that the function agrees with the Go side.
--
-- STABLE, not IMMUTABLE: the result depends on the installed time zone rules.
CREATE FUNCTION rota.next_cron_tick(spec text, from_time timestamptz, tz text DEFAULT 'UTC')
RETURNS timestamptz
LANGUAGE plpgsql STABLE STRICT
AS $fn$
DECLARE
    src text; parts text[]; ftext text; item text; base text; steptxt text; tok text;
    toks text[]; utz text; fname text; fb bigint[] := '{0,0,0,0,0}';
    fi int; k int; lo int; hi int; pos int; a int; b int; st int; v int;
    has_step boolean; dayand boolean; utc boolean;
    fbits bigint; minb bigint; hourb bigint; domb bigint; monb bigint; dowb bigint;
    -- search
    t0 bigint; oc bigint; op bigint; x bigint; w0 bigint; w bigint; t bigint;
    oa bigint; ob bigint; ca bigint; cb bigint; mid bigint; res bigint;
    z bigint; era bigint; doe bigint; yoe bigint; doy bigint; mp bigint; days bigint;
    y bigint; ystop bigint; mo int; d int; h int; mi int; mlen int; wd int;
    cand bigint; p bigint; attempt int;
BEGIN
    ---------------------------------------------------------------- parse
    src := btrim(spec, E' \t\n\r\f' || chr(11));
    IF src = '' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'rota.next_cron_tick: spec: empty cron spec';
    END IF;
    IF left(src, 1) = '@' THEN
        CASE lower(src)
            WHEN '@yearly', '@annually' THEN parts := ARRAY['0', '0', '1', '1', '*'];
            WHEN '@monthly' THEN parts := ARRAY['0', '0', '1', '*', '*'];
            WHEN '@weekly' THEN parts := ARRAY['0', '0', '*', '*', '0'];
            WHEN '@daily', '@midnight' THEN parts := ARRAY['0', '0', '*', '*', '*'];
            WHEN '@hourly' THEN parts := ARRAY['0', '*', '*', '*', '*'];
            ELSE
                RAISE EXCEPTION USING ERRCODE = '22023',
                    MESSAGE = format('rota.next_cron_tick: spec: unknown keyword "%s"', src);
        END CASE;
    ELSE
        parts := array_remove(string_to_array(translate(src, E'\t\n\r\f' || chr(11), '     '), ' '), '');
        IF cardinality(parts) <> 5 THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
                'rota.next_cron_tick: spec: expected 5 fields (minute hour day-of-month month day-of-week), got %s',
                cardinality(parts));
        END IF;
    END IF;

    FOR fi IN 1..5 LOOP
        ftext := parts[fi];
        IF ftext = '*' THEN -- bits 0-59, 0-23, 1-31, 1-12, 0-7
            fb[fi] := (ARRAY[1152921504606846975, 16777215, 4294967294, 8190, 255])[fi];
            CONTINUE;
        END IF;
        lo := (ARRAY[0, 0, 1, 1, 0])[fi];
        hi := (ARRAY[59, 23, 31, 12, 7])[fi];
        -- (CASE guards the casts: the conditions of an AND may be evaluated in any order.)
        IF (CASE WHEN length(ftext) <= 2 AND ltrim(ftext, '0123456789') = ''
                 THEN ftext::int BETWEEN lo AND hi ELSE false END) THEN
            -- fast path: a single number
            fbits := 1::bigint << ftext::int;
        ELSIF (CASE WHEN left(ftext, 2) = '*/' AND length(ftext) BETWEEN 3 AND 4
                         AND ltrim(substr(ftext, 3), '0123456789') = ''
                    THEN substr(ftext, 3)::int > 0 ELSE false END) THEN
            -- fast path: */n
            fbits := 0;
            FOR v IN lo..hi BY substr(ftext, 3)::int LOOP
                fbits := fbits | (1::bigint << v);
            END LOOP;
        ELSE
            fbits := 0;
            FOREACH item IN ARRAY string_to_array(ftext, ',') LOOP
                -- fast paths: a number, a range of numbers
                IF (CASE WHEN length(item) BETWEEN 1 AND 2 AND ltrim(item, '0123456789') = ''
                         THEN item::int BETWEEN lo AND hi ELSE false END) THEN
                    fbits := fbits | (1::bigint << item::int);
                    CONTINUE;
                END IF;
                pos := strpos(item, '-');
                IF (CASE WHEN pos BETWEEN 2 AND 3 AND length(item) - pos BETWEEN 1 AND 2
                              AND ltrim(item, '0123456789-') = '' AND strpos(substr(item, pos + 1), '-') = 0
                         THEN left(item, pos - 1)::int BETWEEN lo AND substr(item, pos + 1)::int
                              AND substr(item, pos + 1)::int <= hi
                         ELSE false END) THEN
                    fbits := fbits | (((1::bigint << (substr(item, pos + 1)::int + 1)) - 1)
                                      - ((1::bigint << left(item, pos - 1)::int) - 1));
                    CONTINUE;
                END IF;
                -- the general case, which also names the error of an invalid item
                fname := (ARRAY['minute', 'hour', 'day-of-month', 'month', 'day-of-week'])[fi];
                IF item = '' THEN
                    RAISE EXCEPTION USING ERRCODE = '22023',
                        MESSAGE = format('rota.next_cron_tick: %s: empty item in list "%s"', fname, ftext);
                END IF;
                pos := strpos(item, '/');
                has_step := pos > 0;
                IF has_step THEN
                    base := left(item, pos - 1);
                    steptxt := substr(item, pos + 1);
                    IF strpos(steptxt, '/') > 0 THEN
                        RAISE EXCEPTION USING ERRCODE = '22023',
                            MESSAGE = format('rota.next_cron_tick: %s: invalid item "%s"', fname, item);
                    END IF;
                ELSE
                    base := item;
                END IF;
                IF base = '*' THEN
                    a := lo;
                    b := hi;
                ELSE
                    pos := strpos(base, '-');
                    IF pos > 0 THEN
                        toks := ARRAY[left(base, pos - 1), substr(base, pos + 1)];
                        IF strpos(toks[2], '-') > 0 THEN
                            RAISE EXCEPTION USING ERRCODE = '22023',
                                MESSAGE = format('rota.next_cron_tick: %s: invalid item "%s"', fname, item);
                        END IF;
                    ELSE
                        toks := ARRAY[base];
                    END IF;
                    FOR k IN 1..cardinality(toks) LOOP
                        tok := toks[k];
                        IF tok = '' THEN
                            RAISE EXCEPTION USING ERRCODE = '22023',
                                MESSAGE = format('rota.next_cron_tick: %s: missing value in "%s"', fname, item);
                        ELSIF ltrim(tok, '0123456789') = '' THEN
                            IF length(tok) > 9 THEN
                                v := -1;
                            ELSE
                                v := tok::int;
                            END IF;
                            IF v < lo OR v > hi THEN
                                RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
                                    'rota.next_cron_tick: %s: %s is out of range %s-%s', fname, tok, lo, hi);
                            END IF;
                        ELSE
                            v := NULL;
                            IF fi >= 4 AND tok ~ '^[A-Za-z]{3}$' THEN
                                IF fi = 4 THEN
                                    v := array_position('{jan,feb,mar,apr,may,jun,jul,aug,sep,oct,nov,dec}'::text[], lower(tok));
                                ELSE
                                    v := array_position('{sun,mon,tue,wed,thu,fri,sat}'::text[], lower(tok)) - 1;
                                END IF;
                            END IF;
                            IF v IS NULL THEN
                                RAISE EXCEPTION USING ERRCODE = '22023',
                                    MESSAGE = format('rota.next_cron_tick: %s: invalid value "%s"', fname, tok);
                            END IF;
                        END IF;
                        IF k = 1 THEN
                            a := v;
                        ELSE
                            b := v;
                        END IF;
                    END LOOP;
                    IF pos > 0 THEN
                        IF a > b THEN
                            RAISE EXCEPTION USING ERRCODE = '22023',
                                MESSAGE = format('rota.next_cron_tick: %s: range "%s" is reversed', fname, base);
                        END IF;
                    ELSIF has_step THEN
                        b := hi;
                    ELSE
                        b := a;
                    END IF;
                END IF;
                st := 1;
                IF has_step THEN
                    IF steptxt = '' OR ltrim(steptxt, '0123456789') <> '' THEN
                        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
                            'rota.next_cron_tick: %s: invalid step "%s" in "%s"', fname, steptxt, item);
                    END IF;
                    IF length(steptxt) > 9 THEN
                        RAISE EXCEPTION USING ERRCODE = '22023',
                            MESSAGE = format('rota.next_cron_tick: %s: step %s is out of range', fname, steptxt);
                    END IF;
                    st := steptxt::int;
                    IF st = 0 THEN
                        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
                            'rota.next_cron_tick: %s: step must be at least 1 in "%s"', fname, item);
                    END IF;
                END IF;
                IF st = 1 THEN
                    fbits := fbits | (((1::bigint << (b + 1)) - 1) - ((1::bigint << a) - 1));
                ELSE
                    FOR v IN a..b BY st LOOP
                        fbits := fbits | (1::bigint << v);
                    END LOOP;
                END IF;
            END LOOP;
        END IF;
        fb[fi] := fbits;
    END LOOP;
    minb := fb[1];
    hourb := fb[2];
    domb := fb[3];
    monb := fb[4];
    dowb := (fb[5] & 127) | ((fb[5] >> 7) & 1);

    dayand := left(parts[3], 1) = '*' OR left(parts[5], 1) = '*';
    IF dayand THEN
        -- A day must match day-of-month: some month of the spec must have such a day
        -- (any date, Feb 29 included, falls on every weekday in some year).
        IF monb & 5546 <> 0 THEN       -- a 31-day month: jan mar may jul aug oct dec
            mlen := 31;
        ELSIF monb & 2640 <> 0 THEN    -- a 30-day month: apr jun sep nov
            mlen := 30;
        ELSE                           -- february only
            mlen := 29;
        END IF;
        IF domb & ((1::bigint << (mlen + 1)) - 2) = 0 THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
                'rota.next_cron_tick: day-of-month: day "%s" never occurs in month "%s"', parts[3], parts[4]);
        END IF;
    END IF;

    ---------------------------------------------------------------- time zone
    IF tz = '' OR tz = 'UTC' THEN
        utc := true;
    ELSE
        utc := false;
        IF tz !~ '^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$' OR tz ~* '^right/' OR lower(tz) IN ('local', 'localtime') THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('rota.next_cron_tick: timezone: unknown time zone "%s"', tz);
        END IF;
        IF strpos(tz, '/') = 0 THEN
            utz := upper(tz);
            IF utz ~ '[0-9]' AND utz NOT IN ('GMT+0', 'GMT-0', 'GMT0', 'EST5EDT', 'CST6CDT', 'MST7MDT', 'PST8PDT') THEN
                -- a POSIX TZ string such as UTC+3, not a zone name
                RAISE EXCEPTION USING ERRCODE = '22023',
                    MESSAGE = format('rota.next_cron_tick: timezone: unknown time zone "%s"', tz);
            END IF;
            IF utz IN ('CET', 'EET', 'MET', 'WET')
               OR (utz NOT IN ('UTC', 'GMT', 'UCT', 'ZULU', 'EST', 'MST', 'HST', 'GMT+0', 'GMT-0', 'GMT0',
                               'EST5EDT', 'CST6CDT', 'MST7MDT', 'PST8PDT')
                   AND EXISTS (SELECT 1 FROM pg_catalog.pg_timezone_abbrevs WHERE abbrev = utz)) THEN
                RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
                    'rota.next_cron_tick: timezone: "%s" is a time zone abbreviation, not a zone name (use e.g. Europe/Paris)', tz);
            END IF;
        END IF;
    END IF;

    IF NOT isfinite(from_time) THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'rota.next_cron_tick: from_time: must be finite';
    END IF;
    -- t0: from_time in whole Unix seconds (floor); a tick is after from_time iff after t0.
    t0 := date_part('epoch', date_trunc('second', from_time))::bigint;

    ---------------------------------------------------------------- search
    -- Wall times are "naive" Unix seconds: the local date and time read as if UTC. The
    -- UTC offset at instant i is date_part('epoch', to_timestamp(i) AT TIME ZONE tz) - i.
    IF utc THEN
        oc := 0;
    ELSE
        BEGIN
            oc := date_part('epoch', to_timestamp(t0) AT TIME ZONE tz)::bigint - t0;
        EXCEPTION WHEN invalid_parameter_value THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('rota.next_cron_tick: timezone: unknown time zone "%s"', tz);
        END;
    END IF;
    x := t0 + oc;
    w0 := x - (((x % 60) + 60) % 60) + 60;
    IF NOT utc THEN
        -- In the second pass of a fall-back overlap the repeated wall times already fired
        -- (first occurrence): the search starts where the overlap ends.
        x := t0 - 57600; -- 16 hours: UTC offsets stay within it
        op := date_part('epoch', to_timestamp(x) AT TIME ZONE tz)::bigint - x;
        IF op > oc THEN
            ca := t0 + oc - op;
            IF date_part('epoch', to_timestamp(ca) AT TIME ZONE tz)::bigint - ca = op THEN
                cb := t0; -- the transition is in (ca, cb]
                WHILE cb - ca > 1 LOOP
                    mid := ca + (cb - ca) / 2;
                    IF date_part('epoch', to_timestamp(mid) AT TIME ZONE tz)::bigint - mid = op THEN
                        ca := mid;
                    ELSE
                        cb := mid;
                    END IF;
                END LOOP;
                x := cb + op; -- the wall time the overlap ends at
                x := x - (((x % 60) + 60) % 60) + CASE WHEN x % 60 = 0 THEN 0 ELSE 60 END;
                IF x > w0 THEN
                    w0 := x;
                END IF;
            END IF;
        END IF;
    END IF;

    FOR attempt IN 1..2000 LOOP -- one pass unless the zone breaks the one-transition assumption
        -- the first matching wall time >= w0
        days := (w0 - (((w0 % 86400) + 86400) % 86400)) / 86400;
        h := ((w0 - days * 86400) / 3600)::int;
        mi := (((w0 - days * 86400) % 3600) / 60)::int;
        z := days + 719468;
        era := (CASE WHEN z >= 0 THEN z ELSE z - 146096 END) / 146097;
        doe := z - era * 146097;
        yoe := (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        doy := doe - (365 * yoe + yoe / 4 - yoe / 100);
        mp := (5 * doy + 2) / 153;
        d := (doy - (153 * mp + 2) / 5 + 1)::int;
        mo := ((mp + 2) % 12 + 1)::int;
        y := yoe + era * 400 + CASE WHEN mo <= 2 THEN 1 ELSE 0 END;
        ystop := y + 500; -- unreachable: every accepted spec fires within ~40 years
        LOOP
            IF y > ystop THEN
                RAISE EXCEPTION 'rota.next_cron_tick: no tick found for "%" (internal error)', spec;
            END IF;
            IF (monb >> mo) & 1 = 0 THEN
                cand := (monb >> (mo + 1)) << (mo + 1);
                IF cand = 0 THEN
                    y := y + 1;
                    cand := monb;
                END IF;
                mo := round(ln((cand & (-cand))::float8) / 0.6931471805599453)::int;
                d := 1; h := 0; mi := 0;
            END IF;
            -- days since 1970-01-01 of the 1st of the month, its weekday, the month's length
            yoe := y - CASE WHEN mo <= 2 THEN 1 ELSE 0 END;
            era := (CASE WHEN yoe >= 0 THEN yoe ELSE yoe - 399 END) / 400;
            yoe := yoe - era * 400;
            days := era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + (153 * ((mo + 9) % 12) + 2) / 5 - 719468;
            wd := ((((days + 4) % 7) + 7) % 7)::int;
            mlen := CASE WHEN mo = 2 THEN
                        CASE WHEN y % 4 = 0 AND (y % 100 <> 0 OR y % 400 = 0) THEN 29 ELSE 28 END
                    WHEN mo IN (4, 6, 9, 11) THEN 30 ELSE 31 END;
            p := ((dowb >> wd) | (dowb << (7 - wd))) & 127; -- bit j: day 1+j has a matching weekday
            p := (p | (p << 7) | (p << 14) | (p << 21) | (p << 28)) << 1;
            cand := (CASE WHEN dayand THEN domb & p ELSE domb | p END) & ((1::bigint << (mlen + 1)) - 2);
            cand := (cand >> d) << d;
            IF cand = 0 THEN
                mo := mo + 1; d := 1; h := 0; mi := 0;
                IF mo > 12 THEN
                    y := y + 1;
                    mo := 1;
                END IF;
                CONTINUE;
            END IF;
            k := round(ln((cand & (-cand))::float8) / 0.6931471805599453)::int;
            IF k > d THEN
                d := k; h := 0; mi := 0;
            END IF;
            cand := (hourb >> h) << h;
            IF cand = 0 THEN
                d := d + 1; h := 0; mi := 0;
                CONTINUE;
            END IF;
            k := round(ln((cand & (-cand))::float8) / 0.6931471805599453)::int;
            IF k > h THEN
                h := k; mi := 0;
            END IF;
            cand := (minb >> mi) << mi;
            IF cand = 0 THEN
                h := h + 1; mi := 0;
                IF h > 23 THEN
                    d := d + 1;
                    h := 0;
                END IF;
                CONTINUE;
            END IF;
            mi := round(ln((cand & (-cand))::float8) / 0.6931471805599453)::int;
            EXIT;
        END LOOP;
        w := (days + d - 1) * 86400 + h * 3600 + mi * 60;

        -- the instant wall time w fires at
        IF utc THEN
            res := w;
        ELSE
            x := w - 57600; -- 16 hours: UTC offsets stay within it
            oa := date_part('epoch', to_timestamp(x) AT TIME ZONE tz)::bigint - x;
            x := w + 57600; -- 16 hours: UTC offsets stay within it
            ob := date_part('epoch', to_timestamp(x) AT TIME ZONE tz)::bigint - x;
            IF oa = ob THEN
                res := w - oa;
            ELSE
                ca := w - oa;
                cb := w - ob;
                IF date_part('epoch', to_timestamp(ca) AT TIME ZONE tz)::bigint - ca = oa THEN
                    res := ca;                                     -- exists with the earlier offset
                    IF date_part('epoch', to_timestamp(cb) AT TIME ZONE tz)::bigint - cb = ob AND cb < ca THEN
                        res := cb;                                 -- repeated: first occurrence
                    END IF;
                ELSIF date_part('epoch', to_timestamp(cb) AT TIME ZONE tz)::bigint - cb = ob THEN
                    res := cb;
                ELSE
                    -- skipped by a gap: the transition, in (cb, ca]
                    WHILE ca - cb > 1 LOOP
                        mid := cb + (ca - cb) / 2;
                        IF date_part('epoch', to_timestamp(mid) AT TIME ZONE tz)::bigint - mid = oa THEN
                            cb := mid;
                        ELSE
                            ca := mid;
                        END IF;
                    END LOOP;
                    res := ca;
                END IF;
            END IF;
        END IF;
        IF res > t0 THEN
            RETURN to_timestamp(res);
        END IF;
        w0 := w + 60;
    END LOOP;
    RAISE EXCEPTION 'rota.next_cron_tick: no tick found for "%" (internal error)', spec;
END
$fn$;

COMMENT ON FUNCTION rota.next_cron_tick(text, timestamptz, text) IS
    'First tick of a 5-field cron spec (cronie semantics) strictly after from_time, in time zone tz; see migration 0003.';
