//! The limits on what one call may ask: how long a claim or read may
//! wait, and how many items one batch or page may carry. Every area's
//! routes check their batches and pages against these.

use crate::error::{ApiError, ApiResult};

/// The longest a claim may wait for a job.
pub const MAX_WAIT_MS: u64 = 30_000;
/// The most jobs one claim or one batch enqueue may carry.
pub const MAX_BATCH: usize = 1_000;

/// `limit`, or `default` when absent, checked to be 1 to [`MAX_BATCH`].
pub(crate) fn batch_limit(limit: Option<u32>, default: u32) -> ApiResult<u32> {
    let limit = limit.unwrap_or(default);
    if limit == 0 || limit as usize > MAX_BATCH {
        return Err(ApiError::invalid("limit", "must be 1 to 1000"));
    }
    Ok(limit)
}

/// A batch of `n` items named `field` (`jobs`, `events`, `claims`): 1 to
/// [`MAX_BATCH`].
pub(crate) fn check_batch(field: &str, n: usize) -> ApiResult<()> {
    if n == 0 || n > MAX_BATCH {
        return Err(ApiError::invalid(
            field,
            format!("must hold 1 to 1000 {field}"),
        ));
    }
    Ok(())
}

/// A listing's `tag` filter, checked as a tag is (non-empty, at most 200
/// bytes, no NUL), the error naming the query's `tag`.
pub(crate) fn check_tag(tag: Option<&str>) -> ApiResult<()> {
    match tag {
        Some(t) => alkstore::queue::validate_text("tag", t)
            .map_err(|e| ApiError::from(e).with_field("tag")),
        None => Ok(()),
    }
}
