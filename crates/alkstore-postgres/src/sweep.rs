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
    ///
    /// A vacuum cannot remove a row some open transaction may still see:
    /// while one holds the xmin horizon (a long transaction, an idle one,
    /// a forgotten prepared transaction, a stale replication slot), every
    /// vacuum would scan the whole table and remove nothing. So when one
    /// leaves more than half of what it found, the next waits until the
    /// horizon moves (or, when this role cannot see it, for a time that
    /// doubles from 30 s to 10 min).
    pub(crate) async fn vacuum_job_table_if_bloated(&self) -> Result<u64> {
        let op = "reclaim";
        if self.is_closed() {
            return Err(Error::Closed);
        }
        let client = self.client().await?;
        let on = self.on(&client);
        let sql = &self.inner.sql;
        let stuck = self.vacuum_stuck().clone();
        if let Some(stuck) = &stuck {
            let horizon = self.xmin_horizon(&on).await?;
            if !stuck.may_retry(horizon.as_deref(), std::time::Instant::now()) {
                return Ok(0);
            }
        }
        // The statistics collector's counts (flushed by backends about once
        // a second): cheap, and close enough to decide.
        let dead_tuples = || async {
            let row = on.row(op, &sql.job_tuples, &[&sql.job_table]).await?;
            Ok::<_, Error>((row.get::<_, i64>(0), row.get::<_, i64>(1)))
        };
        let (live, dead) = dead_tuples().await?;
        if dead < 50_000 || dead < 2 * live {
            *self.vacuum_stuck() = None;
            return Ok(0);
        }
        // SKIP_LOCKED: when autovacuum (or another worker) is already at it,
        // leave it be. VACUUM cannot run inside a transaction: one statement.
        client
            .batch_execute(&self.inner.sql.vacuum_job)
            .await
            .map_err(db(op))?;
        // The vacuum reports what it left at once.
        let (_, left) = dead_tuples().await?;
        if left * 2 > dead {
            let horizon = self.xmin_horizon(&on).await?;
            tracing::warn!(
                dead,
                left,
                held_by = horizon.as_deref().unwrap_or("unknown"),
                "vacuuming the job table removed little: an old transaction holds the \
                 xmin horizon; waiting until it moves"
            );
            *self.vacuum_stuck() = Some(VacuumStuck::after(stuck, horizon));
        } else {
            tracing::debug!(live, dead, left, "vacuumed the job table");
            *self.vacuum_stuck() = None;
        }
        Ok(1)
    }

    /// The oldest transaction id or snapshot a vacuum here cannot pass.
    async fn xmin_horizon(&self, on: &crate::conn::On<'_>) -> Result<Option<String>> {
        let rows = on
            .rows("reclaim", &self.inner.sql.xmin_horizon, &[])
            .await?;
        Ok(rows.first().and_then(|r| r.get(0)))
    }

    fn vacuum_stuck(&self) -> std::sync::MutexGuard<'_, Option<VacuumStuck>> {
        self.inner
            .vacuum_stuck
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A vacuum of the job table that removed little, and when to try again.
#[derive(Debug, Clone)]
pub(crate) struct VacuumStuck {
    /// The oldest transaction id or snapshot it could not pass (`None`:
    /// not visible to this role).
    horizon: Option<String>,
    /// Try again from then whatever the horizon says.
    retry_at: std::time::Instant,
    /// The wait that led to `retry_at`, doubled the next time.
    wait: std::time::Duration,
}

impl VacuumStuck {
    const FIRST_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
    const LONGEST_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

    /// After a vacuum that removed little, following `before` (if any).
    fn after(before: Option<VacuumStuck>, horizon: Option<String>) -> Self {
        let wait = before.map_or(Self::FIRST_WAIT, |b| (b.wait * 2).min(Self::LONGEST_WAIT));
        VacuumStuck {
            horizon,
            retry_at: std::time::Instant::now() + wait,
            wait,
        }
    }

    /// Whether a vacuum may run now, the horizon reading `horizon`: once
    /// it has moved, or the wait is over.
    fn may_retry(&self, horizon: Option<&str>, now: std::time::Instant) -> bool {
        let moved = matches!((&self.horizon, horizon), (Some(then), Some(now)) if then != now)
            || (self.horizon.is_some() && horizon.is_none());
        moved || now >= self.retry_at
    }
}

#[cfg(test)]
mod tests {
    use super::VacuumStuck;
    use std::time::{Duration, Instant};

    #[test]
    fn a_stuck_vacuum_waits_for_the_horizon_or_a_doubling_time() {
        let stuck = VacuumStuck::after(None, Some("700".into()));
        let now = Instant::now();
        assert!(!stuck.may_retry(Some("700"), now), "same horizon: wait");
        assert!(stuck.may_retry(Some("900"), now), "it moved");
        assert!(stuck.may_retry(None, now), "nothing holds one now");
        assert!(stuck.may_retry(Some("700"), now + Duration::from_secs(31)));
        let blind = VacuumStuck::after(None, None);
        assert!(!blind.may_retry(None, now), "unseen horizon: wait on time");
        let again = VacuumStuck::after(Some(blind), None);
        assert_eq!(again.wait, Duration::from_secs(60));
        let mut w = again;
        for _ in 0..10 {
            w = VacuumStuck::after(Some(w), None);
        }
        assert_eq!(w.wait, Duration::from_secs(600));
    }
}
