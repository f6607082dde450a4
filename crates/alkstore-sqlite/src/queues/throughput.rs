//! The throughput table: counting finished jobs by queue within a write
//! ([`Finished`]), folding old buckets into totals (for the sweep), and
//! the `queue_throughput` read.

use std::sync::Arc;

use alkstore_core::queue::{
    secs, QueueDepthParams, QueueDepthSample, QueueThroughput, QueueThroughputParams, QueueTotals,
    ThroughputBucket, THROUGHPUT_BUCKET_S, THROUGHPUT_COARSE_S, THROUGHPUT_HISTORY,
    THROUGHPUT_RETENTION,
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

/// Fold throughput buckets past the retention into coarse buckets of
/// [`THROUGHPUT_COARSE_S`] (shard -1), and coarse ones past the history
/// into bucket 0, one row per queue: the totals stay whole, the table
/// stays small.
pub(crate) fn fold_throughput(conn: &Connection, op: &'static str, now: i64) -> Result<()> {
    let cutoff = now - secs(THROUGHPUT_RETENTION);
    let history = now - secs(THROUGHPUT_HISTORY);
    let run = |sql: &str, p: &[&dyn rusqlite::ToSql]| {
        conn.prepare_cached(sql)
            .and_then(|mut s| s.execute(p))
            .map_err(db(op))
    };
    // Each upsert's SELECT has a WHERE: SQLite's rule for an upsert whose
    // source is a SELECT.
    run(
        "INSERT INTO __alkstore_queue_throughput (bucket, queue, shard, completed, failed) \
         SELECT bucket / ?2 * ?2, queue, -1, sum(completed), sum(failed) \
         FROM __alkstore_queue_throughput \
         WHERE bucket > 0 AND shard >= 0 AND bucket <= ?1 GROUP BY bucket / ?2, queue \
         ON CONFLICT (bucket, queue, shard) DO UPDATE \
         SET completed = completed + excluded.completed, failed = failed + excluded.failed",
        &[&cutoff, &THROUGHPUT_COARSE_S],
    )?;
    run(
        "DELETE FROM __alkstore_queue_throughput WHERE bucket > 0 AND shard >= 0 AND bucket <= ?1",
        &[&cutoff],
    )?;
    run(
        "INSERT INTO __alkstore_queue_throughput (bucket, queue, shard, completed, failed) \
         SELECT 0, queue, 0, sum(completed), sum(failed) FROM __alkstore_queue_throughput \
         WHERE bucket > 0 AND shard < 0 AND bucket <= ?1 GROUP BY queue \
         ON CONFLICT (bucket, queue, shard) DO UPDATE \
         SET completed = completed + excluded.completed, failed = failed + excluded.failed",
        &[&history],
    )?;
    run(
        "DELETE FROM __alkstore_queue_throughput WHERE bucket > 0 AND shard < 0 AND bucket <= ?1",
        &[&history],
    )?;
    Ok(())
}

/// Take one depth sample of every queue at `now` (unix seconds), and drop
/// samples past the history.
pub(crate) fn sample_depth(conn: &Connection, op: &'static str, now: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO __alkstore_queue_depth \
           (queue, at, ready, scheduled, processing, dead) \
         SELECT queue, ?1, sum(ready), sum(scheduled), sum(processing), sum(dead) FROM ( \
           SELECT queue, \
             COALESCE(SUM(state = 'pending' AND run_at <= ?1), 0) AS ready, \
             COALESCE(SUM(state = 'pending' AND run_at > ?1), 0) AS scheduled, \
             COALESCE(SUM(state = 'processing'), 0) AS processing, 0 AS dead \
           FROM __alkstore_job GROUP BY queue \
           UNION ALL \
           SELECT queue, 0, 0, 0, COUNT(*) FROM __alkstore_dead GROUP BY queue \
         ) GROUP BY queue",
    )
    .and_then(|mut s| s.execute([now]))
    .map_err(db(op))?;
    conn.prepare_cached("DELETE FROM __alkstore_queue_depth WHERE at <= ?1")
        .and_then(|mut s| s.execute([now - secs(THROUGHPUT_HISTORY)]))
        .map_err(db(op))?;
    Ok(())
}

/// The driver's `queue_depth_history`: the samples in the window, oldest
/// first.
pub(super) async fn queue_depth_history(
    engine: &SqliteEngine,
    params: Checked<QueueDepthParams>,
) -> Result<Vec<QueueDepthSample>> {
    let since = engine.now() - params.window_s();
    let QueueDepthParams { queue, .. } = params.into_inner();
    engine
        .read("queue_depth_history", move |conn| {
            conn.prepare_cached(
                "SELECT queue, at, ready, scheduled, processing, dead FROM __alkstore_queue_depth \
                 WHERE at > ?1 AND (?2 IS NULL OR queue = ?2) ORDER BY at, queue",
            )
            .and_then(|mut s| {
                s.query_map(params![since, queue], |r| {
                    Ok(QueueDepthSample {
                        queue: r.get(0)?,
                        at: r.get(1)?,
                        ready: count(r.get(2)?),
                        scheduled: count(r.get(3)?),
                        processing: count(r.get(4)?),
                        dead: count(r.get(5)?),
                    })
                })?
                .collect()
            })
            .map_err(db("queue_depth_history"))
        })
        .await
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
                    "SELECT bucket, queue, completed, failed, shard FROM __alkstore_queue_throughput \
                 WHERE bucket > ?1 AND (?2 IS NULL OR queue = ?2) ORDER BY bucket, queue, shard",
                )
                .and_then(|mut s| {
                    s.query_map(params![since, queue], |r| {
                        let shard: i64 = r.get(4)?;
                        Ok(ThroughputBucket {
                            start: r.get(0)?,
                            span_s: if shard < 0 {
                                THROUGHPUT_COARSE_S
                            } else {
                                THROUGHPUT_BUCKET_S
                            },
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
