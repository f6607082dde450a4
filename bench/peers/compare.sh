#!/usr/bin/env bash
# Print alkstore's benchmarks beside a peer's, scenario by scenario, with the
# ratio. Both run in this invocation, on this machine, back to back.
#
#   bench/peers/compare.sh honker          # SQLite: alkstore vs honker 0.5
#   bench/peers/compare.sh postgres [URL]  # PostgreSQL: alkstore vs pg-boss, graphile-worker
#
# BENCH_SCALE (default 1.0) scales alkstore and honker job counts; BENCH_JOBS
# and BENCH_SAMPLES set the node peers' job and latency sample counts.
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
    # node-postgres (under pg-boss and graphile-worker) connects in clear
    # text unless told otherwise, while alkstore follows libpq's default
    # (sslmode=prefer: TLS when the server offers it). Compare like with like.
    case "$url" in
      *sslmode=*) ;;
      *\?*) url="$url&sslmode=disable" ;;
      *) url="$url?sslmode=disable" ;;
    esac
    echo "connection: $url (the same for every peer)"
    "$alk" bench queue --on "$url" --scale "$scale" --scenario insert_50k --scenario work_50k | tee "$out/alk.txt"
    "$alk" bench worker --on "$url" | tee -a "$out/alk.txt"
    DATABASE_URL="$url" "$here/node/run.sh" | tee "$out/peer.txt"
    peers="pg-boss graphile-worker"
    ;;
  *) echo "usage: $0 honker | postgres [URL]" >&2; exit 2 ;;
esac

field() { # file peer scenario field -> value
  grep -E "^bench peer=$2 .*scenario=$3( |$)" "$1" | sed -nE "s/.*[ ]$4=([0-9.]+).*/\1/p" | head -1
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }'; }

echo
printf '%-26s %14s' "throughput (jobs/s)" alkstore
for p in $peers; do printf ' %16s %8s' "$p" "ratio"; done
echo
for s in $(grep -E '^bench .*jobs_per_s=' "$out/alk.txt" | sed -E 's/.*scenario=([^ ]+).*/\1/'); do
  a="$(field "$out/alk.txt" alkstore "$s" jobs_per_s)"
  # The runtime's throughput is compared with the peers' worker runs.
  ps="$s"; [ "$s" = "worker_50k" ] && ps="work_50k"
  printf '%-26s %14s' "$s" "$a"
  for p in $peers; do
    b="$(field "$out/peer.txt" "$p" "$ps" jobs_per_s)"
    if [ -n "$b" ]; then printf ' %16s %8s' "$b" "$(ratio "$a" "$b")"; else printf ' %16s %8s' - -; fi
  done
  echo
done

if grep -q 'scenario=wake_latency' "$out/alk.txt"; then
  echo
  printf '%-26s %14s' "wake latency (ms)" alkstore
  for p in $peers; do printf ' %16s %8s' "$p" "alk/peer"; done
  echo
  for f in p50_ms_from_commit p99_ms_from_commit p50_ms_from_call p99_ms_from_call; do
    a="$(field "$out/alk.txt" alkstore wake_latency "$f")"
    printf '%-26s %14s' "$f" "$a"
    for p in $peers; do
      b="$(field "$out/peer.txt" "$p" wake_latency "$f")"
      if [ -n "$b" ]; then printf ' %16s %8s' "$b" "$(ratio "$a" "$b")"; else printf ' %16s %8s' - -; fi
    done
    echo
  done
fi
