//! The dead-letter calls: list dead jobs, requeue, purge and count them.

use alkstore_core::queue::{DeadCountParams, DeadPurgeParams, DeadRequeueParams};
use alkstore_core::validate::count;
use alkstore_core::{Checked, DeadListParams, JobInfo, Result};

use super::rows::{job_info, Source};
use crate::PgEngine;

/// The driver's `dead_list`: dead jobs, by id.
pub(super) async fn dead_list(
    engine: &PgEngine,
    params: Checked<DeadListParams>,
) -> Result<Vec<JobInfo>> {
    let p = params.into_inner();
    let after = p.after_id.unwrap_or(i64::MIN);
    let limit = i64::from(p.limit);
    let rows = engine
        .query(
            "dead_list",
            &engine.inner.sql.dead_list,
            &[&p.queue, &after, &limit, &p.tag],
        )
        .await?;
    Ok(rows.iter().map(|r| job_info(r, Source::Dead)).collect())
}

/// The driver's `dead_requeue`: move the selected dead jobs back to
/// pending; how many moved.
pub(super) async fn dead_requeue(
    engine: &PgEngine,
    params: Checked<DeadRequeueParams>,
) -> Result<u64> {
    let sel = params.into_inner();
    let now = engine.now_override();
    let limit = sel.limit.map(i64::from);
    engine
        .execute(
            "dead_requeue",
            &engine.inner.sql.dead_requeue,
            &[
                &now,
                &sel.queue,
                &sel.ids,
                &limit,
                &engine.inner.sql.channel,
            ],
        )
        .await
}

/// The driver's `dead_purge`: delete the selected dead jobs.
pub(super) async fn dead_purge(engine: &PgEngine, params: Checked<DeadPurgeParams>) -> Result<u64> {
    let sel = params.into_inner();
    let limit = sel.limit.map(i64::from);
    engine
        .execute(
            "dead_purge",
            &engine.inner.sql.dead_purge,
            &[&sel.queue, &sel.ids, &limit],
        )
        .await
}

/// The driver's `dead_count`: how many dead jobs the selection names.
pub(super) async fn dead_count(engine: &PgEngine, params: Checked<DeadCountParams>) -> Result<u64> {
    let sel = params.into_inner();
    let rows = engine
        .query(
            "dead_count",
            &engine.inner.sql.dead_count,
            &[&sel.queue, &sel.ids],
        )
        .await?;
    Ok(rows.first().map(|r| count(r.get(0))).unwrap_or(0))
}
