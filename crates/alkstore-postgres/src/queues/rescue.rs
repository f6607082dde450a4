//! The rescue of a queue's expired rows before a claim: pending jobs
//! past their expiry go to dead, expired claims are handed back (or go to
//! dead on their last attempt), at most once per second per queue (see
//! `RescueSchedule`). The pass over every queue at once is the sweep
//! (`crate::sweep`).

use alkstore_core::Result;

use crate::PgEngine;

/// Hand `queue`'s expired rows back first when its rescue is due (see
/// [`PgEngine::rescue_due`]), logging the jobs it dead-lettered; a failed
/// rescue is due again at the next claim.
pub(super) async fn rescue_if_due(engine: &PgEngine, queue: &str, now: Option<i64>) -> Result<()> {
    if engine.rescue_due(queue) {
        match engine
            .query("job_claim", &engine.inner.sql.rescue, &[&now, &queue])
            .await
        {
            Ok(rows) => {
                if let Some(r) = rows.first() {
                    let (expired, exhausted): (i64, i64) = (r.get(0), r.get(1));
                    if expired + exhausted > 0 {
                        tracing::warn!(
                            queue = %queue,
                            expired,
                            exhausted_or_cancelled = exhausted,
                            "jobs dead-lettered: pending past their expiry, or claims expired on the last attempt"
                        );
                    }
                }
            }
            Err(e) => {
                engine.forget_rescue(queue);
                return Err(e);
            }
        }
    }
    Ok(())
}

impl PgEngine {
    /// Whether this claim should first hand expired rows back (see
    /// `RescueSchedule`): once per second of the injected clock, or of this
    /// host's monotonic clock when the database's clock decides.
    fn rescue_due(&self, queue: &str) -> bool {
        match self.inner.rescues.lock() {
            Ok(mut s) => s.due(queue, self.now_override()),
            Err(_) => true,
        }
    }

    fn forget_rescue(&self, queue: &str) {
        if let Ok(mut s) = self.inner.rescues.lock() {
            s.forget(queue);
        }
    }
}
