//! Store-wide upkeep on SQLite: the sweep over every queue (expiry,
//! rescue, pruning, the throughput fold, stream trimming), at most once
//! per interval across processes. Apart from the queue calls because it
//! spans every area and runs from the maintenance-lock holder, not a
//! worker's claim.

use alkstore_core::{Result, SweepReport};
use rusqlite::params;

use crate::queues::rescue::rescue_expired;
use crate::queues::throughput::{fold_throughput, sample_depth};
use crate::{db, SqliteEngine};

impl SqliteEngine {
    /// Sweep every queue; with `every_s`, only when no process swept in the
    /// last `every_s` seconds (the mark and the sweep commit together, and
    /// writers are serialized, so one process sweeps per interval).
    pub(crate) async fn sweep_if(&self, every_s: Option<i64>) -> Result<Option<SweepReport>> {
        self.inner
            .writer
            .write("queue_sweep", move |st| {
                let op = "queue_sweep";
                let now = st.clock.now();
                if let Some(every_s) = every_s {
                    let claimed = st
                        .conn
                        .prepare_cached(
                            "INSERT INTO __alkstore_meta (key, value) VALUES ('last_sweep_at', ?1) \
                             ON CONFLICT (key) DO UPDATE SET value = excluded.value \
                             WHERE __alkstore_meta.value <= ?1 - ?2",
                        )
                        .and_then(|mut s| s.execute(params![now, every_s]))
                        .map_err(db(op))?;
                    if claimed == 0 {
                        return Ok(None);
                    }
                }
                let r = rescue_expired(&st.conn, op, None, now)?;
                let prune = |sql: &str| -> Result<u64> {
                    st.conn
                        .prepare_cached(sql)
                        .and_then(|mut s| s.execute([now]))
                        .map(|n| n as u64)
                        .map_err(db(op))
                };
                let dead_pruned = prune(
                    "DELETE FROM __alkstore_dead WHERE dead_letter_retention_s IS NOT NULL \
                     AND died_at + dead_letter_retention_s <= ?1",
                )?;
                let completed_pruned = prune(
                    "DELETE FROM __alkstore_done WHERE completed_at + keep_completed_s <= ?1",
                )?;
                fold_throughput(&st.conn, op, now)?;
                sample_depth(&st.conn, op, now)?;
                let events_trimmed = crate::streams::trim_retained(&st.conn, op, now)?;
                Ok(Some(SweepReport {
                    expired: r.expired,
                    rescued: r.rescued,
                    exhausted: r.exhausted,
                    dead_pruned,
                    completed_pruned,
                    events_trimmed,
                }))
            })
            .await
    }
}
