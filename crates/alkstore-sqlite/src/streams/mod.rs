//! The stream area on SQLite: its statements.

use alkstore_core::group::hashtextextended;
use alkstore_core::stream::{
    ConsumerOffset, Event, NewEvent, StreamDriver, StreamInfo, StreamOffsetCommitParams,
    StreamOffsetGetParams, StreamOffsetsParams, StreamReadParams, StreamRetentionParams,
    StreamStats, StreamStatsParams, StreamTrimParams,
};
use alkstore_core::validate::count;
use alkstore_core::validate::secs;
use alkstore_core::{Checked, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::{db, SqliteEngine};

/// Rows per multi-row `INSERT` (5 parameters each), largest first: a batch
/// is cut into these sizes, so at most four statements take places in the
/// connection's statement cache.
const INSERT_SIZES: [usize; 4] = [64, 16, 4, 1];

/// The `INSERT` text for `rows` events, built once per size.
fn insert_text(rows: usize) -> &'static str {
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let texts = TEXTS.get_or_init(|| INSERT_SIZES.iter().map(|n| build_insert(*n)).collect());
    INSERT_SIZES
        .iter()
        .position(|n| *n == rows)
        .and_then(|i| texts.get(i))
        .map_or("", String::as_str)
}

/// `INSERT … VALUES (…), (…)` for `rows` events.
fn build_insert(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO __alkstore_event (stream, id, key, payload, created_at, key_hash) VALUES ",
    );
    for r in 0..rows {
        if r > 0 {
            sql.push_str(", ");
        }
        let b = r * 6;
        sql.push_str(&format!(
            "(?{}, ?{}, ?{}, ?{}, ?{}, ?{})",
            b + 1,
            b + 2,
            b + 3,
            b + 4,
            b + 5,
            b + 6
        ));
    }
    sql
}

/// Append validated events at `now`; their offsets in order. Shared by the
/// engine and the outbox (whose caller's transaction holds the write lock,
/// so the counter bump and the inserts commit or roll back together).
pub(crate) fn insert_events(conn: &Connection, events: &[NewEvent], now: i64) -> Result<Vec<i64>> {
    let op = "stream_publish";
    let n = i64::try_from(events.len()).unwrap_or(i64::MAX);
    let last: i64 = conn
        .prepare_cached(
            "INSERT INTO __alkstore_meta (key, value) VALUES ('event_seq', ?1) \
             ON CONFLICT (key) DO UPDATE SET value = value + ?1 RETURNING value",
        )
        .and_then(|mut s| s.query_row([n], |r| r.get(0)))
        .map_err(db(op))?;
    let first = last - n + 1;
    let offsets: Vec<i64> = (first..=last).collect();
    let mut at = 0;
    while at < events.len() {
        let size = INSERT_SIZES
            .into_iter()
            .find(|s| *s <= events.len() - at)
            .unwrap_or(1);
        let (chunk, ids) = (&events[at..at + size], &offsets[at..at + size]);
        at += size;
        let mut stmt = conn.prepare_cached(insert_text(size)).map_err(db(op))?;
        // Each keyed event's hash, stored so consumer groups place it in
        // a bucket without hashing every row they scan.
        let hashes: Vec<Option<i64>> = chunk
            .iter()
            .map(|e| e.key.as_ref().map(|k| hashtextextended(k.as_bytes(), 0)))
            .collect();
        let mut args: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(chunk.len() * 6);
        for ((e, id), hash) in chunk.iter().zip(ids).zip(&hashes) {
            args.push(&e.stream);
            args.push(id);
            args.push(&e.key);
            args.push(&e.payload);
            args.push(&now);
            args.push(hash);
        }
        stmt.execute(args.as_slice()).map_err(db(op))?;
    }
    Ok(offsets)
}

/// The highest offset a consumer of `stream` may commit: the stream's
/// highest event, or the highest one a trim removed.
pub(crate) fn head_bound(conn: &Connection, op: &'static str, stream: &str) -> Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT MAX(COALESCE((SELECT MAX(id) FROM __alkstore_event WHERE stream = ?1), 0), \
                COALESCE((SELECT trimmed_head FROM __alkstore_stream WHERE stream = ?1), 0))",
    )
    .and_then(|mut s| s.query_row([stream], |r| r.get::<_, i64>(0)))
    .map(|h| (h > 0).then_some(h))
    .map_err(db(op))
}

