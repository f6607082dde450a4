//! Claiming jobs, and what a worker does while it holds them: extend its
//! claim (heartbeat) and ask which of its jobs were asked to cancel.

use alkstore_core::queue::{JobCancelRequestsParams, JobHeartbeatParams};
use alkstore_core::{Checked, Job, JobClaimParams, Result};

use super::rescue;
use super::rows::claimed;
use crate::PgEngine;

/// The driver's `job_claim`: rescue the queue's expired rows when due,
/// then claim up to the limit on a relaxed connection, in claim order.
pub(super) async fn job_claim(
    engine: &PgEngine,
    params: Checked<JobClaimParams>,
) -> Result<Vec<Job>> {
    let p = params.into_inner();
    let now = engine.now_override();
    let sql = &engine.inner.sql;
    rescue::rescue_if_due(engine, &p.queue, now).await?;
    let limit = i64::from(p.limit);
    let rows = engine
        .query_relaxed(
            "job_claim",
            &sql.claim,
            &[&now, &p.queue, &p.worker, &limit],
        )
        .await?;
    let mut jobs: Vec<Job> = rows
        .iter()
        .map(|r| claimed(r, &p.queue, &p.worker))
        .collect();
    jobs.sort_by(Job::claim_order);
    Ok(jobs)
}

/// The driver's `job_heartbeat`: extend a held claim; its new expiry, or
/// `None` when the claim is not held.
pub(super) async fn job_heartbeat(
    engine: &PgEngine,
    params: Checked<JobHeartbeatParams>,
) -> Result<Option<i64>> {
    let JobHeartbeatParams { claim, .. } = params.into_inner();
    let now = engine.now_override();
    let rows = engine
        .query_relaxed(
            "job_heartbeat",
            &engine.inner.sql.heartbeat,
            &[&now, &claim.id, &claim.worker, &claim.token],
        )
        .await?;
    Ok(rows.first().map(|r| r.get(0)))
}

/// The driver's `job_cancel_requests`: which of `ids` were asked to cancel.
pub(super) async fn job_cancel_requests(
    engine: &PgEngine,
    params: Checked<JobCancelRequestsParams>,
) -> Result<Vec<i64>> {
    let JobCancelRequestsParams { ids, .. } = params.into_inner();
    let rows = engine
        .query(
            "job_cancel_requests",
            &engine.inner.sql.cancel_requests,
            &[&ids],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}
