#!/usr/bin/env bash
# The whole test suite, provisioning what it needs: PostgreSQL (installed from Debian when
# missing, started as a private cluster on a free loopback port), fauxqs (the SQS emulator,
# from npm) and Chromium with the browser tests' npm packages. Extra arguments go to
# `go test` (e.g. scripts/test.sh -run TestCrash ./internal/...).
set -euo pipefail
cd "$(dirname "$0")/.."

eval "$(scripts/pg.sh env)"

# Python 3.11+ for the Python SDK's tests (e2e/sdk_python_test.go runs sdk/python/tests;
# standard library only): Debian 12's python3 is 3.11.
if ! command -v python3 >/dev/null; then
  echo "test.sh: installing python3 from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq python3 >&2
fi

# Node.js for the npm-based test tools (Debian's nodejs and npm when missing), then fauxqs,
# the SQS emulator of internal/testutil/sqstest: `npm ci` only when node_modules is missing
# or older than the lock file.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "test.sh: installing nodejs and npm from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq nodejs npm >&2
fi
# fauxqs 1.9.2 needs Node.js 20 (the machines have it; Debian 12's own nodejs is 18): say
# so plainly rather than fail later inside the emulator.
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "test.sh: fauxqs needs Node.js 20 or newer, found $(node --version)" >&2
  exit 1
fi
fauxqs=tools/fauxqs
if [ ! -d "$fauxqs/node_modules" ] || [ "$fauxqs/package-lock.json" -nt "$fauxqs/node_modules" ]; then
  echo "test.sh: npm ci in $fauxqs" >&2
  (cd "$fauxqs" && npm ci --no-audit --no-fund --loglevel=error >&2)
  touch "$fauxqs/node_modules" # npm ci may leave its mtime as it was
fi

scripts/browser.sh # Chromium and tools/browser's npm packages, for e2e/dashboard_test.go
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
# plain tests). Only for the full suite, not for a targeted run. The budget is a count of
# executions, not a duration: Go 1.26's fuzz coordinator can fail a duration run with a
# bare "context deadline exceeded" when a starved worker is mid-call at the deadline
# (golang/go#75804); a count has no deadline to race.
if [ "$*" = "./..." ]; then
  go test -run '^$' -fuzz '^FuzzCreateTask$' -fuzztime "${ROTA_FUZZ_EXECS:-100000}x" ./internal/api/
  go test -run '^$' -fuzz '^FuzzCreateFlow$' -fuzztime "${ROTA_FUZZ_EXECS:-100000}x" ./internal/api/
  # The Rota-vs-River benchmark is a module of its own (bench/README.md): vet it and run
  # its smoke test (one tiny pair of every workload against the test cluster).
  (cd bench && go vet ./... && go test -count=1 ./...)
fi