/// Delete the events `where_` selects (after `stream = ?1`), remembering the
/// highest deleted offset; returns how many went.
fn delete_events(
    conn: &Connection,
    op: &'static str,
    stream: &str,
    before: Option<i64>,
    created_before: Option<i64>,
) -> Result<u64> {
    let highest: Option<i64> = conn
        .prepare_cached(
            "SELECT MAX(id) FROM __alkstore_event WHERE stream = ?1 \
             AND (id < ?2 OR created_at < ?3)",
        )
        .and_then(|mut s| s.query_row(params![stream, before, created_before], |r| r.get(0)))
        .map_err(db(op))?;
    let Some(highest) = highest else {
        return Ok(0);
    };
    conn.prepare_cached(
        "INSERT INTO __alkstore_stream (stream, trimmed_head) VALUES (?1, ?2) \
         ON CONFLICT (stream) DO UPDATE SET trimmed_head = \
           MAX(COALESCE(__alkstore_stream.trimmed_head, 0), excluded.trimmed_head)",
    )
    .and_then(|mut s| s.execute(params![stream, highest]))
    .map_err(db(op))?;
    conn.prepare_cached(
        "DELETE FROM __alkstore_event WHERE stream = ?1 AND (id < ?2 OR created_at < ?3)",
    )
    .and_then(|mut s| s.execute(params![stream, before, created_before]))
    .map(|n| n as u64)
    .map_err(db(op))
}

/// Maintenance: trim every stream past its retention; how many went.
pub(crate) fn trim_retained(conn: &Connection, op: &'static str, now: i64) -> Result<u64> {
    let streams: Vec<(String, i64)> = conn
        .prepare_cached(
            "SELECT stream, max_age_s FROM __alkstore_stream WHERE max_age_s IS NOT NULL",
        )
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .map_err(db(op))?;
    let mut trimmed = 0;
    for (stream, max_age_s) in streams {
        trimmed += delete_events(conn, op, &stream, None, Some(now - max_age_s))?;
    }
    Ok(trimmed)
}

/// Consumers of `stream` with their lag.
fn consumers(conn: &Connection, op: &'static str, stream: &str) -> Result<Vec<ConsumerOffset>> {
    conn.prepare_cached(
        "SELECT o.consumer, o.\"offset\", o.updated_at, \
           (SELECT COUNT(*) FROM __alkstore_event e WHERE e.stream = o.stream AND e.id > o.\"offset\") \
         FROM __alkstore_stream_offset o WHERE o.stream = ?1 ORDER BY o.consumer",
    )
    .and_then(|mut s| {
        s.query_map([stream], |r| {
            Ok(ConsumerOffset {
                consumer: r.get(0)?,
                offset: r.get(1)?,
                updated_at: r.get(2)?,
                lag: count(r.get(3)?),
            })
        })?
        .collect()
    })
    .map_err(db(op))
}

/// Save a consumer's offset at `now`: monotone (a lower or equal offset
/// changes nothing and returns the saved one), never beyond the stream's
/// head ([`InvalidInput`](alkstore_core::Error::InvalidInput)); with an
/// expectation, only from exactly the expected offset (no saved offset
/// counts as 0), else [`NotHeld`](alkstore_core::Error::NotHeld) and
/// nothing written. The caller holds the write lock (the writer, or a
/// transaction), so nobody moves the offset between the check and the
/// write, nor before the transaction ends. Shared by the writer and
/// transactions.
pub(crate) fn offset_commit_in(
    conn: &Connection,
    p: &StreamOffsetCommitParams,
    now: i64,
) -> Result<i64> {
    let op = "stream_offset_commit";
    let saved: Option<i64> = conn
        .prepare_cached(
            "SELECT \"offset\" FROM __alkstore_stream_offset WHERE stream = ?1 AND consumer = ?2",
        )
        .and_then(|mut s| {
            s.query_row([&p.stream, &p.consumer], |r| r.get(0))
                .optional()
        })
        .map_err(db(op))?;
    if p.expected.is_none() {
        if let Some(saved) = saved.filter(|s| *s >= p.offset) {
            return Ok(saved);
        }
    }
    let head = head_bound(conn, op, &p.stream)?.unwrap_or(0);
    if p.offset > head {
        return Err(alkstore_core::stream::beyond_head(
            p.offset, &p.stream, head,
        ));
    }
    if let Some(expected) = p.expected {
        if saved.unwrap_or(0) != expected {
            return Err(alkstore_core::stream::offset_moved(
                &p.stream,
                &p.consumer,
                expected,
                saved,
            ));
        }
    }
    conn.prepare_cached(
        "INSERT INTO __alkstore_stream_offset (stream, consumer, \"offset\", updated_at) \
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (stream, consumer) DO UPDATE \
         SET \"offset\" = excluded.\"offset\", updated_at = excluded.updated_at \
         WHERE excluded.\"offset\" > __alkstore_stream_offset.\"offset\"",
    )
    .and_then(|mut s| s.execute(params![p.stream, p.consumer, p.offset, now]))
    .map_err(db(op))?;
    Ok(p.offset)
}

