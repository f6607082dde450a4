#!/usr/bin/env bash
# Print alkstore's benchmarks beside a peer's, scenario by scenario, with the
# ratio. Both run in this invocation, on this machine, back to back.
#
#   bench/peers/compare.sh honker          # SQLite: alkstore vs honker 0.5, apalis 1.0
#   bench/peers/compare.sh postgres [URL]  # PostgreSQL: alkstore vs pg-boss, graphile-worker,
#                                          # apalis 1.0
#   bench/peers/compare.sh streams [URL]   # event streams: alkstore (SQLite and
#                                          # PostgreSQL at URL) vs honker streams,
#                                          # Redis Streams, NATS JetStream
#   bench/peers/compare.sh groups [URL]    # consumer groups: alkstore worker
#                                          # processes (SQLite, PostgreSQL) vs Redis
#                                          # consumer groups, NATS pull consumers
#   bench/peers/compare.sh upstream [URL]  # queues and streams: alkstore vs the
#                                          # crates.io alkstore 0.1.0 family (an
#                                          # earlier implementation, other authors),
#                                          # on SQLite and PostgreSQL at URL
#   bench/peers/compare.sh locks [URL]     # locks and schedule fire latency:
#                                          # alkstore (SQLite, PostgreSQL) vs honker's
#                                          # locks and scheduler, PostgreSQL advisory locks
#
# The queue cases (honker, postgres, upstream) run in COMPARE_ROUNDS rounds (default
# 3): each round runs alkstore's scenarios and then every peer's, so all of
# them meet the machine in the same minutes (its speed drifts by 20-50 %
# over minutes), and the tables show each side's median over the rounds;
# below them, each throughput ratio round by round.
#
# BENCH_SCALE (default 1.0) scales alkstore's, honker's, apalis's and the
# stream peers' event/job counts; BENCH_JOBS and BENCH_SAMPLES set the node
# peers' job and latency sample counts. URL defaults to $DATABASE_URL, then to
# postgres://postgres@127.0.0.1:5432/postgres. The streams case needs Redis
# at 127.0.0.1:6379 (REDIS_URL) and nats-server -js at 127.0.0.1:4222
# (NATS_URL); a peer that fails shows "-" in the table.
# ALK=/path/to/alk uses that binary instead of building alkstore-cli.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
peer="${1:-honker}"
scale="${BENCH_SCALE:-1.0}"
rounds="${COMPARE_ROUNDS:-3}"
case "$rounds" in '' | *[!0-9]* | 0) echo "COMPARE_ROUNDS must be a positive integer" >&2; exit 2 ;; esac
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

if [ -n "${ALK:-}" ]; then
  alk="$ALK"
else
  cargo build --release -q -p alkstore-cli --manifest-path "$root/Cargo.toml"
  alk="$root/target/release/alk"
fi

pg_url() { # [URL] -> the URL to use, with sslmode=disable unless it has an sslmode
  local url="${1:-${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}}"
  # node-postgres (under pg-boss and graphile-worker) connects in clear
  # text unless told otherwise, while alkstore follows libpq's default
  # (sslmode=prefer: TLS when the server offers it). Compare like with like.
  case "$url" in
    *sslmode=*) ;;
    *\?*) url="$url&sslmode=disable" ;;
    *) url="$url?sslmode=disable" ;;
  esac
  echo "$url"
}

