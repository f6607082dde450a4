//! [`ResultDriver`]: what an engine implements for job results — SQL and
//! nothing else (see [`crate::call`]).

use std::future::Future;

use crate::{Checked, Engine, Result};

use super::{JobOutput, ResultGetParams, ResultSaveParams};

/// The job-result statements of one engine; callers use
/// [`ResultEngine`](super::ResultEngine).
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait ResultDriver: Engine {
    /// See [`ResultEngine::result_save`](super::ResultEngine::result_save).
    fn result_save(
        &self,
        params: Checked<ResultSaveParams>,
    ) -> impl Future<Output = Result<JobOutput>> + Send;

    /// See [`ResultEngine::result_get`](super::ResultEngine::result_get).
    fn result_get(
        &self,
        params: Checked<ResultGetParams>,
    ) -> impl Future<Output = Result<Option<JobOutput>>> + Send;
}
