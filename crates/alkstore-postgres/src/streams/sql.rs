//! Stream statement texts, built once per engine with the quoted schema.
//!
//! [`horizon`] is the gap-safety rule: the first offset an event still
//! invisible to the statement's snapshot could take. Offsets are
//! `(base << 16) + n`, a publisher's base taken after it registered as one
//! (migration 018), so a reader stops below the oldest open publisher's
//! base and passes transactions that publish nothing.

use crate::queues::sql::NOW;
use crate::schema::{quote_identifier, tables, QualifiedTable};

/// The first offset an event still invisible to the statement could take,
/// for the stream that SQL expression `stream` names (`NULL`: any stream).
/// Give an expression that does not depend on the row, so that the horizon
/// is one value per statement.
pub(crate) fn horizon(schema: &str, stream: &str) -> String {
    format!(
        "(SELECT {}.stream_horizon({stream}::text))",
        quote_identifier(schema)
    )
}

pub(crate) struct StreamSql {
    /// The schema's stream channel (`stream_channel`), for publishes whose
    /// NOTIFY goes with their transaction's commit.
    pub channel: String,
    pub publish: String,
    /// Publish in a transaction of its own (see `StreamSql::new`).
    pub publish_alone: String,
    pub read: String,
    /// Newest first, before `$4` (an operator paging back from the head).
    pub read_back: String,
    pub offset_get: String,
    pub offset_commit: String,
    pub offset_commit_expected: String,
    pub offsets: String,
    pub stats: String,
    pub list: String,
    pub trim: String,
    pub retention_set: String,
    pub sweep_trim: String,
}

/// The highest offset a consumer of stream `$2` may commit: its highest
/// readable event, or the highest one a trim removed.
fn bound(
    schema: &str,
    event: &QualifiedTable<'_>,
    stream: &QualifiedTable<'_>,
    wanted: &str,
) -> String {
    format!(
        "SELECT GREATEST({}, \
           COALESCE((SELECT trimmed_head FROM {stream} WHERE stream = $2), 0)) AS h",
        head(schema, event, "$2", wanted)
    )
}

/// The snapshot rule before migration 018, always gap-safe: nothing at or
/// above the oldest open transaction's id, whatever it writes.
const SNAPSHOT_HORIZON: &str =
    "(SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::bigint) << 16)";

/// The highest readable offset of the stream SQL expression `stream` names
/// (0: none), at least as high as `wanted` when it is readable: for a
/// bound a commit checks, which must not move back between a consumer's
/// read and its commit. The statement's own snapshot rule answers first;
/// only when it falls short of `wanted` (NULL: always) does the stream's
/// `stream_head` look at who publishes, in a snapshot of its own
/// (migration 018).
pub(crate) fn head(schema: &str, event: &QualifiedTable<'_>, stream: &str, wanted: &str) -> String {
    format!(
        "(SELECT CASE WHEN {wanted}::bigint IS NULL OR {wanted}::bigint > o.h \
            THEN GREATEST(o.h, {}.stream_head({stream}::text)) ELSE o.h END \
          FROM (SELECT COALESCE((SELECT max(id) FROM {event} \
            WHERE stream = {stream} AND id < {SNAPSHOT_HORIZON}), 0) AS h) o)",
        quote_identifier(schema)
    )
}

