//! Claiming jobs, and what a worker does while it holds them: extend its
//! claim (heartbeat) and ask which of its jobs were asked to cancel. Also
//! the claim-size hints ([`ClaimSizes`]) that tell the writer how big a
//! claim will be.

use std::collections::HashMap;
use std::sync::Arc;

use alkstore_core::queue::{JobCancelRequestsParams, JobHeartbeatParams};
use alkstore_core::{Checked, Job, JobClaimParams, Result};
use rusqlite::{params, OptionalExtension};

use super::rescue;
use super::rows::ClaimedRows;
use super::settle::HELD;
use crate::{db, SqliteEngine};

/// How many jobs each queue's last claim found: what the next claim of the
/// queue tells the writer to expect (see `Writer::write_rows`). Only a
/// hint: wrong, it changes which thread runs the claim, never its result.
#[derive(Default)]
pub(crate) struct ClaimSizes(std::sync::Mutex<HashMap<String, usize>>);

impl ClaimSizes {
    /// Rows a claim of `queue` with `limit` should expect: the last claim's
    /// count, at most `limit` (a queue never claimed from: `limit`).
    pub(crate) fn expected(&self, queue: &str, limit: usize) -> usize {
        let sizes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        sizes.get(queue).map_or(limit, |&last| last.min(limit))
    }

    /// A claim of `queue` found `n` jobs.
    pub(crate) fn found(&self, queue: &str, n: usize) {
        let mut sizes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(last) = sizes.get_mut(queue) {
            *last = n;
            return;
        }
        // Bounded like the queues themselves: a store with more queues than
        // this forgets and starts over (hints only).
        if sizes.len() >= 4_096 {
            sizes.clear();
        }
        sizes.insert(queue.to_owned(), n);
    }
}

/// The driver's `job_claim`: rescue the queue's expired rows when due,
/// then claim up to the limit, in claim order.
pub(super) async fn job_claim(
    engine: &SqliteEngine,
    params: Checked<JobClaimParams>,
) -> Result<Vec<Job>> {
    let p = params.into_inner();
    // A claim writes as many rows as it finds, not its limit: expect as
    // many as this queue's last claim found, so that an idle worker's
    // claims (one job each, or none) stay short writes on the caller's
    // thread, and a busy one's go to the writer's own thread.
    let limit = usize::try_from(p.limit).unwrap_or(usize::MAX);
    let expected = engine.inner.claim_sizes.expected(&p.queue, limit);
    let inner = engine.inner.clone();
    engine
        .inner
        .writer
        .write_rows("job_claim", expected, move |st| {
            let now = st.clock.now();
            rescue::rescue_if_due(st, &p.queue, now)?;
            // `LIMIT (SELECT ?4)`, not `LIMIT ?4`: SQLite re-prepares a
            // statement on every call when a bound LIMIT feeds its planner.
            let mut stmt = st
                .conn
                .prepare_cached(
                    "UPDATE __alkstore_job SET state = 'processing', attempts = attempts + 1, \
                       claim_count = claim_count + 1, worker_id = ?1, claimed_at = ?2, \
                       claim_expires_at = ?2 + visibility_timeout_s \
                     WHERE id IN (SELECT id FROM __alkstore_job \
                       WHERE queue = ?3 AND state = 'pending' AND run_at <= ?2 \
                         AND NOT EXISTS (SELECT 1 FROM __alkstore_queue_pause WHERE queue = ?3) \
                       ORDER BY priority DESC, run_at, id LIMIT (SELECT ?4)) \
                     RETURNING id, payload, priority, attempts, max_attempts, claim_expires_at, \
                       run_at, created_at, unique_key, claimed_at, claim_count, tags, meta",
                )
                .map_err(db("job_claim"))?;
            let rows = stmt
                .query(params![p.worker, now, p.queue, p.limit])
                .and_then(ClaimedRows::read);
            let rows = match rows {
                Ok(rows) => rows,
                Err(e) => {
                    st.rescues.forget(&p.queue);
                    return Err(db("job_claim")(e));
                }
            };
            if rows.len() > 0 {
                st.queue_of
                    .claimed(&Arc::from(p.queue.as_str()), rows.ids());
            }
            inner.claim_sizes.found(&p.queue, rows.len());
            Ok((rows, p))
        })
        .await
        .map(|(rows, p)| rows.into_jobs(&p.queue, &p.worker))
}

/// The driver's `job_heartbeat`: extend a held claim; its new expiry, or
/// `None` when the claim is not held.
pub(super) async fn job_heartbeat(
    engine: &SqliteEngine,
    params: Checked<JobHeartbeatParams>,
) -> Result<Option<i64>> {
    let JobHeartbeatParams { claim, .. } = params.into_inner();
    engine
        .inner
        .writer
        .write("job_heartbeat", move |st| {
            let now = st.clock.now();
            st.conn
                .prepare_cached(&format!(
                    "UPDATE __alkstore_job SET claim_expires_at = ?4 + visibility_timeout_s \
                     WHERE {HELD} RETURNING claim_expires_at"
                ))
                .and_then(|mut s| {
                    s.query_row(params![claim.id, claim.worker, claim.token, now], |r| {
                        r.get(0)
                    })
                    .optional()
                })
                .map_err(db("job_heartbeat"))
        })
        .await
}

/// The driver's `job_cancel_requests`: which of `ids` were asked to cancel.
pub(super) async fn job_cancel_requests(
    engine: &SqliteEngine,
    params: Checked<JobCancelRequestsParams>,
) -> Result<Vec<i64>> {
    let JobCancelRequestsParams { ids, .. } = params.into_inner();
    let list = format!(
        "[{}]",
        ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
    );
    engine
        .read("job_cancel_requests", move |conn| {
            conn.prepare_cached(
                "SELECT id FROM __alkstore_job WHERE id IN (SELECT value FROM json_each(?1)) \
             AND state = 'processing' AND cancel_requested",
            )
            .and_then(|mut s| s.query_map([&list], |r| r.get(0))?.collect())
            .map_err(db("job_cancel_requests"))
        })
        .await
}

#[cfg(test)]
mod tests;
