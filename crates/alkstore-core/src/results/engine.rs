//! [`ResultEngine`]: the job-result calls, implemented once for every
//! [`ResultDriver`] through the one wrapper ([`crate::call`]).

use std::future::Future;

use crate::call::engine_call;
use crate::{Engine, Result};

use super::driver::ResultDriver;
use super::{JobOutput, ResultGetParams, ResultSaveParams, RESULTS_CHANNEL};

/// Save and read job results (see the [module](super) docs).
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait ResultEngine: Engine {
    /// Save (or replace) a job's result, kept for its TTL, and announce it
    /// on [`RESULTS_CHANNEL`] in the same transaction. Expired results of
    /// any job are dropped on the way.
    fn result_save(
        &self,
        params: ResultSaveParams,
    ) -> impl Future<Output = Result<JobOutput>> + Send;

    /// A job's result; `None` when none was saved or it expired.
    fn result_get(
        &self,
        params: impl Into<ResultGetParams> + Send,
    ) -> impl Future<Output = Result<Option<JobOutput>>> + Send;
}

impl<D: ResultDriver> ResultEngine for D {
    async fn result_save(&self, params: ResultSaveParams) -> Result<JobOutput> {
        engine_call!(self, result_save, params => ResultSaveParams, |p| async move {
            let saved = ResultDriver::result_save(self, p).await?;
            self.wake_hub().channel(RESULTS_CHANNEL);
            Ok(saved)
        })
    }

    async fn result_get(
        &self,
        params: impl Into<ResultGetParams> + Send,
    ) -> Result<Option<JobOutput>> {
        engine_call!(self, result_get, params => ResultGetParams, |p| {
            ResultDriver::result_get(self, p)
        })
    }
}
