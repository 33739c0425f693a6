#!/usr/bin/env bash
# Provisions what the dashboard's browser tests need: Debian's chromium (at /usr/bin/chromium;
# playwright's own browser downloads cannot work here) and the npm dependencies of
# tools/browser. Idempotent and quiet when everything is already there: apt runs only when
# the binary is missing, `npm ci` only when node_modules is missing or older than the lock.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  echo "browser.sh: installing chromium from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq chromium >&2
fi

dir=tools/browser
if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
  echo "browser.sh: npm ci in $dir" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  # npm ci may leave the directory's mtime untouched; mark it as fresh for the check above.
  touch "$dir/node_modules"
fi
