#!/usr/bin/env bash
# The SQL floor: how fast PostgreSQL alone runs Rota's claim and outcome statements, with no
# Go in the loop. Rota's drain rate divided by this is the share of the database's pace the
# runtime achieves (docs/performance.md).
#
#   scripts/sqlfloor.sh [flags] [SERVER_URL]      (default: $ROTA_TEST_DATABASE_URL)
#
# It creates a fresh database on the server (rota_sqlfloor_<pid>, dropped at the end),
# migrates it with `go run ./cmd/rota migrate up`, loads --tasks PENDING noop tasks in one
# INSERT ... SELECT generate_series, VACUUM ANALYZEs and CHECKPOINTs, then runs pgbench
# with --clients clients (one thread each) for --time seconds. One pgbench transaction is
# what the store-loop baseline of BenchmarkDrainPostgres does per round, as two
# autocommit statements sent the way the store sends them (--mode):
#
#   1. claim: internal/store/postgres/queries/claim_tasks.sql, read from the file at run
#      time, {{status}} = 'PENDING', $1..$4 = 'default', --batch, 'sqlfloor', '1 minute',
#      $5..$7 (the claim hint) NULL;
#   2. outcome: queries/record_outcomes.sql, read likewise, marking every claimed task
#      'succeed' (no error, no retry time, retry status 'PENDING'), fenced by its token.
#
# and reports tasks/s = transactions/s x batch, cross-checked against the rows that ended
# SUCCEEDED. The one deviation: pgbench can carry values from one statement to the next only
# through \gset, which takes a single row, so the claim's last line, `SELECT * FROM claimed
# ORDER BY ...` (50 rows of 21 columns to the client), becomes one row of six arrays (the
# ids and tokens in claim order, plus the outcome's constant arrays). The UPDATE ...
# RETURNING still computes every column. --claim-only measures what that changes: it times
# the verbatim claim (rows to the client) against the aggregated one, claims only.
#
# Flags:
#   --tasks N      PENDING tasks to load (default 500000); a timed run must not drain them
#                  (the script fails if it did: empty claims would inflate the rate)
#   --time S       seconds of pgbench (default 20)
#   --drain        instead of --time: each client runs tasks/(batch x clients)
#                  transactions, draining the backlog exactly, like BenchmarkDrainPostgres
#                  (use --tasks 50000 for the same backlog)
#   --clients C    pgbench clients, one thread each (default 2: the store-loop's goroutines)
#   --batch B      claim size (default 50: runtime.DefaultFetchBatch)
#   --ids v7|random
#                  v7 (default): time-ordered ids, a millisecond prefix and a counter, in
#                  insertion order, as store.NewID makes them; claim order (priority,
#                  scheduled_for, id) then follows the heap, 50 claimed rows sit on a few
#                  pages. random: gen_random_uuid(), claim order scattered over the heap
#                  and the primary key.
#   --explain      before the run, print EXPLAIN (ANALYZE, BUFFERS) of the claim and of the
#                  outcome statement as prepared statements, after 8 warm-up rounds on the
#                  same connection (as a pooled pgx connection runs them), plus how many
#                  generic and custom plans each got. Autocommit, as Rota runs them (inside
#                  one transaction the outcome would also fire the attempts' foreign-key
#                  check, for rows inserted by that transaction): it uses 9 x batch tasks.
#   --setup FILE   SQL run after the migration, before the load: for experiments (drop an
#                  index or a constraint, change a storage parameter) measured like the rest
#   --claim-sql FILE, --outcome-sql FILE
#                  measure a candidate statement instead of the one in queries/ (same
#                  parameters, same shape of result)
#
# libpq's PGOPTIONS reaches both psql and pgbench, e.g. PGOPTIONS='-c
# plan_cache_mode=force_generic_plan'; the settings printed are the ones in effect.
#   --no-bench     stop after loading (and --explain)
#   --claim-only   run claims only: the verbatim claim, then the aggregated one, --time
#                  seconds each (tasks are left PROCESSING)
#   --mode extended|prepared
#                  extended (default): each statement parsed and planned on every call,
#                  with its parameters, as the store's planPerCall does (pgx
#                  QueryExecModeCacheDescribe: an unnamed statement per call).
#                  prepared: prepared once per connection, PostgreSQL's plan cache decides
#                  between custom and generic plans (pgx's default statement cache).
#   --progress S   pgbench's progress report every S seconds (to stderr)
#   --keep         keep the database (its name is printed)
#
# ROTA_BIN, when set, is a built rota binary used for the migration instead of go run.
# Needs PostgreSQL's client tools (psql, pgbench): Debian's postgresql-client-15, which
# scripts/pg.sh installs.
set -euo pipefail

