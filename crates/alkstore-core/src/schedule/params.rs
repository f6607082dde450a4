//! The parameters of schedule calls, each validating itself.

use crate::validate::validate_queue_name;
use crate::{Error, Limits, Result, Validate};

use super::{validate_schedule_name, Spec};

/// The most missed boundaries one schedule fires at once.
pub const MAX_CATCH_UP: u32 = 1_000;

/// Parameters of `schedule_set`: register a schedule, or change one.
///
/// ```
/// use alkstore_core::schedule::ScheduleSetParams;
/// let nightly = ScheduleSetParams::new("nightly-report", "0 2 * * *", "reports")
///     .tz("Europe/Paris")
///     .payload(b"{}".to_vec());
/// # let _ = nightly;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleSetParams {
    /// The schedule's name.
    pub name: String,
    /// `@every <n><s|m|h|d>` or a 5/6-field cron pattern.
    pub spec: String,
    /// IANA zone for cron (default UTC).
    pub tz: Option<String>,
    /// The queue each boundary's job goes to.
    pub queue: String,
    /// Every job's payload (default empty).
    pub payload: Vec<u8>,
    /// Every job's priority (default 0).
    pub priority: i32,
    /// Most missed boundaries fired at once after an outage (1..=1000,
    /// default 1: fire once, skip the rest).
    pub max_catch_up: u32,
}

impl ScheduleSetParams {
    /// Schedule `name` enqueues onto `queue` at each boundary of `spec`.
    pub fn new(name: impl Into<String>, spec: impl Into<String>, queue: impl Into<String>) -> Self {
        ScheduleSetParams {
            name: name.into(),
            spec: spec.into(),
            tz: None,
            queue: queue.into(),
            payload: Vec::new(),
            priority: 0,
            max_catch_up: 1,
        }
    }

    /// Evaluate the cron pattern in this IANA zone.
    #[must_use]
    pub fn tz(mut self, tz: impl Into<String>) -> Self {
        self.tz = Some(tz.into());
        self
    }

    /// Every job's payload.
    #[must_use]
    pub fn payload(mut self, payload: impl Into<Vec<u8>>) -> Self {
        self.payload = payload.into();
        self
    }

    /// Every job's priority.
    #[must_use]
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Fire up to `n` missed boundaries after an outage.
    #[must_use]
    pub fn max_catch_up(mut self, n: u32) -> Self {
        self.max_catch_up = n;
        self
    }

    /// The parsed spec (validation has checked it parses).
    pub fn parsed(&self) -> Result<Spec> {
        Spec::parse(&self.spec, self.tz.as_deref())
    }
}

impl Validate for ScheduleSetParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        self.validate(limits)
    }
}

impl ScheduleSetParams {
    /// Validate against the contract (a caller can check before it opens
    /// a store, as `alk schedules add` does).
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        validate_schedule_name(&self.name)?;
        validate_queue_name(&self.queue)?;
        self.parsed()?;
        if !(1..=MAX_CATCH_UP).contains(&self.max_catch_up) {
            return Err(Error::invalid(
                "max_catch_up",
                format!("{} is outside 1..={MAX_CATCH_UP}", self.max_catch_up),
            ));
        }
        if self.payload.len() > limits.max_payload_bytes {
            return Err(Error::invalid(
                "payload",
                format!(
                    "{} bytes is over the store's limit of {}",
                    self.payload.len(),
                    limits.max_payload_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// A schedule named in a call (`schedule_remove`, `_pause`, `_resume`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleNameParams {
    /// The schedule's name.
    pub name: String,
}

impl<S: Into<String>> From<S> for ScheduleNameParams {
    fn from(name: S) -> Self {
        ScheduleNameParams { name: name.into() }
    }
}

impl Validate for ScheduleNameParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_schedule_name(&self.name)
    }
}

/// A schedule to pause or resume (`schedule_pause`, `schedule_resume`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchedulePauseParams {
    /// The schedule's name.
    pub name: String,
    /// What it becomes.
    pub to: crate::PauseState,
}

impl SchedulePauseParams {
    /// Pause (`PauseState::Paused`) or resume the schedule `name`.
    pub fn new(name: impl Into<String>, to: crate::PauseState) -> Self {
        SchedulePauseParams {
            name: name.into(),
            to,
        }
    }
}

impl Validate for SchedulePauseParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_schedule_name(&self.name)
    }
}

/// Parameters of `schedule_fire_due`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleFireParams {
    /// Most schedules fired by one call (1..=1000; default 100).
    pub limit: u32,
}

impl ScheduleFireParams {
    /// Fire at most `limit` due schedules.
    pub fn new(limit: u32) -> Self {
        ScheduleFireParams { limit }
    }
}

impl Default for ScheduleFireParams {
    fn default() -> Self {
        ScheduleFireParams { limit: 100 }
    }
}

impl Validate for ScheduleFireParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        if !(1..=1000).contains(&self.limit) {
            return Err(Error::invalid(
                "fire limit",
                format!("{} is outside 1..=1000", self.limit),
            ));
        }
        Ok(())
    }
}

/// Parameters of `schedule_fires`: a schedule's last fires.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleFiresParams {
    /// The schedule's name.
    pub name: String,
    /// Most fires to return, newest first (1..=[`MAX_FIRES_KEPT`](super::MAX_FIRES_KEPT)).
    pub limit: u32,
}

impl ScheduleFiresParams {
    /// Up to `limit` of schedule `name`'s last fires.
    pub fn new(name: impl Into<String>, limit: u32) -> Self {
        ScheduleFiresParams {
            name: name.into(),
            limit,
        }
    }
}

impl Validate for ScheduleFiresParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_schedule_name(&self.name)?;
        if !(1..=super::MAX_FIRES_KEPT).contains(&self.limit) {
            return Err(crate::Error::invalid(
                "fires limit",
                format!("{} is outside 1..={}", self.limit, super::MAX_FIRES_KEPT),
            ));
        }
        Ok(())
    }
}
