//! Counting finished jobs in the throughput table: the [`Tally`] an
//! engine transaction keeps until its commit, the choice between counting
//! settle statements and uncounted ones, and the `queue_throughput` read.
//! Apart from the settle path because both autocommit calls and
//! transactions (`tx.rs`) count through it.

use std::collections::BTreeMap;

use alkstore_core::queue::{QueueThroughput, QueueThroughputParams, QueueTotals, ThroughputBucket};
use alkstore_core::validate::count;
use alkstore_core::{Checked, Error, Result};

use super::sql::{SettleSql, Sql};
use crate::conn::Exec;
use crate::PgEngine;

/// Throughput counts the engine's own transaction owes the queues whose
/// jobs it finished, by queue: (completed, failed). Counted after its
/// commit ([`PgEngine::count_throughput`]) rather than in each settle
/// statement, whose counter row would otherwise stay locked until then:
/// other workers' acks on that row's shard would wait for the commit, and
/// two transactions settling jobs of two queues in opposite orders could
/// deadlock.
#[derive(Debug, Default)]
pub(crate) struct Tally(std::sync::Mutex<BTreeMap<String, (i64, i64)>>);

impl Tally {
    /// Count the finished jobs `rows` name (their queue in column `col`)
    /// as completed, or as failed.
    fn add(&self, rows: &[crate::conn::Row], col: usize, completed: bool) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for r in rows {
            let entry = counts.entry(r.get::<String>(col)?).or_default();
            if completed {
                entry.0 += 1;
            } else {
                entry.1 += 1;
            }
        }
        Ok(())
    }

    /// Everything counted so far, by queue; the tally is empty after.
    pub(crate) fn take(&self) -> BTreeMap<String, (i64, i64)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The settle statements to run: counting in the statement, or (with a
/// tally) leaving the count to the caller.
pub(super) fn settles<'s>(sql: &'s Sql, tally: Option<&Tally>) -> &'s SettleSql {
    match tally {
        Some(_) => &sql.uncounted,
        None => &sql.counted,
    }
}

/// Count `rows` in `tally`, if there is one (see [`Tally::add`]).
pub(super) fn tally_rows(
    tally: Option<&Tally>,
    rows: &[crate::conn::Row],
    col: usize,
    completed: bool,
) -> Result<()> {
    tally.map_or(Ok(()), |t| t.add(rows, col, completed))
}

impl PgEngine {
    /// Add what `tally` counted to the throughput table, on `client` (the
    /// connection of a transaction that just committed, in its shard):
    /// one statement, best effort. A failure is logged and the counts are
    /// lost; the jobs' outcomes are not.
    pub(crate) async fn count_throughput<E: Exec + ?Sized>(&self, client: &E, tally: &Tally) {
        let counts = tally.take();
        if counts.is_empty() {
            return;
        }
        let mut queues = Vec::with_capacity(counts.len());
        let (mut completed, mut failed) = (Vec::new(), Vec::new());
        for (queue, (c, f)) in counts {
            queues.push(queue);
            completed.push(c);
            failed.push(f);
        }
        let now = self.now_override();
        let counted = client
            .exec(
                "tx_commit",
                &self.inner.sql.throughput_add,
                &[&now, &queues, &completed, &failed],
            )
            .await;
        if let Err(e) = counted {
            tracing::warn!(
                error = %e,
                queues = ?queues,
                "counting a committed transaction's jobs in the throughput table failed"
            );
        }
    }
}

/// The driver's `queue_throughput`: the throughput table's buckets in the
/// window, and each queue's totals.
pub(super) async fn queue_throughput(
    engine: &PgEngine,
    params: Checked<QueueThroughputParams>,
) -> Result<QueueThroughput> {
    let op = "queue_throughput";
    let window_s = params.window_s();
    let QueueThroughputParams { queue, .. } = params.into_inner();
    let now = engine.now_override();
    let sql = &engine.inner.sql;
    let totals = engine
        .query(op, &sql.throughput_totals, &[&now, &queue])
        .await?;
    let buckets = engine
        .query(op, &sql.throughput_buckets, &[&now, &window_s, &queue])
        .await?;
    Ok(QueueThroughput {
        now: totals
            .first()
            .map(|r| r.get(0))
            .ok_or_else(|| Error::database(op, "no row"))?,
        buckets: buckets
            .iter()
            .map(|r| ThroughputBucket {
                start: r.get(0),
                span_s: r.get(4),
                queue: r.get(1),
                completed: count(r.get(2)),
                failed: count(r.get(3)),
            })
            .collect(),
        totals: totals
            .iter()
            .filter_map(|r| {
                Some(QueueTotals {
                    queue: r.get::<_, Option<String>>(1)?,
                    completed: count(r.get::<_, Option<i64>>(2)?),
                    failed: count(r.get::<_, Option<i64>>(3)?),
                })
            })
            .collect(),
    })
}

/// The driver's `queue_depth_history`: the samples in the window, oldest
/// first.
pub(super) async fn queue_depth_history(
    engine: &PgEngine,
    params: Checked<alkstore_core::queue::QueueDepthParams>,
) -> Result<Vec<alkstore_core::queue::QueueDepthSample>> {
    let window_s = params.window_s();
    let p = params.into_inner();
    let rows = engine
        .query(
            "queue_depth_history",
            &engine.inner.sql.depth_history,
            &[&engine.now_override(), &window_s, &p.queue],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| alkstore_core::queue::QueueDepthSample {
            queue: r.get(0),
            at: r.get(1),
            ready: count(r.get(2)),
            scheduled: count(r.get(3)),
            processing: count(r.get(4)),
            dead: count(r.get(5)),
        })
        .collect())
}