cd "$(dirname "$0")/.."

tasks=500000 duration=20 drain=0 clients=2 batch=50 ids=v7
explain=0 bench=1 claim_only=0 keep=0 setup='' progress=() mode=extended
claim_file=internal/store/postgres/queries/claim_tasks.sql
outcome_file=internal/store/postgres/queries/record_outcomes.sql
server_url=${ROTA_TEST_DATABASE_URL:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --tasks) tasks=$2; shift ;;
    --time) duration=$2; shift ;;
    --drain) drain=1 ;;
    --clients) clients=$2; shift ;;
    --batch) batch=$2; shift ;;
    --ids) ids=$2; shift ;;
    --explain) explain=1 ;;
    --no-bench) bench=0 ;;
    --claim-only) claim_only=1 ;;
    --keep) keep=1 ;;
    --setup) setup=$2; shift ;;
    --claim-sql) claim_file=$2; shift ;;
    --outcome-sql) outcome_file=$2; shift ;;
    --progress) progress=(-P "$2"); shift ;;
    --mode) mode=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "sqlfloor.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
    *) server_url=$1 ;;
  esac
  shift
done
for n in "$tasks" "$duration" "$clients" "$batch"; do
  case "$n" in ''|*[!0-9]*|0) echo "sqlfloor.sh: numbers must be positive integers, got '$n'" >&2; exit 2 ;; esac
done
case "$ids" in v7|random) ;; *) echo "sqlfloor.sh: --ids is v7 or random, got '$ids'" >&2; exit 2 ;; esac
case "$mode" in extended|prepared) ;; *) echo "sqlfloor.sh: --mode is extended or prepared, got '$mode'" >&2; exit 2 ;; esac
if [ -z "$server_url" ]; then
  echo "sqlfloor.sh: no server: pass a URL or set ROTA_TEST_DATABASE_URL (eval \"\$(scripts/pg.sh env)\")" >&2
  exit 2
fi

pg_tool() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  command -v "$1" || { echo "sqlfloor.sh: $1 not found (apt-get install postgresql-client)" >&2; exit 1; }
}
PSQL=$(pg_tool psql)
PGBENCH=$(pg_tool pgbench)

