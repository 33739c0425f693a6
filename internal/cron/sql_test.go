package cron_test

// rota.next_cron_tick (migration 0003) against the Go implementation.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/cron"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

const batchSQL = `
SELECT rota.next_cron_tick(u.s, u.t, u.z)
FROM unnest($1::text[], $2::timestamptz[], $3::text[]) WITH ORDINALITY AS u(s, t, z, i)
ORDER BY u.i`

// sqlNextBatch evaluates rota.next_cron_tick over the cases in one statement.
func sqlNextBatch(ctx context.Context, pool *pgxpool.Pool, specs []string, afters []time.Time, zones []string) ([]time.Time, error) {
	rows, err := pool.Query(ctx, batchSQL, specs, afters, zones)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]time.Time, 0, len(specs))
	for rows.Next() {
		var t time.Time
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t.UTC())
	}
	return out, rows.Err()
}

func sqlNext(ctx context.Context, pool *pgxpool.Pool, spec string, after time.Time, tz string) (time.Time, error) {
	var t time.Time
	err := pool.QueryRow(ctx, `SELECT rota.next_cron_tick($1, $2, $3)`, spec, after, tz).Scan(&t)
	return t.UTC(), err
}

// TestSQLMatchesGo is the property test: random specs using every syntax feature, random
// instants 2000-2035 (a good part near DST transitions and month ends), stable zones.
func TestSQLMatchesGo(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	seed := rng.Uint64()
	rng = rand.New(rand.NewPCG(seed, 7))
	const n = 24000
	locs := map[string]*time.Location{}
	trans := map[string][]time.Time{}
	for _, z := range stableZones {
		locs[z] = mustLoad(z)
		trans[z] = transitions(locs[z])
	}
	specs, afters, zones := make([]string, n), make([]time.Time, n), make([]string, n)
	for i := range n {
		specs[i] = randSpec(rng)
		zones[i] = stableZones[rng.IntN(len(stableZones))]
		afters[i] = randInstant(rng, locs[zones[i]], trans[zones[i]])
	}
	start := time.Now()
	got, err := sqlNextBatch(ctx, pool, specs, afters, zones)
	if err != nil {
		// Find the failing case.
		for i := range n {
			if _, err1 := sqlNext(ctx, pool, specs[i], afters[i], zones[i]); err1 != nil {
				t.Fatalf("next_cron_tick(%q, %s, %q): %v", specs[i], afters[i].Format(time.RFC3339Nano), zones[i], err1)
			}
		}
		t.Fatal(err)
	}
	t.Logf("%d cases in SQL in %s (seed %d)", n, time.Since(start), seed)
	if len(got) != n {
		t.Fatalf("%d results for %d cases", len(got), n)
	}
	bad := 0
	for i := range n {
		s, err := cron.Parse(specs[i])
		if err != nil {
			t.Fatal(err)
		}
		want := s.Next(afters[i], locs[zones[i]])
		if !got[i].Equal(want) {
			if bad++; bad <= 20 {
				loc := locs[zones[i]]
				t.Errorf("next_cron_tick(%q, %s, %q) = %s, Go %s", specs[i], afters[i].Format(time.RFC3339Nano), zones[i],
					got[i].In(loc).Format(time.RFC3339), want.In(loc).Format(time.RFC3339))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d cases differ (seed %d)", bad, n, seed)
	}
}

func TestSQLEdgeCases(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	var specs, zones []string
	var afters []time.Time
	for _, c := range edgeCases {
		after, err := time.Parse(time.RFC3339Nano, c.after)
		if err != nil {
			t.Fatal(err)
		}
		specs, afters, zones = append(specs, c.spec), append(afters, after), append(zones, c.tz)
	}
	got, err := sqlNextBatch(ctx, pool, specs, afters, zones)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range edgeCases {
		want, _ := time.Parse(time.RFC3339, c.want)
		if !got[i].Equal(want) {
			t.Errorf("next_cron_tick(%q, %s, %q) = %s, want %s", c.spec, c.after, c.tz, got[i].Format(time.RFC3339), c.want)
		}
	}
	// Every valid spec is accepted, and gives what Go gives.
	after := time.Date(2024, 2, 28, 23, 59, 30, 0, time.UTC)
	for _, spec := range validSpecs {
		got, err := sqlNext(ctx, pool, spec, after, "Europe/Berlin")
		want, _ := cron.NextTick(spec, after, "Europe/Berlin")
		if err != nil || !got.Equal(want) {
			t.Errorf("next_cron_tick(%q) = %s, %v; Go %s", spec, got, err, want)
		}
	}
}

// TestSQLErrors: every invalid spec raises 22023 with the message Go gives, prefixed.
func TestSQLErrors(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	after := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	check := func(spec, tz, field string, goErr error) {
		t.Helper()
		start := time.Now()
		_, err := sqlNext(ctx, pool, spec, after, tz)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "22023" {
			t.Errorf("next_cron_tick(%q, tz %q) = %v, want SQLSTATE 22023", spec, tz, err)
			return
		}
		if prefix := "rota.next_cron_tick: " + field + ": "; !strings.HasPrefix(pgErr.Message, prefix) {
			t.Errorf("next_cron_tick(%q, tz %q): %q, want it to name %s", spec, tz, pgErr.Message, field)
		}
		if goErr != nil && pgErr.Message != "rota.next_cron_tick: "+goErr.Error() {
			t.Errorf("next_cron_tick(%q, tz %q): %q; Go says %q", spec, tz, pgErr.Message, goErr)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("next_cron_tick(%q, tz %q) took %s to fail", spec, tz, d)
		}
	}
	for _, c := range invalidSpecs {
		_, goErr := cron.Parse(c.spec)
		check(c.spec, "UTC", c.field, goErr)
	}
	for _, tz := range []string{"Mars/Base", "CET", "cet", "WET", "UTC+3", "<+05>-5", "Local", "localtime",
		"right/UTC", "Europe/../Europe/Berlin", "Europe/Berlin ", "PST", "CEST", "Etc/Nowhere"} {
		_, goErr := cron.NextTick("* * * * *", after, tz)
		if tz == "PST" || tz == "CEST" {
			goErr = nil // Go: unknown zone; SQL: an abbreviation
		}
		check("* * * * *", tz, "timezone", goErr)
	}
	// An infinite from_time is an error; NULL arguments give NULL (STRICT).
	var pgErr *pgconn.PgError
	var res *time.Time
	if err := pool.QueryRow(ctx, `SELECT rota.next_cron_tick('* * * * *', 'infinity')`).Scan(&res); !errors.As(err, &pgErr) || pgErr.Code != "22023" {
		t.Errorf("infinity: %v", err)
	}
	for _, q := range []string{
		`SELECT rota.next_cron_tick(NULL, now())`,
		`SELECT rota.next_cron_tick('* * * * *', NULL)`,
		`SELECT rota.next_cron_tick('* * * * *', now(), NULL)`,
	} {
		if err := pool.QueryRow(ctx, q).Scan(&res); err != nil || res != nil {
			t.Errorf("%s = %v, %v; want NULL", q, res, err)
		}
	}
	// The default zone is UTC; '' is UTC too; PostgreSQL ignores the case of zone names.
	for _, q := range []string{
		`SELECT rota.next_cron_tick('0 12 * * *', '2024-01-01 00:00Z')`,
		`SELECT rota.next_cron_tick('0 12 * * *', '2024-01-01 00:00Z', '')`,
		`SELECT rota.next_cron_tick('0 13 * * *', '2024-01-01 00:00Z', 'europe/berlin')`,
	} {
		if err := pool.QueryRow(ctx, q).Scan(&res); err != nil || res == nil || !res.Equal(time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)) {
			t.Errorf("%s = %v, %v", q, res, err)
		}
	}
	// The session time zone does not matter.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, stz := range []string{"UTC", "Pacific/Kiritimati", "America/Adak"} {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`SET TIME ZONE '%s'`, stz)); err != nil {
			t.Fatal(err)
		}
		for _, c := range edgeCases[:20] {
			after, _ := time.Parse(time.RFC3339Nano, c.after)
			want, _ := time.Parse(time.RFC3339, c.want)
			var got time.Time
			if err := conn.QueryRow(ctx, `SELECT rota.next_cron_tick($1, $2, $3)`, c.spec, after, c.tz).Scan(&got); err != nil || !got.Equal(want) {
				t.Errorf("session zone %s: next_cron_tick(%q, %s) = %s, %v; want %s", stz, c.spec, c.after, got, err, c.want)
			}
		}
	}
	if _, err := conn.Exec(ctx, `RESET TIME ZONE`); err != nil {
		t.Fatal(err)
	}
}

