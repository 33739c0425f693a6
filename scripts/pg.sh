#!/usr/bin/env bash
# Starts (or reuses) a private PostgreSQL cluster on a free loopback port and prints its URL.
# Installs Debian's postgresql package when the binaries are missing. Idempotent: a second
# call finds the running cluster through its pid file and prints the same URL.
#
#   eval "$(scripts/pg.sh env)"   # exports ROTA_TEST_DATABASE_URL
#   scripts/pg.sh start|url|env|stop|restart
#
# The test cluster trades durability for speed (fsync=off, synchronous_commit=off,
# full_page_writes=off, max_connections=300). With ROTA_PG_PROFILE=stock (what
# scripts/pg-stock.sh sets) the cluster is exactly as initdb configures it instead, for
# benchmarks.
set -euo pipefail

PGDATA_DIR=${ROTA_PG_DIR:-/tmp/rota-pg}
PROFILE=${ROTA_PG_PROFILE:-test}
case "$PROFILE" in
  test)
    # Durability traded for speed; plenty of connections for the concurrency tests.
    INITDB_OPTS=(--no-sync)
    SERVER_OPTS="-c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    ;;
  stock)
    # initdb syncs its files and every setting but where to listen is initdb's default:
    # this cluster is meant to behave like a real one.
    INITDB_OPTS=()
    SERVER_OPTS=""
    ;;
  *) echo "pg.sh: ROTA_PG_PROFILE must be test or stock, got $PROFILE" >&2; exit 2 ;;
esac
pg_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
  done
  return 1
}

ensure_installed() {
  if ! pg_bin >/dev/null; then
    echo "pg.sh: installing postgresql from Debian" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
  fi
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
  ensure_installed
  local bin; bin=$(pg_bin)
  mkdir -p "$PGDATA_DIR"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$PGDATA_DIR"; fi
  if [ -f "$PGDATA_DIR/port" ] && as_pg "$bin/pg_ctl" -D "$PGDATA_DIR/data" status >/dev/null 2>&1; then
    url; return 0
  fi
  if [ ! -f "$PGDATA_DIR/data/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$PGDATA_DIR/data" -U postgres --auth=trust "${INITDB_OPTS[@]}" -E UTF8 >/dev/null
  fi
  local port; port=$(free_port)
  echo "$port" > "$PGDATA_DIR/port"
  as_pg "$bin/pg_ctl" -D "$PGDATA_DIR/data" -l "$PGDATA_DIR/log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $PGDATA_DIR $SERVER_OPTS" >/dev/null
  url
}

stop() {
  local bin; bin=$(pg_bin) || return 0
  if [ -d "$PGDATA_DIR/data" ]; then
    as_pg "$bin/pg_ctl" -D "$PGDATA_DIR/data" -m fast stop >/dev/null 2>&1 || true
  fi
}

case "${1:-start}" in
  start|url) start ;;
  env) echo "export ROTA_TEST_DATABASE_URL='$(start)'" ;;
  stop) stop ;;
  restart) stop; start ;;
  *) echo "usage: $0 start|url|env|stop|restart" >&2; exit 2 ;;
esac