case "$peer" in
  honker)
    (cd "$here/honker" && CARGO_TARGET_DIR="$here/honker/target" cargo build --release -q)
    (cd "$here/apalis" && CARGO_TARGET_DIR="$here/apalis/target" cargo build --release -q)
    for r in $(seq 1 "$rounds"); do
      echo "# round $r of $rounds"
      "$alk" bench queue --scale "$scale" \
        --scenario enqueue_single_4tasks --scenario enqueue_single_16tasks --scenario enqueue_batch_100 \
        --scenario claim_ack_single_20k --scenario claim128_batch_ack_100k \
        --scenario end_to_end_1p2c | tee -a "$out/alk.txt"
      # The runtime: wake latencies in-process and from another process, and
      # throughput through the Worker beside the raw engine in the same run
      # (apalis, a worker framework, is compared on worker_50k).
      "$alk" bench worker --rounds 1 --scenario wake_latency --scenario wake_latency_xproc \
        --scenario raw_claim_ack --scenario worker_50k | tee -a "$out/alk.txt"
      BENCH_SCALE="$scale" "$here/honker/target/release/honker-bench" | tee -a "$out/peer.txt"
      BENCH_SCALE="$scale" "$here/apalis/target/release/apalis-bench" sqlite | tee -a "$out/peer.txt" ||
        echo "apalis-bench sqlite failed (a scenario or all); its missing rows show -" >&2
    done
    peers="honker apalis"
    ;;
  postgres)
    url="$(pg_url "${2:-}")"
    (cd "$here/apalis" && CARGO_TARGET_DIR="$here/apalis/target" cargo build --release -q)
    echo "connection: $url (the same for every peer)"
    # Warm the server first, unmeasured: after a start its first bulk writes
    # create (zero-fill) new 16 MB WAL segment files, a cost that would fall
    # on whoever runs first (12 % of the server's samples in one such run).
    "$alk" bench queue --on "$url" --scale "$scale" --scenario insert_50k --scenario work_50k > /dev/null
    for r in $(seq 1 "$rounds"); do
      echo "# round $r of $rounds"
      "$alk" bench queue --on "$url" --scale "$scale" --scenario insert_50k --scenario work_50k | tee -a "$out/alk.txt"
      "$alk" bench worker --on "$url" --rounds 1 | tee -a "$out/alk.txt"
      DATABASE_URL="$url" "$here/node/run.sh" | tee -a "$out/peer.txt"
      BENCH_SCALE="$scale" "$here/apalis/target/release/apalis-bench" postgres "$url" | tee -a "$out/peer.txt" ||
        echo "apalis-bench postgres failed (a scenario or all); its missing rows show -" >&2
    done
    peers="pg-boss graphile-worker apalis"
    ;;
  streams)
    url="$(pg_url "${2:-}")"
    (cd "$here/streams" && CARGO_TARGET_DIR="$here/streams/target" cargo build --release -q)
    echo "connection: $url (alkstore on PostgreSQL)"
    "$alk" bench stream --scale "$scale" | tee "$out/alk.txt"
    "$alk" bench stream --on "$url" --scale "$scale" | tee -a "$out/alk.txt"
    : >"$out/peer.txt"
    for p in honker redis nats; do
      BENCH_SCALE="$scale" "$here/streams/target/release/stream-peers" "$p" | tee -a "$out/peer.txt" ||
        echo "stream-peers $p failed; its column shows -" >&2
    done
    ;;
  groups)
    url="$(pg_url "${2:-}")"
    (cd "$here/streams" && CARGO_TARGET_DIR="$here/streams/target" cargo build --release -q)
    echo "connection: $url (alkstore on PostgreSQL)"
    "$alk" bench group --scale "$scale" | tee "$out/alk.txt"
    "$alk" bench group --on "$url" --scale "$scale" | tee -a "$out/alk.txt"
    : >"$out/peer.txt"
    for p in redis-groups nats-groups; do
      BENCH_SCALE="$scale" "$here/streams/target/release/stream-peers" "$p" | tee -a "$out/peer.txt" ||
        echo "stream-peers $p failed; its column shows -" >&2
    done
    ;;
  locks)
    url="$(pg_url "${2:-}")"
    (cd "$here/honker" && CARGO_TARGET_DIR="$here/honker/target" cargo build --release -q)
    (cd "$here/pglocks" && CARGO_TARGET_DIR="$here/pglocks/target" cargo build --release -q)
    echo "connection: $url (alkstore on PostgreSQL, advisory locks)"
    "$alk" bench lock --scale "$scale" | tee "$out/alk.txt"
    "$alk" bench lock --on "$url" --scale "$scale" | tee -a "$out/alk.txt"
    "$alk" bench schedule --scale "$scale" | tee -a "$out/alk.txt"
    "$alk" bench schedule --on "$url" --scale "$scale" | tee -a "$out/alk.txt"
    BENCH_SCALE="$scale" "$here/honker/target/release/honker-locks" | tee "$out/peer.txt"
    BENCH_SCALE="$scale" "$here/pglocks/target/release/pglocks-bench" "$url" | tee -a "$out/peer.txt"
    ;;
  upstream)
    # The crates.io alkstore 0.1.0 family (an earlier implementation of this
    # design by other authors), on SQLite and on PostgreSQL, every queue and
    # stream scenario it can express; its own workspace in upstream/.
    url="$(pg_url "${2:-}")"
    (cd "$here/upstream" && CARGO_TARGET_DIR="$here/upstream/target" cargo build --release -q)
    # replay_1m on PostgreSQL: the peer fills its stream one event per
    # statement (no batch publish), 1M events take it minutes, so both sides
    # run that one scenario at this fraction of BENCH_SCALE.
    replay_f="${UPSTREAM_PG_REPLAY_SCALE:-0.1}"
    pg_replay_scale="$(awk -v a="$scale" -v b="$replay_f" 'BEGIN { print a * b }')"
    echo "connection: $url (the same for both); BENCH_SCALE=$scale; on PostgreSQL replay_1m runs at" \
      "scale $pg_replay_scale on both sides (UPSTREAM_PG_REPLAY_SCALE=$replay_f: the peer is too slow to fill 1M events)"
    qs="--scenario enqueue_single_4tasks --scenario enqueue_single_16tasks --scenario enqueue_batch_100
      --scenario claim_ack_single_20k --scenario claim128_batch_ack_100k --scenario end_to_end_1p2c
      --scenario insert_50k --scenario work_50k"
    # Warm the PostgreSQL server first, unmeasured (see the postgres case).
    "$alk" bench queue --on "$url" --scale "$scale" --scenario insert_50k --scenario work_50k > /dev/null
    for r in $(seq 1 "$rounds"); do
      echo "# round $r of $rounds"
      # shellcheck disable=SC2086
      "$alk" bench queue --scale "$scale" $qs | tee -a "$out/alk.txt"
      "$alk" bench stream --scale "$scale" --scenario publish_single_4tasks --scenario publish_batch_100 \
        --scenario replay_1m --scenario live_latency | tee -a "$out/alk.txt"
      BENCH_SCALE="$scale" "$here/upstream/target/release/upstream-bench" sqlite | tee -a "$out/peer.txt" ||
        echo "upstream-bench sqlite failed (a scenario or all); its missing rows show -" >&2
      # shellcheck disable=SC2086
      "$alk" bench queue --on "$url" --scale "$scale" $qs | tee -a "$out/alk.txt"
      "$alk" bench stream --on "$url" --scale "$scale" --scenario publish_single_4tasks \
        --scenario publish_batch_100 --scenario live_latency | tee -a "$out/alk.txt"
      "$alk" bench stream --on "$url" --scale "$pg_replay_scale" --scenario replay_1m | tee -a "$out/alk.txt"
      BENCH_SCALE="$scale" "$here/upstream/target/release/upstream-bench" postgres "$url" \
        enqueue_single_4tasks enqueue_single_16tasks enqueue_batch_100 claim_ack_single_20k \
        claim128_batch_ack_100k end_to_end_1p2c insert_50k work_50k publish_single_4tasks \
        publish_batch_100 live_latency | tee -a "$out/peer.txt" ||
        echo "upstream-bench postgres failed (a scenario or all); its missing rows show -" >&2
      BENCH_SCALE="$pg_replay_scale" "$here/upstream/target/release/upstream-bench" postgres "$url" replay_1m |
        tee -a "$out/peer.txt" || echo "upstream-bench postgres replay_1m failed; its row shows -" >&2
    done
    ;;
  *) echo "usage: $0 honker | postgres [URL] | streams [URL] | groups [URL] | locks [URL] | upstream [URL]" >&2; exit 2 ;;
