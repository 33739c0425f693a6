#!/usr/bin/env bash
# Starts (or reuses) a private PostgreSQL cluster with STOCK settings, for benchmarks.
#
# scripts/pg.sh starts the test cluster, which trades durability for speed (fsync=off,
# synchronous_commit=off, full_page_writes=off, max_connections=300). Figures measured
# there flatter anything that commits often, so a benchmark should also be run here:
# a cluster exactly as initdb configures it (fsync, synchronous_commit and
# full_page_writes on, shared_buffers 128MB, max_connections 100), listening on a free
# loopback port. Nothing else is changed.
#
#   eval "$(scripts/pg-stock.sh env)"   # exports ROTA_TEST_DATABASE_URL (the stock cluster)
#   scripts/pg-stock.sh start|url|stop|restart
#
# The data directory is ROTA_PG_STOCK_DIR (default /tmp/rota-pg-stock); it is separate from
# pg.sh's, so both clusters can run side by side. Stop it when done: it holds memory.
set -euo pipefail

PGDATA_DIR=${ROTA_PG_STOCK_DIR:-/tmp/rota-pg-stock}

pg_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
  done
  return 1
}

as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 - <<'PY' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

url() { echo "postgres://postgres@127.0.0.1:$(cat "$PGDATA_DIR/port")/postgres?sslmode=disable"; }

start() {
  local bin
  if ! bin=$(pg_bin); then
    echo "pg-stock.sh: no PostgreSQL binaries; run scripts/pg.sh once (it installs them)" >&2
    exit 1
  fi
  mkdir -p "$PGDATA_DIR"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$PGDATA_DIR"; fi
  if [ -f "$PGDATA_DIR/port" ] && as_pg "$bin/pg_ctl" -D "$PGDATA_DIR/data" status >/dev/null 2>&1; then
    url; return 0
  fi
  if [ ! -f "$PGDATA_DIR/data/PG_VERSION" ]; then
    # initdb syncs its files (no --no-sync): this cluster is meant to behave like a real one.
    as_pg "$bin/initdb" -D "$PGDATA_DIR/data" -U postgres --auth=trust -E UTF8 >/dev/null
  fi
  local port; port=$(free_port)
  echo "$port" > "$PGDATA_DIR/port"
  # Only where to listen is set; every other setting is initdb's default.
  as_pg "$bin/pg_ctl" -D "$PGDATA_DIR/data" -l "$PGDATA_DIR/log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $PGDATA_DIR" >/dev/null
  url
}

stop() {
  local bin; bin=$(pg_bin) || return 0
  if [ -d "$PGDATA_DIR/data" ]; then
    as_pg "$bin/pg_ctl" -D "$PGDATA_DIR/data" -m fast stop >/dev/null 2>&1 || true
  fi
}

case "${1:-start}" in
  start) start ;;
  url) start ;;
  env) echo "export ROTA_TEST_DATABASE_URL='$(start)'" ;;
  stop) stop ;;
  restart) stop; start ;;
  *) echo "usage: $0 start|url|env|stop|restart" >&2; exit 2 ;;
esac
