//! The throughput table: counting finished jobs by queue within a write
//! ([`Finished`]), folding old buckets into totals (for the sweep), and
//! the `queue_throughput` read.

use std::sync::Arc;

use alkstore_core::queue::{
    secs, QueueThroughput, QueueThroughputParams, QueueTotals, ThroughputBucket,
    THROUGHPUT_BUCKET_S, THROUGHPUT_RETENTION,
};
use alkstore_core::validate::count;
use alkstore_core::{Checked, Result};
use rusqlite::{params, Connection};

use crate::{db, SqliteEngine};

/// Count `completed` and `failed` jobs of `queue` in the bucket of `now`
/// (see migration 012), in the caller's transaction.
fn count_finished(
    conn: &Connection,
    op: &'static str,
    now: i64,
    queue: &str,
    completed: u64,
    failed: u64,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO __alkstore_queue_throughput (bucket, queue, shard, completed, failed) \
         VALUES (?1, ?2, 0, ?3, ?4) ON CONFLICT (bucket, queue, shard) DO UPDATE \
         SET completed = completed + excluded.completed, failed = failed + excluded.failed",
    )
    .and_then(|mut s| {
        s.execute(params![
            now - now.rem_euclid(THROUGHPUT_BUCKET_S),
            queue,
            completed,
            failed
        ])
    })
    .map_err(db(op))?;
    Ok(())
}

/// Jobs finished per queue within one write, counted once per queue when
/// the write ends ([`Finished::record`]).
#[derive(Default)]
pub(super) struct Finished {
    /// Queue, completed, failed: a batch rarely spans more than one queue.
    by_queue: Vec<(Arc<str>, u64, u64)>,
}

impl Finished {
    pub(super) fn add(&mut self, queue: &str, completed: u64, failed: u64) {
        match self.by_queue.iter_mut().find(|(q, _, _)| **q == *queue) {
            Some(entry) => {
                entry.1 += completed;
                entry.2 += failed;
            }
            None => self.by_queue.push((queue.into(), completed, failed)),
        }
    }

    pub(super) fn record(&self, conn: &Connection, op: &'static str, now: i64) -> Result<()> {
        self.by_queue
            .iter()
            .try_for_each(|(q, c, f)| count_finished(conn, op, now, q, *c, *f))
    }
}

/// Fold throughput buckets past the retention into bucket 0, one row per
/// queue: the totals stay whole, the table stays small.
pub(crate) fn fold_throughput(conn: &Connection, op: &'static str, now: i64) -> Result<()> {
    let cutoff = now - secs(THROUGHPUT_RETENTION);
    // `WHERE true`: SQLite's rule for an upsert whose source is a SELECT.
    conn.prepare_cached(
        "INSERT INTO __alkstore_queue_throughput (bucket, queue, shard, completed, failed) \
         SELECT 0, queue, 0, sum(completed), sum(failed) FROM __alkstore_queue_throughput \
         WHERE bucket > 0 AND bucket <= ?1 GROUP BY queue \
         ON CONFLICT (bucket, queue, shard) DO UPDATE \
         SET completed = completed + excluded.completed, failed = failed + excluded.failed",
    )
    .and_then(|mut s| s.execute([cutoff]))
    .map_err(db(op))?;
    conn.prepare_cached(
        "DELETE FROM __alkstore_queue_throughput WHERE bucket > 0 AND bucket <= ?1",
    )
    .and_then(|mut s| s.execute([cutoff]))
    .map_err(db(op))?;
    Ok(())
}

/// The driver's `queue_throughput`: the buckets in the window, and each
/// queue's totals.
pub(super) async fn queue_throughput(
    engine: &SqliteEngine,
    params: Checked<QueueThroughputParams>,
) -> Result<QueueThroughput> {
    let now = engine.now();
    let since = now - params.window_s();
    let QueueThroughputParams { queue, .. } = params.into_inner();
    engine
        .read("queue_throughput", move |conn| {
            let op = "queue_throughput";
            let buckets = conn
                .prepare_cached(
                    "SELECT bucket, queue, completed, failed FROM __alkstore_queue_throughput \
                 WHERE bucket > ?1 AND (?2 IS NULL OR queue = ?2) ORDER BY bucket, queue",
                )
                .and_then(|mut s| {
                    s.query_map(params![since, queue], |r| {
                        Ok(ThroughputBucket {
                            start: r.get(0)?,
                            queue: r.get(1)?,
                            completed: count(r.get(2)?),
                            failed: count(r.get(3)?),
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(db(op))?;
            let totals = conn
                .prepare_cached(
                    "SELECT queue, sum(completed), sum(failed) FROM __alkstore_queue_throughput \
                 WHERE ?1 IS NULL OR queue = ?1 GROUP BY queue ORDER BY queue",
                )
                .and_then(|mut s| {
                    s.query_map(params![queue], |r| {
                        Ok(QueueTotals {
                            queue: r.get(0)?,
                            completed: count(r.get(1)?),
                            failed: count(r.get(2)?),
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(db(op))?;
            Ok(QueueThroughput {
                now,
                buckets,
                totals,
            })
        })
        .await
}