esac

values() { # file peer scenario field [engine] -> every row's value, in the order the rounds ran
  local pat="^bench peer=$2 "
  [ -n "${5:-}" ] && pat="$pat(.* )?engine=$5 "
  { grep -E "$pat.*scenario=$3( |\$)" "$1" || true; } | sed -nE "s/.*[ ]$4=([0-9.]+).*/\1/p"
}
field() { # file peer scenario field [engine] -> value: the median over the rows (rounds)
  values "$@" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) exit; m = int((NR + 1) / 2)
      if (NR % 2) print v[m]; else { x = (v[m] + v[m + 1]) / 2
        print (v[m] ~ /\./ ? sprintf("%.3f", x) : sprintf("%.0f", x)) } }'
}
ratio() { # two digits below 1x (latency ratios are read against 0.5x)
  awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) { print "-"; exit } r = a / b; printf (r < 1 ? "%.2fx" : "%.1fx"), r }'
}

if [ "$peer" = upstream ]; then
  # One row per engine and scenario: each side's median over the rounds
  # (jobs/s or events/s), the ratio of the medians, then the ratio round by
  # round (alkstore over the peer in the same round).
  urow() { printf '%-10s %-34s %12s %12s %8s  %s\n' "$@"; }
  echo
  urow engine "scenario (per s)" alkstore "alkstore0.1" ratio "per round"
  for e in sqlite postgres; do
    for s in enqueue_single_4tasks enqueue_single_16tasks enqueue_batch_100 claim_ack_single_20k \
      claim128_batch_ack_100k end_to_end_1p2c insert_50k work_50k publish_single_4tasks \
      publish_batch_100 replay_1m; do
      f=jobs_per_s
      case "$s" in publish_* | replay_*) f=events_per_s ;; esac
      a="$(field "$out/alk.txt" alkstore "$s" "$f" "$e")"
      b="$(field "$out/peer.txt" alkstore0.1 "$s" "$f" "$e")"
      [ -z "$a$b" ] && continue
      per="$(paste -d ' ' <(values "$out/alk.txt" alkstore "$s" "$f" "$e") \
        <(values "$out/peer.txt" alkstore0.1 "$s" "$f" "$e") |
        awk 'NF == 2 && $2 > 0 { printf "%.2f ", $1 / $2 }')"
      urow "$e" "$s" "${a:--}" "${b:--}" "$(ratio "${a:-0}" "${b:-0}")" "${per:--}"
    done
  done
  # Live latency: ms (lower is better); the ratio is the peer over alkstore,
  # so above 1x is better for alkstore, as in the throughput rows.
  for e in sqlite postgres; do
    for f in p50_ms_from_commit p99_ms_from_commit p50_ms_from_call p99_ms_from_call; do
      a="$(field "$out/alk.txt" alkstore live_latency "$f" "$e")"
      b="$(field "$out/peer.txt" alkstore0.1 live_latency "$f" "$e")"
      [ -z "$a$b" ] && continue
      per="$(paste -d ' ' <(values "$out/alk.txt" alkstore live_latency "$f" "$e") \
        <(values "$out/peer.txt" alkstore0.1 live_latency "$f" "$e") |
        awk 'NF == 2 && $1 > 0 { printf "%.2f ", $2 / $1 }')"
      urow "$e" "live_latency $f" "${a:--}" "${b:--}" "$(ratio "${b:-0}" "${a:-0}")" "${per:--}"
    done
  done
  echo "(live_latency rows: ms, lower is better; their ratio is the peer over alkstore, so above 1x favours alkstore.)"
  echo "Every figure is the median over $rounds rounds; each round ran alkstore on SQLite, the peer on SQLite," \
    "alkstore on PostgreSQL, the peer on PostgreSQL (COMPARE_ROUNDS sets the count)."
  sc="$(grep -m1 -o 'synchronous_commit=[a-z]*' "$out/peer.txt" || true)"
  echo "The peer on PostgreSQL: ${sc:-synchronous_commit=?} (its speed option; UPSTREAM_SYNC_COMMIT=on makes it" \
    "durable like alkstore, which always is), pool of 16 connections."
  echo "The peer has no batch enqueue or publish outside a transaction: its *_batch_100, end_to_end producer and" \
    "insert_50k are transactions of 100 (1000) enqueue_tx/publish_with_key_tx calls."
  exit 0
