#!/usr/bin/env bash
# Starts (or reuses) a private PostgreSQL cluster with STOCK settings, for benchmarks.
#
# scripts/pg.sh starts the test cluster, which trades durability for speed (fsync=off,
# synchronous_commit=off, full_page_writes=off, max_connections=300). Figures measured
# there flatter anything that commits often, so a benchmark should also be run here:
# a cluster as initdb configures it (fsync, synchronous_commit and full_page_writes on,
# shared_buffers 128MB, max_connections 100), listening on a free loopback port. The one
# addition is shared_preload_libraries = 'pg_stat_statements' (set with ALTER SYSTEM), so
# benchmarks can read per-statement work (bench/'s pressure workload reads the claim's
# blocks per task from it; CREATE EXTENSION pg_stat_statements in a database to query it).
# It costs every statement a hash lookup and a few counters, on every system alike.
#
#   eval "$(scripts/pg-stock.sh env)"   # exports ROTA_TEST_DATABASE_URL (the stock cluster)
#   scripts/pg-stock.sh start|url|stop|restart
#
# A cluster this script starts loads pg_stat_statements at once (it is restarted right
# after its first start, before anyone connects). A cluster that was already running
# without it is never restarted behind its users' backs: the setting is made and a note
# says to run `scripts/pg-stock.sh restart` (which drops every connection) to load it.
#
# The data directory is ROTA_PG_STOCK_DIR (default /tmp/rota-pg-stock); it is separate from
# pg.sh's, so both clusters can run side by side. Stop it when done: it holds memory.
set -euo pipefail
export ROTA_PG_DIR=${ROTA_PG_STOCK_DIR:-/tmp/rota-pg-stock} ROTA_PG_PROFILE=stock
pg="$(dirname "$0")/pg.sh"

# running: the cluster answers on its recorded port.
running() {
  [ -f "$ROTA_PG_DIR/port" ] &&
    psql "postgres://postgres@127.0.0.1:$(cat "$ROTA_PG_DIR/port")/postgres?sslmode=disable" -Atqc 'SELECT 1' >/dev/null 2>&1
}

# preload_pgss URL: true when pg_stat_statements is loaded; otherwise sets it for the next
# start and returns false.
preload_pgss() {
  local have
  have=$(psql "$1" -Atqc 'SHOW shared_preload_libraries')
  case ",${have// /}," in *,pg_stat_statements,*) return 0 ;; esac
  psql "$1" -Atqc "ALTER SYSTEM SET shared_preload_libraries = '${have:+$have,}pg_stat_statements'" >/dev/null
  return 1
}

# start_stock: starts or reuses the cluster, loading pg_stat_statements as said above, and
# prints its URL.
start_stock() {
  local was_running=false url
  if running; then was_running=true; fi
  url=$("$pg" start)
  if ! preload_pgss "$url"; then
    if $was_running; then
      echo "pg-stock.sh: pg_stat_statements is set but not loaded; run 'scripts/pg-stock.sh restart' to load it (drops every connection)" >&2
    else
      url=$("$pg" restart)
    fi
  fi
  echo "$url"
}

case "${1:-start}" in
  start|url) start_stock ;;
  env) echo "export ROTA_TEST_DATABASE_URL='$(start_stock)'" ;;
  restart)
    if running; then preload_pgss "$("$pg" url)" || true; fi
    "$pg" stop
    start_stock
    ;;
  *) exec "$pg" "$@" ;;
esac