# with_db URL NAME: URL with its database replaced by NAME (query string kept).
with_db() {
  local base=${1%%\?*}
  local query=${1#"$base"}
  echo "${base%/*}/$2$query"
}
db=rota_sqlfloor_$$
admin_url=$server_url
db_url=$(with_db "$server_url" "$db")
q() { "$PSQL" -X -q -v ON_ERROR_STOP=1 "$@"; }
work=$(mktemp -d)
cleanup() {
  rm -rf "$work"
  if [ "$keep" = 1 ]; then
    echo "kept database $db: $db_url"
  else
    q -d "$admin_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# ---------------------------------------------------------------- database
q -d "$admin_url" -c "CREATE DATABASE $db" >/dev/null
if [ -n "${ROTA_BIN:-}" ]; then
  "$ROTA_BIN" migrate up --database-url "$db_url" >/dev/null
else
  go run ./cmd/rota migrate up --database-url "$db_url" >/dev/null
fi
if [ -n "$setup" ]; then
  q -d "$db_url" -f "$setup" >/dev/null
fi

if [ "$ids" = v7 ]; then
  # A v7-shaped uuid: 48-bit Unix milliseconds (ms, taken once), version 7, then a counter
  # where the random bits go (variant 10xx kept), so ids sort in insertion order, as
  # store.NewID's do within a batch.
  id_expr="(substr(ms, 1, 12) || '7000' || '8' || lpad(to_hex(i), 15, '0'))::uuid"
else
  id_expr="gen_random_uuid()"
fi
started=$(date +%s.%N)
q -d "$db_url" <<SQL
WITH t0 AS (SELECT lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') AS ms)
INSERT INTO rota.tasks (id, queue, kind, scheduled_for, max_attempts)
SELECT $id_expr, 'default', 'noop', now() - interval '1 second', 25
FROM t0, generate_series(1, $tasks) AS i
ORDER BY i;
VACUUM ANALYZE rota.tasks;
CHECKPOINT;
SQL
loaded=$(date +%s.%N)

# ---------------------------------------------------------------- what runs where
echo "== SQL floor: $tasks PENDING noop tasks ($ids ids), batch $batch, $clients clients, $mode protocol${setup:+, setup $setup}"
echo "statements: $claim_file, $outcome_file"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), $(uname -sr)"
q -d "$db_url" -A -t -F ' ' <<'SQL'
SELECT 'server: ' || version();
SELECT 'settings: ' || string_agg(name || '=' || current_setting(name), ' ' ORDER BY name)
FROM pg_settings
WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers',
               'max_connections', 'wal_level', 'max_wal_size', 'autovacuum', 'jit',
               'plan_cache_mode');
SQL
q -d "$db_url" -A -t -c "SELECT 'table: ' || pg_size_pretty(pg_table_size('rota.tasks')) || ' heap+toast, ' || pg_size_pretty(pg_indexes_size('rota.tasks')) || ' indexes'"
printf 'load: %.1fs (insert, vacuum analyze, checkpoint)\n' "$(echo "$loaded - $started" | bc)"

# ---------------------------------------------------------------- the statements
# strip_sql FILE: the statement without comment lines or trailing comments (pgbench scripts
# end a command at ';' and the files have none).
strip_sql() { sed -e 's/[[:space:]]*--.*$//' -e '/^[[:space:]]*$/d' "$1"; }
claim_sql=$(strip_sql "$claim_file" | sed -e "s/{{status}}/'PENDING'/g" -e 's/{{name}}/pending/g')
outcome_sql=$(strip_sql "$outcome_file")
order='ORDER BY priority DESC, scheduled_for, id'
claim_agg="WITH claimed AS (
$claim_sql
)
SELECT coalesce(array_agg(id $order), '{}') AS ids,
       coalesce(array_agg(lease_token $order), '{}') AS tokens,
       coalesce(array_agg('succeed'::text), '{}') AS kinds,
       coalesce(array_agg(''::text), '{}') AS errs,
       coalesce(array_agg(0::bigint), '{}') AS retry_ins,
       coalesce(array_agg(NULL::jsonb), '{}') AS outputs
FROM claimed"

# shellcheck disable=SC2016 # $1.. are the statements' parameters, not shell variables
# pgbench variables: in extended and prepared mode each :name is sent as a parameter ($n).
# $5..$7, the worker's claim hint (store.ClaimParams.After), are NULL: every claim walks
# its level from the start, as a worker's first claim and any after a short one do.
claim_vars() {
  sed -e 's/\$1\b/:queue/g' -e 's/\$2\b/:batch/g' -e 's/\$3\b/:worker/g' -e 's/\$4\b/:lease/g' \
      -e 's/\$5\b/NULL/g' -e 's/\$6\b/NULL/g' -e 's/\$7\b/NULL/g'
}
outcome_vars() {
  # shellcheck disable=SC2016
  sed -e 's/\$1\b/:ids/g' -e 's/\$2\b/:tokens/g' -e 's/\$3\b/:kinds/g' \
      -e 's/\$4\b/:errs/g' -e 's/\$5\b/:retry_ins/g' -e 's/\$6\b/:outputs/g'
}
{
  printf '%s\n' "$claim_agg" | claim_vars
  printf '\\gset\n'
  printf '%s;\n' "$outcome_sql" | outcome_vars
} > "$work/floor.sql"
printf '%s;\n' "$claim_sql" | claim_vars > "$work/claim-verbatim.sql"
{ printf '%s\n' "$claim_agg" | claim_vars; printf '\\gset\n'; } > "$work/claim-agg.sql"
pgbench_vars=(-D queue=default -D "batch=$batch" -D worker=sqlfloor -D "lease=1 minute")

