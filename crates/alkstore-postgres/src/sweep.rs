//! Store-wide upkeep on PostgreSQL: the sweep over every queue (expiry,
//! rescue, pruning, the throughput fold, stream trimming) and the vacuum
//! of a bloated job table. Apart from the queue calls because it spans
//! every area and runs from the maintenance-lock holder, not a worker's
//! claim.

use alkstore_core::queue::{secs, THROUGHPUT_HISTORY, THROUGHPUT_RETENTION};
use alkstore_core::validate::count;
use alkstore_core::{Engine, Error, Result, SweepReport};

use crate::{db, PgEngine};

impl PgEngine {
    /// Sweep every queue; with `every_s`, only when nobody swept in the last
    /// `every_s` seconds of the database's clock (the mark row is locked and
    /// re-checked by a concurrent sweeper, so one sweeps per interval).
    pub(crate) async fn sweep_if(&self, every_s: Option<i64>) -> Result<Option<SweepReport>> {
        let op = "queue_sweep";
        let sql = &self.inner.sql;
        let now = self.now_override();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db(op))?;
        let on = self.on_tx(&tx);
        if let Some(every_s) = every_s {
            if on.changed(op, &sql.sweep_mark, &[&now, &every_s]).await? == 0 {
                return Ok(None);
            }
        }
        let r = on.row(op, &sql.sweep, &[&now]).await?;
        let (expired, exhausted, rescued): (i64, i64, i64) = (r.get(0), r.get(1), r.get(2));
        let mut pruned = [0u64; 2];
        for (i, text) in [&sql.sweep_prune_dead, &sql.sweep_prune_done]
            .into_iter()
            .enumerate()
        {
            pruned[i] = on.changed(op, text, &[&now]).await?;
        }
        let (retention, history) = (secs(THROUGHPUT_RETENTION), secs(THROUGHPUT_HISTORY));
        on.changed(
            op,
            &sql.sweep_fold_throughput,
            &[&now, &retention, &history],
        )
        .await?;
        on.changed(op, &sql.sweep_sample_depth, &[&now, &history])
            .await?;
        let trim = &self.inner.stream_sql.sweep_trim;
        let events_trimmed: i64 = on.row(op, trim, &[&now]).await?.get(0);
        tx.commit().await.map_err(db(op))?;
        Ok(Some(SweepReport {
            events_trimmed: count(events_trimmed),
            expired: count(expired),
            rescued: count(rescued),
            exhausted: count(exhausted),
            dead_pruned: pruned[0],
            completed_pruned: pruned[1],
        }))
    }

    /// Vacuum the job table when its dead tuples outnumber 50,000 and
    /// twice its live ones (see [`Engine::reclaim`]): 1 when it did, else 0.
    pub(crate) async fn vacuum_job_table_if_bloated(&self) -> Result<u64> {
        let op = "reclaim";
        if self.is_closed() {
            return Err(Error::Closed);
        }
        let client = self.client().await?;
        // The statistics collector's counts (flushed by backends about once
        // a second): cheap, and close enough to decide.
        let sql = &self.inner.sql;
        let row = self
            .on(&client)
            .row(op, &sql.job_tuples, &[&sql.job_table])
            .await?;
        let (live, dead): (i64, i64) = (row.get(0), row.get(1));
        if dead < 50_000 || dead < 2 * live {
            return Ok(0);
        }
        // SKIP_LOCKED: when autovacuum (or another worker) is already at it,
        // leave it be. VACUUM cannot run inside a transaction: one statement.
        client
            .batch_execute(&self.inner.sql.vacuum_job)
            .await
            .map_err(db(op))?;
        tracing::debug!(live, dead, "vacuumed the job table");
        Ok(1)
    }
}
