//! Consumer-group statement texts, built once per engine with the quoted
//! schema. Every lease time is unix milliseconds by the database's clock
//! (`$1` overrides it in tests with an injected clock).

use crate::schema::{quote_identifier, tables, QualifiedTable};
use crate::streams::sql::{head, horizon};

/// Unix milliseconds: `$1` (the injected clock) or the database's at the
/// statement's start (see `db_epoch!`), one time per statement.
pub(crate) const NOW_MS: &str = concat!(
    "(SELECT COALESCE($1::bigint, floor(",
    db_epoch!(),
    " * 1000)::bigint))"
);

/// The dead-letter columns `dead` (in `mod.rs`) reads, in its order.
pub(crate) const DEAD_COLUMNS: &str =
    "id, bucket, stream, key, payload, error, attempts, failed_at, created_at, requeued";

/// The bucket of event row `e` among `n` buckets (a bigint expression):
/// PostgreSQL's `hashtextextended` for keyed events, the offset otherwise.
fn bucket_expr(n: &str) -> String {
    format!(
        "(CASE WHEN e.key IS NULL THEN e.id % {n} \
         ELSE ((hashtextextended(e.key, 0) % {n}) + {n}) % {n} END)"
    )
}

/// Every bucket of group `$2`, with its lag (its readable events past the
/// checkpoint) or 0, and the database's time.
fn status(
    schema: &str,
    bucket: &str,
    event: &QualifiedTable<'_>,
    gb: &QualifiedTable<'_>,
    lag: bool,
) -> String {
    let lag = if lag {
        let h = horizon(
            schema,
            &format!("(SELECT s.stream FROM {gb} s WHERE s.group_name = $2 LIMIT 1)"),
        );
        format!(
            "(SELECT count(*) FROM {event} e WHERE e.stream = g.stream \
               AND e.id > g.checkpoint AND e.id < {h} AND {bucket} = g.bucket)"
        )
    } else {
        "0::bigint".to_string()
    };
    format!(
        "SELECT g.bucket, g.owner, g.epoch, g.lease_expires_at, g.checkpoint, {lag}, \
           g.stream, {NOW_MS} \
         FROM {gb} g WHERE g.group_name = $2 ORDER BY g.bucket"
    )
}

pub(crate) struct GroupSql {
    /// Serializes `ensure` per group: `$1` schema, `$2` group.
    pub lock: String,
    pub existing: String,
    pub insert: String,
    pub claim: String,
    pub handoffs: String,
    pub handoff_totals: String,
    pub renew: String,
    pub live: String,
    pub release: String,
    pub checkpoint: String,
    pub read: String,
    pub status: String,
    pub status_no_lag: String,
    pub list: String,
    pub leave: String,
    pub dead_add: String,
    pub dead_list: String,
    pub dead_requeue: String,
    pub dead_purge: String,
    pub dead_take: String,
    pub holds: String,
    pub dead_delete: String,
    pub counts: String,
    pub resize_facts: String,
    pub resize_delete: String,
    pub resize_insert: String,
}

