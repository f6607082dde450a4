//! The stream area on PostgreSQL: its operations (here) and statement
//! texts (`sql.rs`).

pub(crate) mod sql;

use alkstore_core::stream::{
    ConsumerOffset, Event, NewEvent, StreamDriver, StreamInfo, StreamOffsetCommitParams,
    StreamOffsetGetParams, StreamOffsetsParams, StreamReadParams, StreamRetentionParams,
    StreamStats, StreamStatsParams, StreamTrimParams,
};
use alkstore_core::validate::{count, secs};
use alkstore_core::{Checked, Error, Result};
use tokio_postgres::Row;

use crate::announce::Wakes;
use crate::conn::{fetch_one, fetch_opt, Exec};
use crate::PgEngine;
use sql::StreamSql;

/// Publish validated events on `e` (a pooled connection, or a
/// transaction: they are readable once it commits); their offsets in
/// order (the function returns the first, and a batch takes consecutive
/// offsets). With [`Wakes::AtCommit`] the function notifies the streams'
/// subscribers at commit; otherwise the caller announces them.
pub(crate) async fn publish_in<E: Exec + ?Sized>(
    e: &E,
    sql: &StreamSql,
    now: Option<i64>,
    events: &[NewEvent],
    wakes: Wakes,
) -> Result<Vec<i64>> {
    let streams: Vec<&str> = events.iter().map(|e| e.stream.as_str()).collect();
    // Owned: see `conn::Param`.
    let keys: Vec<Option<String>> = events.iter().map(|e| e.key.clone()).collect();
    let payloads: Vec<&[u8]> = events.iter().map(|e| e.payload.as_slice()).collect();
    let row = fetch_one(
        e,
        "stream_publish",
        &sql.publish,
        &[
            &now,
            &streams,
            &keys,
            &payloads,
            &wakes.channel(&sql.channel),
        ],
    )
    .await?;
    Ok(offsets_from(row.get(0)?, events.len()))
}

