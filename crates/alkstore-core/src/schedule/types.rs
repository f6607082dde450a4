//! The values schedule calls return.

/// One schedule as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleInfo {
    /// The schedule's name.
    pub name: String,
    /// Its spec (`@every 5m`, a cron pattern).
    pub spec: String,
    /// The IANA zone cron is evaluated in (`None`: UTC).
    pub tz: Option<String>,
    /// The queue its jobs go to.
    pub queue: String,
    /// Every job's payload.
    pub payload: Vec<u8>,
    /// Every job's priority.
    pub priority: i32,
    /// Most missed boundaries fired at once after an outage.
    pub max_catch_up: u32,
    /// Paused schedules fire nothing.
    pub paused: bool,
    /// The next boundary to fire (unix ms); `None` when the spec has none
    /// left.
    pub next_fire_at_ms: Option<i64>,
    /// The boundary fired last (unix ms).
    pub last_boundary_ms: Option<i64>,
    /// When it was registered or last changed (unix ms).
    pub updated_at_ms: i64,
}

/// One job a fire call enqueued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// The schedule.
    pub schedule: String,
    /// The boundary the job was fired for (unix ms).
    pub boundary_ms: i64,
    /// The queue.
    pub queue: String,
    /// The job's id.
    pub job_id: i64,
}

/// What one fire call did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FireReport {
    /// Jobs enqueued, one per fired boundary.
    pub fired: Vec<Fired>,
    /// Due boundaries skipped by the catch-up cap.
    pub skipped: u64,
    /// The earliest next boundary of any active schedule after the call
    /// (unix ms): when a scheduler should look again.
    pub next_due_ms: Option<i64>,
    /// The store's time at the end of the call (unix ms): a scheduler waits
    /// `next_due_ms - now_ms` by its own monotonic clock, whatever its
    /// host's wall clock says.
    pub now_ms: i64,
}

/// One job a schedule enqueued, as its history keeps it (the last
/// [`MAX_FIRES_KEPT`](super::MAX_FIRES_KEPT) per schedule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleFire {
    /// The schedule.
    pub schedule: String,
    /// The boundary fired (unix ms); for a manual run, the time it was
    /// asked for.
    pub boundary_ms: i64,
    /// The queue.
    pub queue: String,
    /// The job's id (it may since have finished and been deleted).
    pub job_id: i64,
    /// When it was enqueued (unix ms, the store's clock).
    pub fired_at_ms: i64,
    /// Asked for by an operator ([`run now`](super::ScheduleEngine::schedule_run_now)),
    /// not a boundary.
    pub manual: bool,
}
