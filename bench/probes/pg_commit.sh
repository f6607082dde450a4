#!/usr/bin/env bash
# pgbench probes of per-commit serialisation on PostgreSQL: how the commit
# rate of one-row transactions grows with clients, for a plain insert and for
# the things a single-call enqueue or publish might add to it (a NOTIFY in the
# same transaction, a NOTIFY in a transaction of its own, a sequence, a unique
# key, a counter row). A probe that stays flat from 4 to 16 clients while the
# plain insert grows is a serialisation point on the commit path.
#
#   bench/probes/pg_commit.sh [URL]     # PROBE_SECONDS (default 8), PROBE_CLIENTS ("4 16"),
#                                       # PROBES (names below; default all)
#
# plain: a one-row insert into a small table; notify_in_tx: the same with
# pg_notify in its transaction; notify_after: the insert, then a notify in
# a transaction of its own; notify_after_async: that notify with a local
# synchronous_commit=off; unique_key: an insert checked by a unique index;
# counter_row: an insert and an update of this connection's counter row of
# 16 (backend pid modulo 16, as alkstore's throughput counts shard);
# counter_one_row: the same with one counter row for everyone;
# alk_job / alk_job_notify_in_tx: a one-job insert into a table shaped as
# alkstore's job table, without and with the notify in its statement.
#
# It creates and drops a database of its own on the server at URL.
set -euo pipefail
url="${1:-${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}}"
secs="${PROBE_SECONDS:-8}"
clients="${PROBE_CLIENTS:-4 16}"
db="alk_probe_$$"
work="$(mktemp -d)"
cleanup() {
  psql -q "$url" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
psql -q "$url" -c "CREATE DATABASE $db" >/dev/null
probe_url="$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' "$url" "$db")"

psql -q "$probe_url" >/dev/null <<'SQL'
CREATE TABLE job (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, payload BYTEA NOT NULL,
  run_at BIGINT NOT NULL, state TEXT NOT NULL DEFAULT 'pending', unique_key TEXT);
CREATE INDEX job_claim ON job (queue, state, run_at);
CREATE UNIQUE INDEX job_unique ON job (queue, unique_key) WHERE unique_key IS NOT NULL;
CREATE TABLE counter (queue TEXT, shard INT, n BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (queue, shard));
INSERT INTO counter SELECT 'q', s, 0 FROM generate_series(0, 15) s;
-- The shape of alkstore's job table (migrations 001-011): its columns and
-- its indexes, which every enqueue maintains.
CREATE TABLE alk_job (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'pending',
  payload BYTEA NOT NULL, priority BIGINT NOT NULL DEFAULT 0, run_at BIGINT NOT NULL,
  attempts BIGINT NOT NULL DEFAULT 0, max_attempts BIGINT NOT NULL DEFAULT 3, worker_id TEXT,
  claimed_at BIGINT, claim_expires_at BIGINT, created_at BIGINT NOT NULL, expires_at BIGINT,
  visibility_timeout_s BIGINT NOT NULL DEFAULT 300, backoff_base_s BIGINT NOT NULL DEFAULT 5,
  dead_letter_retention_s BIGINT, unique_key TEXT, last_error TEXT, claim_count BIGINT NOT NULL DEFAULT 0,
  cancel_requested BOOLEAN NOT NULL DEFAULT false, keep_completed_s BIGINT, errors JSONB);
CREATE INDEX alk_job_claim ON alk_job (queue, priority DESC, run_at, id) WHERE state = 'pending';
CREATE INDEX alk_job_deadline ON alk_job (queue, claim_expires_at) WHERE state = 'processing';
CREATE INDEX alk_job_expiry ON alk_job (expires_at) WHERE expires_at IS NOT NULL AND state = 'pending';
CREATE UNIQUE INDEX alk_job_unique ON alk_job (queue, unique_key) WHERE unique_key IS NOT NULL;
SQL

insert="INSERT INTO job (queue, payload, run_at) VALUES ('q', '\\x00', 0);"
cat > "$work/plain.sql" <<EOF2
$insert
EOF2
cat > "$work/alk_job.sql" <<EOF2
INSERT INTO alk_job (queue, payload, run_at, created_at)
  VALUES ('q', '\\x00', extract(epoch FROM statement_timestamp())::bigint,
          extract(epoch FROM statement_timestamp())::bigint) RETURNING id;
EOF2
cat > "$work/alk_job_notify_in_tx.sql" <<EOF2
INSERT INTO alk_job (queue, payload, run_at, created_at)
  VALUES ('q', '\\x00', extract(epoch FROM statement_timestamp())::bigint,
          extract(epoch FROM statement_timestamp())::bigint) RETURNING id, pg_notify('alk_probe', 'q');
EOF2
cat > "$work/notify_in_tx.sql" <<EOF2
BEGIN;
$insert
SELECT pg_notify('alk_probe', 'q');
COMMIT;
EOF2
cat > "$work/notify_after.sql" <<EOF2
$insert
SELECT pg_notify('alk_probe', 'q');
EOF2
cat > "$work/notify_after_async.sql" <<EOF2
$insert
BEGIN;
SET LOCAL synchronous_commit = off;
SELECT pg_notify('alk_probe', 'q');
COMMIT;
EOF2
cat > "$work/unique_key.sql" <<EOF2
INSERT INTO job (queue, payload, run_at, unique_key) VALUES ('q', '\\x00', 0, md5(random()::text));
EOF2
cat > "$work/counter_row.sql" <<EOF2
BEGIN;
$insert
UPDATE counter SET n = n + 1 WHERE queue = 'q' AND shard = pg_backend_pid() % 16;
COMMIT;
EOF2
cat > "$work/counter_one_row.sql" <<EOF2
BEGIN;
$insert
UPDATE counter SET n = n + 1 WHERE queue = 'q' AND shard = 0;
COMMIT;
EOF2

printf '%-22s' "probe (tx/s)"
for c in $clients; do printf '%12s' "$c clients"; done
echo
for p in ${PROBES:-plain notify_in_tx notify_after notify_after_async unique_key counter_row counter_one_row alk_job alk_job_notify_in_tx}; do
  printf '%-22s' "$p"
  for c in $clients; do
    tps="$(pgbench -n -M prepared -c "$c" -j 2 -T "$secs" -f "$work/$p.sql" "$probe_url" 2>/dev/null \
      | awk '/^tps/ {printf "%.0f", $3}')"
    printf '%12s' "${tps:--}"
  done
  echo
done