/// Save a consumer's offset on `e`: it moves only forward and never past
/// the stream's readable head. Returns the saved offset (the caller's, or
/// a later one already saved). With an expectation, it moves only from
/// exactly the expected offset (see `offset_commit_expected`), else
/// [`Error::NotHeld`](alkstore_core::Error::NotHeld) and nothing written;
/// inside a transaction the consumer's row stays locked until it ends.
pub(crate) async fn offset_commit_in<E: Exec + ?Sized>(
    e: &E,
    sql: &StreamSql,
    now: Option<i64>,
    p: &StreamOffsetCommitParams,
) -> Result<i64> {
    let op = "stream_offset_commit";
    if let Some(expected) = p.expected {
        let r = fetch_one(
            e,
            op,
            &sql.offset_commit_expected,
            &[&now, &p.stream, &p.consumer, &p.offset, &expected],
        )
        .await?;
        let (moved, inserted, head): (Option<i64>, Option<i64>, i64) =
            (r.get(0)?, r.get(1)?, r.get(2)?);
        if let Some(at) = moved.or(inserted) {
            return Ok(at);
        }
        if p.offset > head {
            return Err(alkstore_core::stream::beyond_head(
                p.offset, &p.stream, head,
            ));
        }
        // Read anew: the statement's snapshot may predate the commit that
        // moved it.
        let saved = match fetch_opt(e, op, &sql.offset_get, &[&p.stream, &p.consumer]).await? {
            Some(r) => Some(r.get(0)?),
            None => None,
        };
        return Err(alkstore_core::stream::offset_moved(
            &p.stream,
            &p.consumer,
            expected,
            saved,
        ));
    }
    let r = fetch_one(
        e,
        op,
        &sql.offset_commit,
        &[&now, &p.stream, &p.consumer, &p.offset],
    )
    .await?;
    let (moved, saved, head): (Option<i64>, Option<i64>, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
    match (moved, saved) {
        (Some(m), _) => Ok(m),
        (None, Some(s)) if s >= p.offset => Ok(s),
        // Within the head but not moved: a concurrent commit for the
        // same consumer got there first (the `saved` above predates it).
        (None, _) if p.offset <= head => {
            let row = fetch_opt(e, op, &sql.offset_get, &[&p.stream, &p.consumer]).await?;
            match row {
                Some(r) => r.get(0),
                None => Ok(p.offset),
            }
        }
        _ => Err(alkstore_core::stream::beyond_head(
            p.offset, &p.stream, head,
        )),
    }
}

fn consumer_offset(r: &Row) -> ConsumerOffset {
    ConsumerOffset {
        consumer: r.get(0),
        offset: r.get(1),
        updated_at: r.get(2),
        lag: count(r.get(3)),
    }
}

/// Calls of `stream_publish` waiting to be written together.
pub(crate) type PublishGroup = crate::combine::Combiner<Vec<NewEvent>, Vec<i64>>;

/// Most events one transaction may publish: offsets are `(xid << 16) + n`.
const OFFSETS_PER_XACT: usize = 1 << 16;

/// Offsets `base..base + n`.
fn offsets_from(base: i64, n: usize) -> Vec<i64> {
    (0..n)
        .map(|i| base + i64::try_from(i).unwrap_or(i64::MAX))
        .collect()
}

impl PgEngine {
    /// Publish `events` in a transaction of their own, then announce their streams to other
    /// processes' subscribers (see `crate::announce`).
    async fn publish_now(&self, events: &[NewEvent]) -> Result<Vec<i64>> {
        let client = self.write_client().await?;
        let sql = &self.inner.stream_sql;
        let offsets = if events.len() <= OFFSETS_PER_XACT {
            let streams: Vec<&str> = events.iter().map(|e| e.stream.as_str()).collect();
            // Owned: see `conn::Param`.
            let keys: Vec<Option<String>> = events.iter().map(|e| e.key.clone()).collect();
            let payloads: Vec<&[u8]> = events.iter().map(|e| e.payload.as_slice()).collect();
            let now = self.now_override();
            let row = fetch_one(
                &self.on(&client),
                "stream_publish",
                &sql.publish_alone,
                &[&now, &streams, &keys, &payloads],
            )
            .await?;
            offsets_from(row.get(0)?, events.len())
        } else {
            // The function's check refuses them with its reason.
            publish_in(
                &self.on(&client),
                sql,
                self.now_override(),
                events,
                Wakes::AfterCommit,
            )
            .await?
        };
        let mut announced: Vec<&str> = Vec::new();
        for e in events {
            if !announced.contains(&e.stream.as_str()) {
                announced.push(&e.stream);
                self.inner.announce.stream(&e.stream);
            }
        }
        Ok(offsets)
    }

    /// Write `batch`, then whatever gathered meanwhile, until nobody waits.
    async fn publish_runner(self, batch: crate::combine::Batch<Vec<NewEvent>, Vec<i64>>) {
        let group = self.inner.publishes.clone();
        let engine = &self;
        crate::combine::run(group, batch, "stream_publish", |events| async move {
            engine.publish_now(&events).await
        })
        .await;
    }
}

impl PgEngine {
    /// The autocommit `stream_publish`: small batches join the group
    /// commit (see `crate::combine`).
    pub(crate) async fn publish_auto(&self, events: Vec<NewEvent>) -> Result<Vec<i64>> {
        let op = "stream_publish";
        let bytes: usize = events.iter().map(|e| e.payload.len()).sum();
        if crate::combine::groupable(events.len(), bytes) {
            let rows = events.len();
            return crate::combine::submit(&self.inner.publishes, events, rows, op, |batch| {
                tokio::spawn(self.clone().publish_runner(batch));
            })
            .await;
        }
        self.publish_now(&events).await
    }
}

impl StreamDriver for PgEngine {
    async fn stream_read(&self, params: Checked<StreamReadParams>) -> Result<Vec<Event>> {
        let p = params.into_inner();
        let limit = i64::from(p.limit);
        let rows = match p.before {
            Some(before) => {
                self.query(
                    "stream_read",
                    &self.inner.stream_sql.read_back,
                    &[&p.stream, &p.after, &limit, &before],
                )
                .await?
            }
            None => {
                self.query(
                    "stream_read",
                    &self.inner.stream_sql.read,
                    &[&p.stream, &p.after, &limit],
                )
                .await?
            }
        };
        let stream: std::sync::Arc<str> = p.stream.as_str().into();
        Ok(rows
            .iter()
            .map(|r| Event {
                offset: r.get(0),
                stream: stream.clone(),
                key: r.get(1),
                payload: r.get(2),
                created_at: r.get(3),
            })
            .collect())
    }

    async fn stream_offset_get(
        &self,
        params: Checked<StreamOffsetGetParams>,
    ) -> Result<Option<i64>> {
        let p = params.into_inner();
        let rows = self
            .query(
                "stream_offset_get",
                &self.inner.stream_sql.offset_get,
                &[&p.stream, &p.consumer],
            )
            .await?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    async fn stream_offsets(
        &self,
        params: Checked<StreamOffsetsParams>,
    ) -> Result<Vec<ConsumerOffset>> {
        let p = params.into_inner();
        let rows = self
            .query(
                "stream_offsets",
                &self.inner.stream_sql.offsets,
                &[&p.stream],
            )
            .await?;
        Ok(rows.iter().map(consumer_offset).collect())
    }

    async fn stream_stats(&self, params: Checked<StreamStatsParams>) -> Result<StreamStats> {
        let p = params.into_inner();
        let op = "stream_stats";
        let rows = self
            .query(op, &self.inner.stream_sql.stats, &[&p.stream])
            .await?;
        let r = rows.first().ok_or_else(|| Error::database(op, "no row"))?;
        let held_back = count(r.get(3));
        let consumers = self
            .query(op, &self.inner.stream_sql.offsets, &[&p.stream])
            .await?
            .iter()
            .map(consumer_offset)
            .collect();
        Ok(StreamStats {
            head: r.get(0),
            first: r.get(1),
            events: count(r.get(2)),
            held_back,
            held_back_by_s: if held_back > 0 { r.get(5) } else { None },
            max_age_s: r.get(4),
            consumers,
            stream: p.stream,
        })
    }

    async fn stream_list(&self) -> Result<Vec<StreamInfo>> {
        let rows = self
            .query("stream_list", &self.inner.stream_sql.list, &[])
            .await?;
        Ok(rows
            .iter()
            .map(|r| StreamInfo {
                stream: r.get(0),
                head: r.get(1),
                events: count(r.get(2)),
            })
            .collect())
    }

    async fn stream_trim(&self, params: Checked<StreamTrimParams>) -> Result<u64> {
        let p = params.into_inner();
        let op = "stream_trim";
        let age_s = p.older_than.map(secs);
        let rows = self
            .query(
                op,
                &self.inner.stream_sql.trim,
                &[&self.now_override(), &p.stream, &p.before, &age_s],
            )
            .await?;
        let r = rows.first().ok_or_else(|| Error::database(op, "no row"))?;
        let (deleted, head): (i64, i64) = (r.get(0), r.get(1));
        if let Some(before) = p.before {
            if before > head + 1 {
                return Err(alkstore_core::stream::trim_past_head(
                    before, &p.stream, head,
                ));
            }
        }
        Ok(count(deleted))
    }

    async fn stream_retention_set(&self, params: Checked<StreamRetentionParams>) -> Result<()> {
        let p = params.into_inner();
        let max_age_s = p.max_age.map(secs);
        self.query(
            "stream_retention_set",
            &self.inner.stream_sql.retention_set,
            &[&p.stream, &max_age_s],
        )
        .await
        .map(|_| ())
    }
}