fi

if [ "$peer" = groups ]; then
  # Throughput rows: events/s (higher is better); failover and rebalance:
  # ms (lower is better). Ratios: alkstore on each engine beside Redis.
  gratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "-"; else { r = a / b
      printf (r < 0.1 ? "%.3fx" : r < 1 ? "%.2fx" : "%.1fx"), r } }'
  }
  grow() { # label alk-sqlite alk-postgres redis nats
    printf '%-24s %12s %12s %12s %12s %14s %14s\n' "$1" "${2:--}" "${3:--}" "${4:--}" "${5:--}" \
      "$(gratio "${2:-0}" "${4:-0}")" "$(gratio "${3:-0}" "${4:-0}")"
  }
  echo
  printf '%-24s %12s %12s %12s %12s %14s %14s\n' "group (events/s; ms)" \
    "alk sqlite" "alk postgres" redis nats "sqlite/redis" "postgres/redis"
  for s in consume_1w consume_2w consume_4w; do
    grow "$s events/s" "$(field "$out/alk.txt" alkstore "$s" events_per_s sqlite)" \
      "$(field "$out/alk.txt" alkstore "$s" events_per_s postgres)" \
      "$(field "$out/peer.txt" redis "$s" events_per_s)" \
      "$(field "$out/peer.txt" nats "$s" events_per_s)"
  done
  for s in failover rebalance; do
    printf '%-24s %12s %12s %12s %12s %14s %14s\n' "$s ms" \
      "$(field "$out/alk.txt" alkstore "$s" ms sqlite)" \
      "$(field "$out/alk.txt" alkstore "$s" ms postgres)" \
      "$(field "$out/peer.txt" redis "$s" ms)" \
      "$(field "$out/peer.txt" nats "$s" ms)" - -
  done
  echo "(failover: alkstore = SIGKILL of a worker process until the other owns every bucket, ttl 2 s + heartbeat 0.5 s; redis = XAUTOCLAIM min-idle 2 s every 0.5 s; nats = redelivery after ack wait 2 s."
  echo " rebalance: alkstore = a second worker starting until it holds half the buckets; redis/nats have no partitions, a joiner reads at once.)"
  exit 0