// TestSQLParseAgreement: on mutated specs (mostly invalid) SQL accepts exactly what Go
// accepts, with the same error message, and otherwise the same tick.
func TestSQLParseAgreement(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `
		CREATE FUNCTION pg_temp.try_tick(s text, t timestamptz, z text) RETURNS text LANGUAGE plpgsql AS $$
		BEGIN
			RETURN 'ok ' || date_part('epoch', rota.next_cron_tick(s, t, z))::bigint;
		EXCEPTION WHEN others THEN
			RETURN SQLSTATE || ' ' || SQLERRM;
		END $$`); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	const alphabet = "0123456789012345*/-,@ \tabcdefjlmnorstuwyADFJMNOSTW\x00é"
	var specs []string
	for _, c := range invalidSpecs {
		specs = append(specs, c.spec)
	}
	specs = append(specs, validSpecs...)
	for range 6000 {
		b := []byte(randSpec(rng))
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(b) + 1)
			c := alphabet[rng.IntN(len(alphabet))]
			switch rng.IntN(3) {
			case 0: // insert
				b = append(b[:i], append([]byte{c}, b[i:]...)...)
			case 1: // replace
				if i < len(b) {
					b[i] = c
				}
			default: // delete
				if i < len(b) {
					b = append(b[:i], b[i+1:]...)
				}
			}
		}
		if s := string(b); utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
			specs = append(specs, s)
		}
	}
	after := time.Date(2024, 10, 27, 0, 17, 0, 0, time.UTC)
	rows, err := conn.Query(ctx, `SELECT pg_temp.try_tick(s, $2, 'Europe/Berlin') FROM unnest($1::text[]) WITH ORDINALITY AS u(s, i) ORDER BY i`, specs, after)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	invalid := 0
	for i, spec := range specs {
		var want string
		if next, err := cron.NextTick(spec, after, "Europe/Berlin"); err != nil {
			want = "22023 rota.next_cron_tick: " + err.Error()
			invalid++
		} else {
			want = fmt.Sprintf("ok %d", next.Unix())
		}
		if got[i] != want {
			t.Errorf("spec %q: SQL %q, Go %q", spec, got[i], want)
		}
	}
	t.Logf("%d specs, %d invalid", len(specs), invalid)
}

