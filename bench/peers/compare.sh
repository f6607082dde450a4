#!/usr/bin/env bash
# Print alkstore's queue benchmark beside a peer's, scenario by scenario, with
# the ratio. Both run in this invocation, on this machine, back to back.
#
#   bench/peers/compare.sh honker          # SQLite: alkstore vs honker 0.5
#   bench/peers/compare.sh postgres [URL]  # PostgreSQL: alkstore vs pg-boss, graphile-worker
#
# BENCH_SCALE (default 1.0) scales alkstore and honker job counts; BENCH_JOBS
# sets the node peers' job count.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
peer="${1:-honker}"
scale="${BENCH_SCALE:-1.0}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

cargo build --release -q -p alkstore-cli --manifest-path "$root/Cargo.toml"
alk="$root/target/release/alk"

case "$peer" in
  honker)
    (cd "$here/honker" && CARGO_TARGET_DIR="$here/honker/target" cargo build --release -q)
    "$alk" bench queue --scale "$scale" \
      --scenario enqueue_single_4tasks --scenario enqueue_batch_100 \
      --scenario claim_ack_single_20k --scenario claim128_batch_ack_100k \
      --scenario end_to_end_1p2c | tee "$out/alk.txt"
    BENCH_SCALE="$scale" "$here/honker/target/release/honker-bench" | tee "$out/peer.txt"
    peers="honker"
    ;;
  postgres)
    url="${2:-${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}}"
    "$alk" bench queue --on "$url" --scale "$scale" --scenario insert_50k --scenario work_50k | tee "$out/alk.txt"
    DATABASE_URL="$url" "$here/node/run.sh" | tee "$out/peer.txt"
    peers="pg-boss graphile-worker"
    ;;
  *) echo "usage: $0 honker | postgres [URL]" >&2; exit 2 ;;
esac

rate() { # file peer scenario -> jobs/s
  grep -E "^bench peer=$2 .*scenario=$3 " "$1" | sed -E 's/.*jobs_per_s=([0-9.]+).*/\1/' | head -1
}
echo
printf '%-26s %14s' scenario "alkstore/s"
for p in $peers; do printf ' %16s %8s' "$p/s" "ratio"; done
echo
for s in $(grep -E '^bench ' "$out/alk.txt" | sed -E 's/.*scenario=([^ ]+).*/\1/'); do
  a="$(rate "$out/alk.txt" alkstore "$s")"
  printf '%-26s %14s' "$s" "$a"
  for p in $peers; do
    b="$(rate "$out/peer.txt" "$p" "$s")"
    if [ -n "$b" ] && [ -n "$a" ]; then
      printf ' %16s %7.1fx' "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
    else
      printf ' %16s %8s' "-" "-"
    fi
  done
  echo
done
