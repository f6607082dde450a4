//! The values process calls return.

/// What an operator asked a process to do, read by the process at each
/// heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProcessOrder {
    /// Work as usual.
    #[default]
    Run,
    /// Claim nothing new; finish what runs (a worker about to be stopped).
    Quiet,
    /// Shut down gracefully, as at SIGTERM.
    Stop,
}

impl ProcessOrder {
    /// `run`, `quiet` or `stop`: how the store keeps it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessOrder::Run => "run",
            ProcessOrder::Quiet => "quiet",
            ProcessOrder::Stop => "stop",
        }
    }

    /// The order a stored word names (`run` for anything else: an order
    /// written by a newer version is not acted on).
    pub fn parse(word: &str) -> ProcessOrder {
        match word {
            "quiet" => ProcessOrder::Quiet,
            "stop" => ProcessOrder::Stop,
            _ => ProcessOrder::Run,
        }
    }
}

/// A registered process, as the store last heard of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its id (unique per process run).
    pub id: String,
    /// What it is: `worker`, `subscriber`, `group`, `scheduler`, or
    /// another word a program chose.
    pub kind: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id on that host.
    pub pid: u32,
    /// The alkstore version (or the program's) it runs.
    pub version: String,
    /// What it works: queue names for a worker, `group/stream` for a group
    /// member, stream/consumer for a subscriber, schedules for a scheduler.
    pub roles: Vec<String>,
    /// How many things it may run at once (handler slots, buckets).
    pub concurrency: u32,
    /// How many it ran at its last heartbeat.
    pub running: u32,
    /// When it started (unix ms).
    pub started_at_ms: i64,
    /// Its last heartbeat (unix ms, the store's clock).
    pub heartbeat_at_ms: i64,
    /// When it is taken for dead unless it beats again (unix ms).
    pub expires_at_ms: i64,
    /// Beat within its expiry (by the store's clock at the listing).
    pub alive: bool,
    /// What an operator asked of it.
    pub order: ProcessOrder,
}
