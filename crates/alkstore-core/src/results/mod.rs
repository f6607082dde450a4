//! Job results: a value a handler saves for its job, kept for a TTL, that
//! others read (`result_get`) or wait for (`store.results().wait` in the runtime,
//! woken by the saving commit).
//!
//! Saving a result also sends a notification on [`RESULTS_CHANNEL`] (payload:
//! the job id) in the same transaction, so waiters wake when — and only
//! when — the result is committed. A later save for the same job (a retried
//! attempt) replaces the value.

mod driver;
mod engine;

pub use driver::ResultDriver;
pub use engine::ResultEngine;

use std::time::Duration;

use crate::validate::validate_ttl;
use crate::{Error, Limits, Result, Validate};

/// The notification channel saved results are announced on.
pub const RESULTS_CHANNEL: &str = "alkstore.results";

/// How long a result is kept unless told otherwise: a day.
pub const DEFAULT_RESULT_TTL: Duration = Duration::from_secs(86_400);
/// The longest time a result is kept: 30 days.
pub const MAX_RESULT_TTL: Duration = Duration::from_secs(30 * 86_400);

/// A saved result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOutput {
    /// The job.
    pub job_id: i64,
    /// The value, as saved.
    pub value: Vec<u8>,
    /// When it was saved (unix ms, the store's clock).
    pub saved_at_ms: i64,
    /// When it is dropped (unix ms).
    pub expires_at_ms: i64,
}

/// Parameters of `result_save`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResultSaveParams {
    /// The job.
    pub job_id: i64,
    /// The value (at most the store's payload limit).
    pub value: Vec<u8>,
    /// How long it is kept (1 ms..=30 days; default a day).
    pub ttl: Duration,
}

impl ResultSaveParams {
    /// Save `value` as job `job_id`'s result for a day.
    pub fn new(job_id: i64, value: impl Into<Vec<u8>>) -> Self {
        ResultSaveParams {
            job_id,
            value: value.into(),
            ttl: DEFAULT_RESULT_TTL,
        }
    }

    /// Keep it this long instead.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The TTL in whole milliseconds (validated to fit).
    pub fn ttl_ms(&self) -> i64 {
        crate::validate::millis(self.ttl)
    }
}

impl Validate for ResultSaveParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        validate_job_id(self.job_id)?;
        validate_ttl("result ttl", self.ttl, MAX_RESULT_TTL)?;
        if self.value.len() > limits.max_payload_bytes {
            return Err(Error::invalid(
                "result",
                format!(
                    "{} bytes is over the store's limit of {}",
                    self.value.len(),
                    limits.max_payload_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// Parameters of `result_get`: the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResultGetParams {
    /// The job.
    pub job_id: i64,
}

impl From<i64> for ResultGetParams {
    fn from(job_id: i64) -> Self {
        ResultGetParams { job_id }
    }
}

impl Validate for ResultGetParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_job_id(self.job_id)
    }
}

fn validate_job_id(id: i64) -> Result<()> {
    if id < 1 {
        return Err(Error::invalid(
            "job id",
            format!("{id} is not a job id (ids start at 1)"),
        ));
    }
    Ok(())
}