impl GroupSql {
    pub(crate) fn new(schema: &str) -> Self {
        let gb = QualifiedTable::new(schema, tables::GROUP_BUCKET);
        let event = QualifiedTable::new(schema, tables::EVENT);
        let stream = QualifiedTable::new(schema, tables::STREAM);
        let gm = QualifiedTable::new(schema, tables::GROUP_MEMBER);
        let gd = QualifiedTable::new(schema, tables::GROUP_DEAD);
        let handoff = QualifiedTable::new(schema, tables::GROUP_HANDOFF);
        let handoff_total = QualifiedTable::new(schema, tables::GROUP_HANDOFF_TOTAL);
        let lease_cols = "g.bucket, g.epoch, g.checkpoint, g.lease_expires_at";
        GroupSql {
            lock: "SELECT pg_advisory_xact_lock(hashtextextended('alkstore group ' || $1 || ' ' || $2, 0))"
                .into(),
            existing: format!("SELECT DISTINCT buckets, stream FROM {gb} WHERE group_name = $1"),
            insert: format!(
                "INSERT INTO {gb} (group_name, bucket, buckets, stream, updated_at) \
                 SELECT $2, b, $3::int, $4, {NOW_MS} FROM generate_series(0, $3::int - 1) b \
                 ON CONFLICT DO NOTHING"
            ),
            // SKIP LOCKED: two claimers never wait on, nor both win, a bucket.
            // Each bucket taken records its handoff: from whom and why (a
            // first lease, a rebalance or leave by its holder, or a lapse:
            // a failover), counted by cause; a week of handoffs is kept.
            claim: format!(
                "WITH c AS (SELECT bucket, COALESCE(owner, last_owner) AS from_worker, \
                     CASE WHEN epoch = 0 THEN 'first' \
                          WHEN owner IS NULL THEN COALESCE(released_how, 'rebalance') \
                          ELSE 'lapse' END AS cause \
                   FROM {gb} WHERE group_name = $2 \
                   AND (owner IS NULL OR lease_expires_at <= {NOW_MS}) \
                   ORDER BY bucket LIMIT $5 FOR UPDATE SKIP LOCKED), \
                 u AS (UPDATE {gb} g SET owner = $3, last_owner = $3, released_how = NULL, \
                   lease_expires_at = {NOW_MS} + $4, \
                   heartbeat_at = {NOW_MS}, epoch = g.epoch + 1, updated_at = {NOW_MS} \
                 FROM c WHERE g.group_name = $2 AND g.bucket = c.bucket \
                 RETURNING {lease_cols}, c.from_worker, c.cause), \
                 h AS (INSERT INTO {handoff} (group_name, bucket, epoch, from_worker, to_worker, \
                   cause, at) SELECT $2, bucket, epoch, from_worker, $3, cause, {NOW_MS} FROM u), \
                 t AS (INSERT INTO {handoff_total} AS t (group_name, cause, n) \
                   SELECT $2, cause, count(*) FROM u GROUP BY cause \
                   ON CONFLICT (group_name, cause) DO UPDATE SET n = t.n + excluded.n), \
                 old AS (DELETE FROM {handoff} WHERE group_name = $2 AND at < {NOW_MS} - $6 \
                   AND EXISTS (SELECT 1 FROM u)) \
                 SELECT bucket, epoch, checkpoint, lease_expires_at FROM u"
            ),
            handoffs: format!(
                "SELECT bucket, epoch, from_worker, to_worker, cause, at FROM {handoff} \
                 WHERE group_name = $1 ORDER BY at DESC, id DESC LIMIT $2"
            ),
            handoff_totals: format!(
                "SELECT cause, n FROM {handoff_total} WHERE group_name = $1 ORDER BY cause"
            ),
            renew: format!(
                "UPDATE {gb} g SET lease_expires_at = {NOW_MS} + $4, heartbeat_at = {NOW_MS}, \
                   updated_at = {NOW_MS} \
                 WHERE g.group_name = $2 AND g.owner = $3 RETURNING {lease_cols}"
            ),
            // Renew this worker's membership, drop lapsed ones, and count
            // the live workers (the others, plus this one: a statement does
            // not see its own CTEs' writes).
            live: format!(
                "WITH m AS (INSERT INTO {gm} (group_name, worker, expires_at) \
                   SELECT $2, $3, {NOW_MS} + $4 WHERE EXISTS (SELECT 1 FROM {gb} WHERE group_name = $2) \
                   ON CONFLICT (group_name, worker) DO UPDATE SET expires_at = excluded.expires_at), \
                 d AS (DELETE FROM {gm} WHERE group_name = $2 AND expires_at <= {NOW_MS}) \
                 SELECT (SELECT count(*) FROM {gm} WHERE group_name = $2 AND worker <> $3 \
                           AND expires_at > {NOW_MS})::int + 1, \
                   (SELECT max(buckets) FROM {gb} WHERE group_name = $2), \
                   (SELECT min(lease_expires_at) - {NOW_MS} FROM {gb} WHERE group_name = $2 \
                      AND owner <> $3 AND lease_expires_at > {NOW_MS})"
            ),
            release: format!(
                "UPDATE {gb} SET owner = NULL, lease_expires_at = NULL, \
                   released_how = 'rebalance', updated_at = {NOW_MS} \
                 WHERE group_name = $2 AND owner = $3 AND bucket = ANY($4::int[]) RETURNING bucket"
            ),
            // One round trip: lock the bucket's row, bound the offset by the
            // stream's readable head, move it only under the caller's epoch
            // and only forward; report what was there to explain a refusal.
            // (`g` is one row: its stream's horizon is one value.)
            checkpoint: {
                let h = head(schema, &event, "g.stream", "$6");
                format!(
                "WITH g AS (SELECT owner, epoch, checkpoint, stream FROM {gb} \
                   WHERE group_name = $2 AND bucket = $3::int FOR UPDATE), \
                 b AS (SELECT GREATEST( \
                   {h}, \
                   COALESCE((SELECT trimmed_head FROM {stream} s WHERE s.stream = g.stream), 0)) AS h FROM g), \
                 up AS (UPDATE {gb} t SET checkpoint = $6, updated_at = {NOW_MS} FROM g, b \
                   WHERE t.group_name = $2 AND t.bucket = $3::int AND g.owner = $4 AND g.epoch = $5 \
                     AND g.checkpoint < $6 AND $6 <= b.h RETURNING t.checkpoint) \
                 SELECT g.owner, g.epoch, g.checkpoint, g.stream, (SELECT h FROM b), \
                   (SELECT checkpoint FROM up) FROM g"
            )
            },
            // A function that rules out bitmap scans (migration 004).
            // The group's N first (NULL: no such group), then its page
            // (none when a wanted bucket is outside 0..N: refused).
            read: format!(
                "SELECT n.buckets, r.stream, r.id, r.key, r.payload, r.created_at, r.bucket \
                 FROM (SELECT max(g.buckets) AS buckets FROM {gb} g WHERE g.group_name = $1) n \
                 LEFT JOIN LATERAL (SELECT * FROM {}.read_group($1, $2::int[], $3, $4) \
                   WHERE NOT EXISTS (SELECT 1 FROM unnest($2::int[]) w WHERE w >= n.buckets)) r \
                 ON true",
                quote_identifier(schema)
            ),
            status: status(schema, &bucket_expr("g.buckets::bigint"), &event, &gb, true),
            status_no_lag: status(schema, &bucket_expr("g.buckets::bigint"), &event, &gb, false),
            list: format!(
                "SELECT g.group_name, g.stream, max(g.buckets), \
                   (count(DISTINCT g.owner) FILTER (WHERE g.lease_expires_at > {NOW_MS}))::int, \
                   (SELECT count(*) FROM {gm} m WHERE m.group_name = g.group_name \
                      AND m.expires_at > {NOW_MS})::int, \
                   (SELECT count(*) FROM {gd} d WHERE d.group_name = g.group_name) \
                 FROM {gb} g GROUP BY g.group_name, g.stream ORDER BY g.group_name"
            ),
            leave: format!(
                "WITH r AS (UPDATE {gb} SET owner = NULL, lease_expires_at = NULL, \
                   released_how = 'leave', updated_at = {NOW_MS} \
                   WHERE group_name = $2 AND owner = $3 RETURNING 1), \
                 d AS (DELETE FROM {gm} WHERE group_name = $2 AND worker = $3) \
                 SELECT count(*) FROM r"
            ),
            // Fenced like a checkpoint: only the bucket's current holder.
            dead_add: format!(
                "INSERT INTO {gd} (group_name, id, bucket, stream, key, payload, error, \
                   attempts, failed_at, created_at) \
                 SELECT $2, $3, $4::int, $5, $6, $7, $8, $9::int, {NOW_MS} / 1000, $12 \
                 WHERE EXISTS (SELECT 1 FROM {gb} WHERE group_name = $2 AND bucket = $4::int \
                   AND owner = $10 AND epoch = $11) \
                 ON CONFLICT (group_name, id) DO UPDATE SET error = excluded.error, \
                   attempts = excluded.attempts, failed_at = excluded.failed_at, \
                   requeued = false \
                 RETURNING 1"
            ),
            // Locks every bucket row: no claim slips in while resizing.
            resize_facts: format!(
                "SELECT max(buckets), max(stream), \
                   count(*) FILTER (WHERE owner IS NOT NULL AND lease_expires_at > {NOW_MS}), \
                   min(checkpoint), max(epoch) \
                 FROM (SELECT * FROM {gb} WHERE group_name = $2 FOR UPDATE) g"
            ),
            counts: format!(
                "SELECT buckets, count(*) FROM {gb} WHERE group_name = $1 \
                 GROUP BY buckets ORDER BY buckets"
            ),
            resize_delete: format!("DELETE FROM {gb} WHERE group_name = $1"),
            resize_insert: format!(
                "INSERT INTO {gb} (group_name, bucket, buckets, stream, epoch, checkpoint, updated_at) \
                 SELECT $2, b, $3::int, $4, $5, $6, {NOW_MS} FROM generate_series(0, $3::int - 1) b"
            ),
            dead_list: format!(
                "SELECT {DEAD_COLUMNS} FROM {gd} \
                 WHERE group_name = $1 AND id > $2 ORDER BY id LIMIT $3"
            ),
            dead_requeue: format!(
                "UPDATE {gd} SET requeued = true WHERE group_name = $1 \
                 AND (cardinality($2::bigint[]) = 0 OR id = ANY($2::bigint[]))"
            ),
            dead_purge: format!(
                "DELETE FROM {gd} WHERE group_name = $1 \
                 AND (cardinality($2::bigint[]) = 0 OR id = ANY($2::bigint[]))"
            ),
            // SKIP LOCKED: two takers never wait on, nor both get, a row.
            dead_take: format!(
                "WITH t AS (SELECT d.id FROM {gd} d JOIN {gb} b \
                   ON b.group_name = d.group_name AND b.bucket = d.bucket \
                   WHERE d.group_name = $1 AND d.requeued AND b.owner = $2 \
                   ORDER BY d.id LIMIT $3 FOR UPDATE OF d SKIP LOCKED) \
                 UPDATE {gd} d SET requeued = false FROM t \
                 WHERE d.group_name = $1 AND d.id = t.id RETURNING {}",
                DEAD_COLUMNS
                    .split(", ")
                    .map(|c| format!("d.{c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            holds: format!(
                "SELECT 1 FROM {gb} WHERE group_name = $1 AND bucket = $2::int \
                 AND owner = $3 AND epoch = $4 FOR SHARE"
            ),
            dead_delete: format!("DELETE FROM {gd} WHERE group_name = $1 AND id = $2"),
        }
    }
}