// benchSpecs is a mix of common and awkward specs for the benchmarks.
var benchSpecs = []string{
	"*/15 * * * *", "0 * * * *", "0 9 * * mon-fri", "30 2 * * *", "@daily", "@weekly",
	"0 0 1 * *", "5/10 8-18 * * 1-5", "0 0 29 2 *", "0,30 9,17 * jan-jun *", "0 0 13 * 5",
	"0 0 */2 * 5", "15 3 1,15 * *",
}

var benchZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"}

const benchCalls = 100_000

// BenchmarkNextCronTickSQL: 100,000 calls in one statement over generate_series.
func BenchmarkNextCronTickSQL(b *testing.B) {
	pool := pgtest.NewPool(b)
	ctx := context.Background()
	for _, bc := range []struct {
		name  string
		zones []string
	}{{"UTC", []string{"UTC"}}, {"zones", benchZones}} {
		b.Run(bc.name, func(b *testing.B) {
			var n int64
			for b.Loop() {
				err := pool.QueryRow(ctx, `
					SELECT count(rota.next_cron_tick(
					           ($1::text[])[1 + i % cardinality($1::text[])],
					           timestamptz '2024-01-01 00:00:00Z' + i * interval '7 minutes 13.5 seconds',
					           ($2::text[])[1 + (i / 7) % cardinality($2::text[])]))
					FROM generate_series(0, $3::int - 1) AS i`, benchSpecs, bc.zones, benchCalls).Scan(&n)
				if err != nil || n != benchCalls {
					b.Fatal(n, err)
				}
			}
			b.ReportMetric(float64(benchCalls*b.N)/b.Elapsed().Seconds(), "calls/s")
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(benchCalls*b.N), "ns/call")
		})
	}
}

// BenchmarkNext: the Go side over the same specs and instants (one op = one call).
func BenchmarkNext(b *testing.B) {
	specs := make([]*cron.Spec, len(benchSpecs))
	for i, s := range benchSpecs {
		specs[i], _ = cron.Parse(s)
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, bc := range []struct {
		name  string
		zones []string
	}{{"UTC", []string{"UTC"}}, {"zones", benchZones}} {
		locs := make([]*time.Location, len(bc.zones))
		for i, z := range bc.zones {
			locs[i] = mustLoad(z)
		}
		b.Run(bc.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				after := base.Add(time.Duration(i%benchCalls) * 433500 * time.Millisecond)
				_ = specs[i%len(specs)].Next(after, locs[(i/7)%len(locs)])
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// BenchmarkParse measures parsing alone.
func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		for _, s := range benchSpecs {
			if _, err := cron.Parse(s); err != nil {
				b.Fatal(err)
			}
		}
	}
}