# ---------------------------------------------------------------- explain
if [ "$explain" = 1 ]; then
  echo
  echo "== EXPLAIN (ANALYZE, BUFFERS, WAL) at $tasks PENDING rows ($mode: $([ "$mode" = extended ] && echo "custom plans, as planPerCall" || echo "plan cache decides"); autocommit; after 8 warm-up rounds)"
  claim_exec="EXECUTE claim('default', $batch, 'sqlfloor', '1 minute', NULL, NULL, NULL)"
  # The tokens of the tasks just claimed, for the outcome statement.
  take="SELECT coalesce(array_agg(id ORDER BY id), '{}') AS ids,
       coalesce(array_agg(lease_token ORDER BY id), '{}') AS tokens,
       coalesce(array_agg('succeed'::text), '{}') AS kinds, coalesce(array_agg(''::text), '{}') AS errs,
       coalesce(array_agg(0::bigint), '{}') AS retry_ins,
       coalesce(array_agg(NULL::jsonb), '{}') AS outputs
FROM rota.tasks WHERE status = 'PROCESSING' AND worker_id = 'sqlfloor'"
  outcome_exec="EXECUTE outcome(:'ids', :'tokens', :'kinds', :'errs', :'retry_ins', :'outputs')"
  {
    if [ "$mode" = extended ]; then echo "SET plan_cache_mode = force_custom_plan;"; fi
    # The statements are functions (migration 0027): auto_explain shows the plans of the
    # statements inside them, sent to this client as LOG messages.
    printf '%s\n' "LOAD 'auto_explain';" "SET auto_explain.log_nested_statements = on;" \
      "SET auto_explain.log_analyze = on;" "SET auto_explain.log_buffers = on;" "SET auto_explain.log_wal = on;" \
      "SET auto_explain.log_min_duration = -1;"
    printf 'PREPARE claim(text, bigint, text, interval, smallint, timestamptz, uuid) AS\n%s;\n' "$claim_sql"
    printf 'PREPARE outcome(uuid[], uuid[], text[], text[], bigint[], jsonb[]) AS\n%s;\n' "$outcome_sql"
    for _ in 1 2 3 4 5 6 7 8; do
      printf '%s\n' '\o /dev/null' "$claim_exec;" "$take \gset" "$outcome_exec;" '\o'
    done
    printf '%s\n' "SET auto_explain.log_min_duration = 0;" "SET client_min_messages = log;"
    printf '%s\n' '\echo -- claim: claim_tasks.sql'
    printf '%s\n' "EXPLAIN (ANALYZE, BUFFERS, WAL) $claim_exec;" "$take \gset"
    printf '%s\n' '\echo -- outcome: record_outcomes.sql, every task succeed'
    printf '%s\n' "EXPLAIN (ANALYZE, BUFFERS, WAL) $outcome_exec;"
    printf '%s\n' "SET client_min_messages = notice;" "SET auto_explain.log_min_duration = -1;"
    printf '%s\n' 'SELECT name, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name;'
  } > "$work/explain.sql"
  q -d "$db_url" -f "$work/explain.sql"
fi

[ "$bench" = 1 ] || exit 0

