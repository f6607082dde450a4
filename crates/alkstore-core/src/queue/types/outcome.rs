//! What a settle, a cancel and a failed attempt report.

/// What a retry did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOutcome {
    /// Rescheduled to run at this unix time.
    Scheduled(i64),
    /// Out of attempts: moved to dead.
    Dead,
    /// The job's cancellation was requested while it ran: moved to dead as
    /// `cancelled` instead of being retried.
    Cancelled,
    /// The caller's claim is no longer valid; nothing changed.
    NotHeld,
}

/// What one [`Settle`](crate::queue::Settle) did, in the order given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// What the retry did.
    Retried(RetryOutcome),
    /// Whether the job moved to dead (false: the claim was not held).
    Failed(bool),
    /// The snoozed job's new due time (`None`: not held, or cancelled).
    Snoozed(Option<i64>),
}

/// What an engine's [`Writes::job_settle`](crate::Writes::job_settle)
/// reports: the outcomes, and whether any left its job claimable at once
/// (a retry or snooze due now by the engine's clock), so the wrapper wakes
/// this process's workers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settlement {
    /// One outcome per [`Settle`](crate::queue::Settle), in the order given.
    pub outcomes: Vec<Settled>,
    /// Whether a job is claimable now because of this batch.
    pub claimable_now: bool,
}

/// What a cancel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was pending: it moved to dead as `cancelled`.
    Cancelled,
    /// The job is running: its cancellation is requested. The worker tells
    /// the handler (cooperative cancel); the job then ends in dead as
    /// `cancelled`, or is acked if the handler finished anyway.
    Requested,
    /// No live job has this id.
    NotFound,
}

/// One failed attempt, as kept on the job.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AttemptError {
    /// The attempt's number.
    pub attempt: u32,
    /// When it failed (unix seconds, the engine's clock).
    pub at: i64,
    /// What the handler reported.
    pub error: String,
}

/// Parse the stored JSON list of attempt errors (empty when absent or bad).
pub fn parse_attempt_errors(json: Option<&str>) -> Vec<AttemptError> {
    json.and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default()
}