impl StreamSql {
    pub(crate) fn new(schema: &str) -> Self {
        let event = QualifiedTable::new(schema, tables::EVENT);
        let stream = QualifiedTable::new(schema, tables::STREAM);
        let off = QualifiedTable::new(schema, tables::STREAM_OFFSET);
        // The head bound of stream `$2` that commits of offset `$4` check,
        // and that trims before `$3` check.
        let bound_commit = bound(schema, &event, &stream, "$4");
        let bound_trim = bound(schema, &event, &stream, "($3::bigint - 1)");
        // Per stream `$1` (the offsets and stats statements read one).
        let h1 = horizon(schema, "$1");
        let any = horizon(schema, "NULL");
        let lag = format!(
            "(SELECT count(*) FROM {event} e WHERE e.stream = o.stream AND e.id > o.\"offset\" \
               AND e.id < {h1})"
        );
        StreamSql {
            channel: crate::schema::stream_channel(schema),
            // `$5` the channel to notify the streams on at commit, or empty
            // (see `crate::announce`).
            publish: format!(
                "SELECT {}.publish($2::text[], $3::text[], $4::bytea[], $1::bigint, $5::text)",
                quote_identifier(schema)
            ),
            // The engine's own autocommit publish, as plain SQL: the
            // `publish()` function's count of events earlier in the
            // transaction is always 0 here, so the offsets are
            // `(xid << 16) + i` from one statement without a PL/pgSQL call
            // (3-5 % more one-event publishes from 4 callers). An xid past
            // the offset range fails the cast, with the reason in the
            // error's text. At most `OFFSETS_PER_XACT` events.
            publish_alone: format!(
                "WITH b AS (SELECT CASE WHEN x < (1::bigint << 47) THEN x << 16 \
                   ELSE ('alkstore: transaction id ' || x || ' is past the stream offset range')::bigint \
                   END AS base FROM (SELECT pg_current_xact_id()::text::bigint AS x) t), \
                 ins AS (INSERT INTO {event} (stream, id, key, payload, created_at) \
                   SELECT e.stream, b.base + e.i - 1, e.key, e.payload, \
                     COALESCE($1::bigint, floor(extract(epoch FROM now()))::bigint) \
                   FROM b, unnest($2::text[], $3::text[], $4::bytea[]) \
                     WITH ORDINALITY AS e(stream, key, payload, i)) \
                 SELECT base FROM b"
            ),
            // A function that rules out bitmap scans (migration 004).
            read: format!(
                "SELECT id, key, payload, created_at FROM {}.read_events($1, $2, $3)",
                quote_identifier(schema)
            ),
            // Below the horizon too, so paging back never shows an event
            // a forward reader could not read yet.
            read_back: format!(
                "SELECT id, key, payload, created_at FROM {event} \
                 WHERE stream = $1 AND id > $2 AND id < LEAST($4::bigint, {h1}) \
                 ORDER BY id DESC LIMIT $3"
            ),
            offset_get: format!(
                "SELECT \"offset\" FROM {off} WHERE stream = $1 AND consumer = $2"
            ),
            // The saved offset moves only forward and never past the head;
            // returns (moved to, saved before, the head bound).
            offset_commit: format!(
                "WITH saved AS (SELECT \"offset\" FROM {off} WHERE stream = $2 AND consumer = $3), \
                 bound AS ({bound_commit}), \
                 up AS (INSERT INTO {off} AS o (stream, consumer, \"offset\", updated_at) \
                   SELECT $2, $3, $4, {NOW} FROM bound WHERE $4 <= bound.h \
                   ON CONFLICT (stream, consumer) DO UPDATE \
                   SET \"offset\" = excluded.\"offset\", updated_at = excluded.updated_at \
                   WHERE excluded.\"offset\" > o.\"offset\" RETURNING \"offset\") \
                 SELECT (SELECT \"offset\" FROM up), (SELECT \"offset\" FROM saved), (SELECT h FROM bound)"
            ),
            // A compare-and-set: the saved offset moves to `$4` only from
            // exactly `$5` (no row counts as 0), never past the head. The
            // row it updates or inserts stays locked until the transaction
            // ends: a concurrent commit waits (the update re-checks the
            // row once it is free; the insert's conflict waits for the
            // other insert to end) and then moves nothing. Returns (moved
            // to, inserted at, the head bound).
            offset_commit_expected: format!(
                "WITH bound AS ({bound_commit}), \
                 up AS (UPDATE {off} o SET \"offset\" = $4, updated_at = {NOW} \
                   WHERE o.stream = $2 AND o.consumer = $3 AND o.\"offset\" = $5 \
                     AND $4 <= (SELECT h FROM bound) RETURNING o.\"offset\"), \
                 ins AS (INSERT INTO {off} (stream, consumer, \"offset\", updated_at) \
                   SELECT $2, $3, $4, {NOW} FROM bound \
                   WHERE $5 = 0 AND $4 <= bound.h AND NOT EXISTS (SELECT 1 FROM up) \
                   ON CONFLICT (stream, consumer) DO NOTHING RETURNING \"offset\") \
                 SELECT (SELECT \"offset\" FROM up), (SELECT \"offset\" FROM ins), (SELECT h FROM bound)"
            ),
            offsets: format!(
                "SELECT o.consumer, o.\"offset\", o.updated_at, {lag} FROM {off} o \
                 WHERE o.stream = $1 ORDER BY o.consumer"
            ),
            // The age of what holds events back: the oldest open
            // publisher (a session holding more than a read's lock on the
            // event table; see migration 018).
            stats: format!(
                "WITH h AS MATERIALIZED (SELECT {h1} AS x) \
                 SELECT max(id) FILTER (WHERE id < h.x), min(id) FILTER (WHERE id < h.x), \
                   count(*) FILTER (WHERE id < h.x), count(*) FILTER (WHERE id >= h.x), \
                   (SELECT max_age_s FROM {stream} WHERE stream = $1), \
                   (SELECT floor(extract(epoch FROM now() - min(a.xact_start)))::bigint \
                      FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                      WHERE l.locktype = 'relation' AND l.relation = {event_literal}::regclass \
                        AND l.mode <> 'AccessShareLock' AND l.pid <> pg_backend_pid()) \
                 FROM {event} CROSS JOIN h WHERE stream = $1",
                event_literal = crate::schema::quote_literal(&event.to_string())
            ),
            list: format!(
                "SELECT s.stream, max(e.id), count(e.id) FROM \
                   (SELECT DISTINCT stream FROM {event} UNION SELECT stream FROM {off} \
                    UNION SELECT stream FROM {stream}) s \
                 LEFT JOIN {event} e ON e.stream = s.stream AND e.id < {any} \
                 GROUP BY s.stream ORDER BY s.stream"
            ),
            // $2 stream, $3 before (or NULL), $4 age in seconds (or NULL).
            // Deletes nothing when $3 is past the head + 1, and nothing past
            // the head bound (every event at or below it is final); returns
            // (deleted, the head bound).
            trim: format!(
                "WITH bound AS ({bound_trim}), \
                 gone AS (DELETE FROM {event} WHERE stream = $2 AND id <= (SELECT h FROM bound) \
                   AND (id < $3::bigint OR created_at < {NOW} - $4::bigint) \
                   AND ($3::bigint IS NULL OR $3::bigint <= (SELECT h FROM bound) + 1) RETURNING id), \
                 mark AS (INSERT INTO {stream} AS s (stream, trimmed_head) \
                   SELECT $2, max(id) FROM gone HAVING max(id) IS NOT NULL \
                   ON CONFLICT (stream) DO UPDATE \
                   SET trimmed_head = GREATEST(COALESCE(s.trimmed_head, 0), excluded.trimmed_head)) \
                 SELECT (SELECT count(*) FROM gone), (SELECT h FROM bound)"
            ),
            retention_set: format!(
                "INSERT INTO {stream} (stream, max_age_s) VALUES ($1, $2) \
                 ON CONFLICT (stream) DO UPDATE SET max_age_s = excluded.max_age_s"
            ),
            sweep_trim: format!(
                "WITH r AS (SELECT stream, max_age_s FROM {stream} WHERE max_age_s IS NOT NULL), \
                 gone AS (DELETE FROM {event} e USING r WHERE e.stream = r.stream \
                   AND e.created_at < {NOW} - r.max_age_s AND e.id < {any} RETURNING e.stream, e.id), \
                 mark AS (INSERT INTO {stream} AS s (stream, trimmed_head) \
                   SELECT stream, max(id) FROM gone GROUP BY stream \
                   ON CONFLICT (stream) DO UPDATE \
                   SET trimmed_head = GREATEST(COALESCE(s.trimmed_head, 0), excluded.trimmed_head)) \
                 SELECT count(*) FROM gone"
            ),
        }
    }
}