impl StreamDriver for SqliteEngine {
    async fn stream_read(&self, params: Checked<StreamReadParams>) -> Result<Vec<Event>> {
        let p = params.into_inner();
        let stream: std::sync::Arc<str> = p.stream.as_str().into();
        self.read("stream_read", move |conn| {
            // Backwards (an operator paging from the head) is its own
            // statement: the forward read stays the one readers prepare.
            let text = if p.before.is_some() {
                "SELECT id, key, payload, created_at FROM __alkstore_event \
                 WHERE stream = ?1 AND id > ?2 AND id < ?4 ORDER BY id DESC LIMIT (SELECT ?3)"
            } else {
                "SELECT id, key, payload, created_at FROM __alkstore_event \
                 WHERE stream = ?1 AND id > ?2 ORDER BY id LIMIT (SELECT ?3)"
            };
            conn.prepare_cached(text)
                .and_then(|mut s| {
                    let mut events = Vec::with_capacity(p.limit as usize);
                    let mut rows = match p.before {
                        Some(before) => s.query(params![p.stream, p.after, p.limit, before])?,
                        None => s.query(params![p.stream, p.after, p.limit])?,
                    };
                    while let Some(r) = rows.next()? {
                        events.push(Event {
                            offset: r.get(0)?,
                            stream: stream.clone(),
                            key: r.get(1)?,
                            payload: r.get(2)?,
                            created_at: r.get(3)?,
                        });
                    }
                    Ok(events)
                })
                .map_err(db("stream_read"))
        })
        .await
    }

    async fn stream_offset_get(
        &self,
        params: Checked<StreamOffsetGetParams>,
    ) -> Result<Option<i64>> {
        let p = params.into_inner();
        self.read("stream_offset_get", move |conn| {
            conn.prepare_cached(
                "SELECT \"offset\" FROM __alkstore_stream_offset WHERE stream = ?1 AND consumer = ?2",
            )
            .and_then(|mut s| s.query_row([&p.stream, &p.consumer], |r| r.get(0)).optional())
            .map_err(db("stream_offset_get"))
        })
        .await
    }

    async fn stream_offsets(
        &self,
        params: Checked<StreamOffsetsParams>,
    ) -> Result<Vec<ConsumerOffset>> {
        let p = params.into_inner();
        self.read("stream_offsets", move |conn| {
            consumers(conn, "stream_offsets", &p.stream)
        })
        .await
    }

    async fn stream_stats(&self, params: Checked<StreamStatsParams>) -> Result<StreamStats> {
        let p = params.into_inner();
        self.read("stream_stats", move |conn| {
            let op = "stream_stats";
            let (head, first, events): (Option<i64>, Option<i64>, i64) = conn
                .prepare_cached(
                    "SELECT MAX(id), MIN(id), COUNT(*) FROM __alkstore_event WHERE stream = ?1",
                )
                .and_then(|mut s| {
                    s.query_row([&p.stream], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                })
                .map_err(db(op))?;
            let max_age_s: Option<i64> = conn
                .prepare_cached("SELECT max_age_s FROM __alkstore_stream WHERE stream = ?1")
                .and_then(|mut s| s.query_row([&p.stream], |r| r.get(0)).optional())
                .map_err(db(op))?
                .flatten();
            Ok(StreamStats {
                head,
                first,
                events: count(events),
                // One writer at a time: nothing committed is ever held back.
                held_back: 0,
                held_back_by_s: None,
                consumers: consumers(conn, op, &p.stream)?,
                max_age_s,
                stream: p.stream,
            })
        })
        .await
    }

    async fn stream_list(&self) -> Result<Vec<StreamInfo>> {
        self.read("stream_list", |conn| {
            conn.prepare_cached(
                "SELECT s.stream, MAX(e.id), COUNT(e.id) FROM \
                   (SELECT stream FROM __alkstore_event UNION SELECT stream FROM __alkstore_stream_offset \
                    UNION SELECT stream FROM __alkstore_stream) s \
                 LEFT JOIN __alkstore_event e ON e.stream = s.stream \
                 GROUP BY s.stream ORDER BY s.stream",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok(StreamInfo {
                        stream: r.get(0)?,
                        head: r.get(1)?,
                        events: count(r.get(2)?),
                    })
                })?
                .collect()
            })
            .map_err(db("stream_list"))
        })
        .await
    }

    async fn stream_trim(&self, params: Checked<StreamTrimParams>) -> Result<u64> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("stream_trim", move |st| {
                let op = "stream_trim";
                if let Some(before) = p.before {
                    let head = head_bound(&st.conn, op, &p.stream)?.unwrap_or(0);
                    if before > head + 1 {
                        return Err(alkstore_core::stream::trim_past_head(
                            before, &p.stream, head,
                        ));
                    }
                }
                let created_before = p.older_than.map(|age| st.clock.now() - secs(age));
                delete_events(&st.conn, op, &p.stream, p.before, created_before)
            })
            .await
    }

    async fn stream_retention_set(&self, params: Checked<StreamRetentionParams>) -> Result<()> {
        let p = params.into_inner();
        let max_age_s = p.max_age.map(secs);
        self.inner
            .writer
            .write("stream_retention_set", move |st| {
                st.conn
                    .prepare_cached(
                        "INSERT INTO __alkstore_stream (stream, max_age_s) VALUES (?1, ?2) \
                         ON CONFLICT (stream) DO UPDATE SET max_age_s = excluded.max_age_s",
                    )
                    .and_then(|mut s| s.execute(params![p.stream, max_age_s]))
                    .map(|_| ())
                    .map_err(db("stream_retention_set"))
            })
            .await
    }
}
