package sqsmode_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// statementMeter appends to the file ROTA_BENCH_PGSS names what pg_stat_statements saw of
// the benchmark's database during the drain: per statement its calls, rows and time per task.
// It needs the extension preloaded (scripts/pg-stock.sh does) and creates it in the test
// database; to see the statements inside SQL functions too, connect with
// pg_stat_statements.track = all, e.g. by adding
// `&options=-c%20pg_stat_statements.track%3Dall` to ROTA_TEST_DATABASE_URL. Only this
// database's entries are read, so other users of the cluster are neither counted nor
// reset.
type statementMeter struct {
	pool   *pgxpool.Pool
	before map[int64]pgssRow
}

type pgssRow struct {
	query                   string
	calls, rows             int64
	execMs, planMs          float64
	blksHit, blksRead, wals int64
}

func startStatementMeter(b *testing.B, pool *pgxpool.Pool) *statementMeter {
	if os.Getenv("ROTA_BENCH_PGSS") == "" {
		return nil
	}
	if _, err := pool.Exec(context.Background(), `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		b.Fatalf("pg_stat_statements: %v", err)
	}
	return &statementMeter{pool: pool, before: readPGSS(b, pool)}
}

func readPGSS(b *testing.B, pool *pgxpool.Pool) map[int64]pgssRow {
	rows, err := pool.Query(context.Background(), `
		SELECT queryid, query, calls, rows, total_exec_time, total_plan_time,
		       shared_blks_hit, shared_blks_read, wal_records
		FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		b.Fatalf("pg_stat_statements: %v", err)
	}
	defer rows.Close()
	out := map[int64]pgssRow{}
	for rows.Next() {
		var id int64
		var r pgssRow
		if err := rows.Scan(&id, &r.query, &r.calls, &r.rows, &r.execMs, &r.planMs, &r.blksHit, &r.blksRead, &r.wals); err != nil {
			b.Fatalf("pg_stat_statements: %v", err)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		b.Fatalf("pg_stat_statements: %v", err)
	}
	return out
}

// stop prints the statements that ran since start, most time first, per task of n.
func (m *statementMeter) stop(b *testing.B, n int) {
	if m == nil {
		return
	}
	var lines []string
	var totalMs float64
	for id, r := range readPGSS(b, m.pool) {
		o := m.before[id]
		calls := r.calls - o.calls
		if calls == 0 {
			continue
		}
		ms := r.execMs - o.execMs + r.planMs - o.planMs
		totalMs += ms
		q := strings.Join(strings.Fields(r.query), " ")
		if len(q) > 90 {
			q = q[:90]
		}
		lines = append(lines, fmt.Sprintf("%10.1f us/task %8d calls %8.1f rows/call %7.3f ms/call plan %6.1f%% blks/task %6.1f wal/task %5.1f  %s",
			ms*1000/float64(n), calls, float64(r.rows-o.rows)/float64(calls), ms/float64(calls),
			100*(r.planMs-o.planMs)/max(ms, 1e-9),
			float64(r.blksHit-o.blksHit+r.blksRead-o.blksRead)/float64(n), float64(r.wals-o.wals)/float64(n), q))
	}
	slices.SortFunc(lines, func(a, b string) int { return cmp.Compare(leadingNumber(b), leadingNumber(a)) })
	f, err := os.OpenFile(os.Getenv("ROTA_BENCH_PGSS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "%s: pg_stat_statements of the drain, %d tasks, %.1f us/task of statement time:\n%s\n\n",
		b.Name(), n, totalMs*1000/float64(n), strings.Join(lines, "\n"))
}

// leadingNumber is the number a line of stop starts with.
func leadingNumber(s string) float64 {
	var f float64
	_, _ = fmt.Sscan(s, &f)
	return f
}