fi

if [ "$peer" = locks ]; then
  # Cycles/s (higher is better; ratios alkstore/peer) and fire latency in
  # ms after the boundary (lower is better; ratios peer/alkstore, so above
  # 1x is better for alkstore in both).
  lrow() { # label alk-sqlite alk-postgres honker advisory ratio1 ratio2
    printf '%-26s %12s %12s %12s %12s %16s %18s\n' "$1" "${2:--}" "${3:--}" "${4:--}" "${5:--}" "$6" "$7"
  }
  echo
  lrow "locks (cycles/s; ms)" "alk sqlite" "alk postgres" honker advisory "sqlite vs honker" "postgres vs advis."
  for s in lock_uncontended lock_8_contenders; do
    a="$(field "$out/alk.txt" alkstore "$s" cycles_per_s sqlite)"
    b="$(field "$out/alk.txt" alkstore "$s" cycles_per_s postgres)"
    h="$(field "$out/peer.txt" honker "$s" cycles_per_s)"
    v="$(field "$out/peer.txt" advisory "$s" cycles_per_s)"
    lrow "$s" "$a" "$b" "$h" "$v" "$(ratio "${a:-0}" "${h:-0}")" "$(ratio "${b:-0}" "${v:-0}")"
  done
  for f in p50_ms p99_ms; do
    a="$(field "$out/alk.txt" alkstore fire_latency "$f" sqlite)"
    b="$(field "$out/alk.txt" alkstore fire_latency "$f" postgres)"
    h="$(field "$out/peer.txt" honker fire_latency "$f")"
    lrow "fire_latency $f" "$a" "$b" "$h" - "$(ratio "${h:-0}" "${a:-0}")" -
  done
  echo "(advisory locks have no TTL, fencing token or durability: a lock lives as long as its session.)"
  exit 0
