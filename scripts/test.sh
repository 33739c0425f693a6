#!/usr/bin/env bash
# The whole test suite, provisioning what it needs: PostgreSQL (installed from Debian when
# missing, started as a private cluster on a free loopback port). Extra arguments go to
# `go test` (e.g. scripts/test.sh -run TestCrash ./internal/...).
set -euo pipefail
cd "$(dirname "$0")/.."

eval "$(scripts/pg.sh env)"
export ROTA_REQUIRE_INTEGRATION=1

if [ $# -eq 0 ]; then
  set -- ./...
fi
go vet ./...
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
go test -race -count=1 -timeout 20m "$@"

# A short, fixed-length fuzz run of the request decoders (the seeds also run above as
# plain tests). Only for the full suite, not for a targeted run.
if [ "$*" = "./..." ]; then
  go test -run '^$' -fuzz '^FuzzCreateTask$' -fuzztime "${ROTA_FUZZ_TIME:-20s}" ./internal/api/
fi