# ---------------------------------------------------------------- pgbench
# run_pgbench SCRIPT LABEL: runs SCRIPT, prints pgbench's summary, sets tps.
run_pgbench() {
  local limit=(-T "$duration")
  if [ "$drain" = 1 ]; then
    local per=$((tasks / (batch * clients)))
    limit=(-t "$per")
  fi
  echo
  echo "== pgbench: $2"
  echo "$PGBENCH -n -M $mode -c $clients -j $clients ${limit[*]} -r -f <script> ${pgbench_vars[*]}"
  "$PGBENCH" -n -M "$mode" -c "$clients" -j "$clients" "${limit[@]}" ${progress[@]+"${progress[@]}"} -r -f "$1" "${pgbench_vars[@]}" "$db_url" \
    > "$work/out" 2> >(tee "$work/err" >&2) || { cat "$work/out" >&2; exit 1; }
  grep -E '^(number of transactions actually processed|number of failed|latency average|tps|  +[0-9.]+ +[0-9]+ +)' "$work/out" \
    | sed -E 's/^( +[0-9.]+ +[0-9]+ +)(.{0,60}).*/\1\2 .../'
  tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$work/out")
}

if [ "$claim_only" = 1 ]; then
  drain=0
  run_pgbench "$work/claim-verbatim.sql" "verbatim claim, $batch rows of 21 columns to the client"
  v=$tps
  run_pgbench "$work/claim-agg.sql" "aggregated claim (as in the floor script), one row of arrays"
  a=$tps
  left=$(q -d "$db_url" -A -t -c "SELECT count(*) FROM rota.tasks WHERE status = 'PENDING'")
  [ "$left" -gt 0 ] || { echo "sqlfloor.sh: backlog exhausted; raise --tasks" >&2; exit 1; }
  printf '\nclaims only: verbatim %.0f tasks/s, aggregated %.0f tasks/s (verbatim/aggregated %.2f)\n' \
    "$(echo "$v * $batch" | bc)" "$(echo "$a * $batch" | bc)" "$(echo "$v / $a" | bc -l)"
  exit 0
fi

# server_cpu_ticks: CPU the server's processes used so far, in clock ticks: the postmaster's
# reaped children (cutime + cstime: backends that have exited) plus its live children.
# Only on this machine's own server (its data directory readable), else empty.
server_cpu_ticks() {
  local dir pid
  dir=$(q -d "$db_url" -A -t -c "SHOW data_directory" 2>/dev/null) || return 0
  pid=$(head -n 1 "$dir/postmaster.pid" 2>/dev/null) || return 0
  [ -r "/proc/$pid/stat" ] || return 0
  {
    awk '{ print $16 + $17 }' "/proc/$pid/stat"
    for c in $(pgrep -P "$pid"); do awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null; done
  } | awk '{ s += $1 } END { print s }'
}
cpu_before=$(server_cpu_ticks)
run_pgbench "$work/floor.sql" "claim + outcome, $batch tasks per transaction"
sleep 0.2 # the backends exit and are reaped
cpu_after=$(server_cpu_ticks)
read -r succeeded pending others < <(q -d "$db_url" -A -t -F ' ' -c \
  "SELECT count(*) FILTER (WHERE status = 'SUCCEEDED'), count(*) FILTER (WHERE status = 'PENDING'),
          count(*) FILTER (WHERE status NOT IN ('SUCCEEDED', 'PENDING')) FROM rota.tasks")
txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")
echo
echo "tasks: $succeeded SUCCEEDED, $pending PENDING, $others other"
if [ "$drain" = 0 ] && [ "$pending" -lt $((batch * clients)) ]; then
  echo "sqlfloor.sh: the backlog ran out during the run (empty claims inflate the rate); raise --tasks" >&2
  exit 1
fi
if [ "$succeeded" -ne $((txns * batch)) ]; then
  echo "sqlfloor.sh: warning: $succeeded tasks succeeded, expected $txns transactions x $batch" >&2
fi
printf 'SQL floor: %.0f tasks/s (%.1f transactions/s x %d)\n' "$(echo "$tps * $batch" | bc)" "$tps" "$batch"
if [ -n "$cpu_before" ] && [ -n "$cpu_after" ] && [ "$succeeded" -gt 0 ]; then
  printf 'server CPU: %.1f us/task\n' "$(echo "($cpu_after - $cpu_before) * 1000000 / $(getconf CLK_TCK) / ($txns * $batch)" | bc -l)"
fi