fi

if [ "$peer" = streams ]; then
  # One row per scenario: events/s (higher is better), then live_latency's
  # p50 and p99 in ms from commit (lower is better). The ratios put alkstore
  # on SQLite beside honker (SQLite) and alkstore on PostgreSQL beside Redis.
  sratio() { # like ratio, with more digits below 1 (e.g. 0.015x)
    awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "-"; else { r = a / b
      printf (r < 0.1 ? "%.3fx" : r < 1 ? "%.2fx" : "%.1fx"), r } }'
  }
  row() { # label alk-sqlite alk-postgres honker redis nats
    printf '%-30s %12s %12s %12s %12s %12s %14s %14s\n' "$1" "${2:--}" "${3:--}" "${4:--}" "${5:--}" "${6:--}" \
      "$(sratio "${2:-0}" "${4:-0}")" "$(sratio "${3:-0}" "${5:-0}")"
  }
  echo
  printf '%-30s %12s %12s %12s %12s %12s %14s %14s\n' "stream (events/s; latency ms)" \
    "alk sqlite" "alk postgres" honker redis nats "sqlite/honker" "postgres/redis"
  for s in $(grep -hE '^bench .*events_per_s=' "$out/alk.txt" "$out/peer.txt" |
    sed -E 's/.*scenario=([^ ]+).*/\1/' | awk '!seen[$0]++'); do
    row "$s" "$(field "$out/alk.txt" alkstore "$s" events_per_s sqlite)" \
      "$(field "$out/alk.txt" alkstore "$s" events_per_s postgres)" \
      "$(field "$out/peer.txt" honker "$s" events_per_s)" \
      "$(field "$out/peer.txt" redis "$s" events_per_s)" \
      "$(field "$out/peer.txt" nats "$s" events_per_s)"
  done
  for f in p50 p99; do
    row "live_latency ${f}_ms_from_commit" \
      "$(field "$out/alk.txt" alkstore live_latency "${f}_ms_from_commit" sqlite)" \
      "$(field "$out/alk.txt" alkstore live_latency "${f}_ms_from_commit" postgres)" \
      "$(field "$out/peer.txt" honker live_latency "${f}_ms_from_commit")" \
      "$(field "$out/peer.txt" redis live_latency "${f}_ms_from_commit")" \
      "$(field "$out/peer.txt" nats live_latency "${f}_ms_from_commit")"
  done
  # What a second, third and fourth batch publisher adds: each column's
  # publish_batch_100_4tasks over its publish_batch_100 (same events, same
  # batches; on PostgreSQL concurrent commits can share a WAL flush).
  gain() { # file peer [engine] -> "1.85x", or - when a row is missing
    awk -v a="$(field "$1" "$2" publish_batch_100_4tasks events_per_s "${3:-}")" \
      -v b="$(field "$1" "$2" publish_batch_100 events_per_s "${3:-}")" \
      'BEGIN { if (a == "" || b <= 0) print "-"; else printf "%.2fx\n", a / b }'
  }
  printf '%-30s %12s %12s %12s %12s %12s\n' "batch_100: 4 tasks / 1 task" \
    "$(gain "$out/alk.txt" alkstore sqlite)" "$(gain "$out/alk.txt" alkstore postgres)" \
    "$(gain "$out/peer.txt" honker)" "$(gain "$out/peer.txt" redis)" "$(gain "$out/peer.txt" nats)"
  exit 0
fi

echo
printf '%-26s %14s' "throughput (jobs/s)" alkstore
for p in $peers; do printf ' %16s %8s' "$p" "ratio"; done
echo
# A scenario's rounds (`worker_50k.round2`) are in the output above; the
# table shows their median, under the scenario's own name.
scenarios="$(grep -E '^bench .* jobs_per_s=' "$out/alk.txt" | sed -E 's/.*scenario=([^ ]+).*/\1/' |
  grep -v '\.round' | awk '!seen[$0]++')"
