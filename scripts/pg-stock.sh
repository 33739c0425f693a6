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
ROTA_PG_DIR=${ROTA_PG_STOCK_DIR:-/tmp/rota-pg-stock} ROTA_PG_PROFILE=stock \
  exec "$(dirname "$0")/pg.sh" "$@"