for s in $scenarios; do
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

if [ "$rounds" -gt 1 ]; then
  # The same ratios round by round: alkstore's figure over the peer's from
  # the same round (minutes apart, not tens of minutes), to show how far the
  # machine's drift moves a ratio. The table above is what counts.
  echo
  echo "per round (alkstore over the peer in the same round; the table above is the median of each side)"
  for s in $scenarios; do
    ps="$s"; [ "$s" = "worker_50k" ] && ps="work_50k"
    line=""
    for p in $peers; do
      per="$(paste -d ' ' <(values "$out/alk.txt" alkstore "$s" jobs_per_s) \
        <(values "$out/peer.txt" "$p" "$ps" jobs_per_s) |
        awk -v n="$rounds" 'NF == 2 && $2 > 0 { printf " %.2f", $1 / $2; k++ } END { if (k != n) exit 1 }')" ||
        continue
      line="$line  $p:$per"
    done
    [ -n "$line" ] && printf '%-26s%s\n' "$s" "$line"
  done
fi

if [ "$peer" = honker ]; then
  # honker's best single-job enqueue is one thread (its 4 threads share one
  # connection's mutex); alkstore's is many concurrent callers (they share
  # commits). Each side's 4-caller figure, then each side's best.
  a4="$(field "$out/alk.txt" alkstore enqueue_single_4tasks jobs_per_s)"
  a16="$(field "$out/alk.txt" alkstore enqueue_single_16tasks jobs_per_s)"
  h4="$(field "$out/peer.txt" honker enqueue_single_4tasks jobs_per_s)"
  h1="$(field "$out/peer.txt" honker enqueue_single_1thread jobs_per_s)"
  best="$(awk -v x="${h4:-0}" -v y="${h1:-0}" 'BEGIN { print (x > y ? x : y) }')"
  abest="$(awk -v x="${a4:-0}" -v y="${a16:-0}" 'BEGIN { print (x > y ? x : y) }')"
  printf '%-26s %14s %16s %8s  (honker: 4 threads %s, 1 thread %s)\n' "enqueue_single 4 callers" "$a4" "$best" \
    "$(ratio "${a4:-0}" "$best")" "${h4:--}" "${h1:--}"
  printf '%-26s %14s %16s %8s  (alkstore: 4 tasks %s, 16 tasks %s)\n' "enqueue_single best/best" "$abest" "$best" \
    "$(ratio "${abest:-0}" "$best")" "${a4:--}" "${a16:--}"
fi

pct="$(field "$out/alk.txt" alkstore worker_vs_raw percent)"
if [ -n "$pct" ]; then
  echo "worker_50k through the Worker: ${pct}% of raw_claim_ack (the engine alone, same claim size, same round;" \
    "median over the rounds)"
fi
case "$peer" in
  honker | postgres)
    echo "Every figure in these tables is the median over $rounds rounds; each round ran alkstore's scenarios," \
      "then each peer's (COMPARE_ROUNDS sets the count)." ;;
esac

for w in wake_latency wake_latency_xproc; do
  grep -q "scenario=$w " "$out/alk.txt" || continue
  echo
  printf '%-26s %14s' "$w (ms)" alkstore
  for p in $peers; do printf ' %16s %8s' "$p" "alk/peer"; done
  echo
  for f in p50_ms_from_commit p99_ms_from_commit p50_ms_from_call p99_ms_from_call; do
    a="$(field "$out/alk.txt" alkstore "$w" "$f")"
    printf '%-26s %14s' "$f" "$a"
    for p in $peers; do
      b="$(field "$out/peer.txt" "$p" "$w" "$f")"
      if [ -n "$b" ]; then printf ' %16s %8s' "$b" "$(ratio "$a" "$b")"; else printf ' %16s %8s' - -; fi
    done
    echo
  done
done
