//! The parameters of process calls, each validating itself.

use std::time::Duration;

use crate::validate::{validate_text, validate_ttl};
use crate::{Error, Limits, Result, Validate};

/// The longest a beat may keep a process alive: a process that died is
/// shown as alive this long at most.
pub const MAX_PROCESS_TTL: Duration = Duration::from_secs(3_600);

/// The most roles one process may list.
pub const MAX_PROCESS_ROLES: usize = 100;

/// Reject an empty, oversized or NUL-containing process id.
pub fn validate_process_id(id: &str) -> Result<()> {
    validate_text("process id", id)
}

/// Parameters of `process_beat`: register a process, or refresh its row.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessBeatParams {
    /// Its id: unique per process run (a restarted process is a new one).
    pub id: String,
    /// What it is (`worker`, `subscriber`, `group`, `scheduler`, …).
    pub kind: String,
    /// Its host.
    pub host: String,
    /// Its process id on the host.
    pub pid: u32,
    /// The version it runs.
    pub version: String,
    /// What it works (see [`ProcessInfo::roles`](super::ProcessInfo)); at
    /// most [`MAX_PROCESS_ROLES`].
    pub roles: Vec<String>,
    /// How many things it may run at once.
    pub concurrency: u32,
    /// How many it runs now.
    pub running: u32,
    /// When it started (unix ms).
    pub started_at_ms: i64,
    /// How long it counts as alive from this beat (1 ms..=1 h): a few
    /// heartbeat intervals.
    pub ttl: Duration,
}

impl ProcessBeatParams {
    /// Process `id`, a `kind`, alive for `ttl` from now; this host, this
    /// process id, this crate's version, started now, nothing running.
    pub fn new(id: impl Into<String>, kind: impl Into<String>, ttl: Duration) -> Self {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        ProcessBeatParams {
            id: id.into(),
            kind: kind.into(),
            host: host_name(),
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            roles: Vec::new(),
            concurrency: 0,
            running: 0,
            started_at_ms: now_ms,
            ttl,
        }
    }
}

/// This machine's host name: the kernel's (or `/etc/hostname`), else
/// `$HOSTNAME`, else `host`.
pub fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "host".into())
}

/// A new worker id, `host-pid-nanos-n`: the host name, the process id,
/// the wall clock's nanoseconds since the epoch (in hex), and a count of
/// ids this process made; unique per process run, so a restarted process
/// never inherits a dead one's claims or leases. The one format every
/// runtime (workers, subscribers, group members, schedulers, lock
/// holders, HTTP group members) uses when none is given.
///
/// ```
/// let (a, b) = (alkstore_core::process::new_worker_id(), alkstore_core::process::new_worker_id());
/// assert_ne!(a, b);
/// assert!(a.contains(&format!("-{}-", std::process::id())));
/// ```
pub fn new_worker_id() -> String {
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{}-{nanos:x}-{n}", host_name(), std::process::id())
}

impl Validate for ProcessBeatParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_process_id(&self.id)?;
        validate_text("process kind", &self.kind)?;
        validate_text("process host", &self.host)?;
        validate_text("process version", &self.version)?;
        if self.roles.len() > MAX_PROCESS_ROLES {
            return Err(Error::invalid(
                "process roles",
                format!("{} roles, more than {MAX_PROCESS_ROLES}", self.roles.len()),
            ));
        }
        self.roles
            .iter()
            .try_for_each(|r| validate_text("process role", r))?;
        validate_ttl("process ttl", self.ttl, MAX_PROCESS_TTL)
    }
}

/// Parameters of `process_order`: ask a process to go quiet, stop, or run
/// as usual again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessOrderParams {
    /// The process.
    pub id: String,
    /// What it should do.
    pub order: super::ProcessOrder,
}

impl ProcessOrderParams {
    /// Ask process `id` to follow `order`.
    pub fn new(id: impl Into<String>, order: super::ProcessOrder) -> Self {
        ProcessOrderParams {
            id: id.into(),
            order,
        }
    }
}

impl Validate for ProcessOrderParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_process_id(&self.id)
    }
}

/// Parameters of `process_remove`: a process's clean exit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessRemoveParams {
    /// The process.
    pub id: String,
}

impl ProcessRemoveParams {
    /// Remove process `id`'s row.
    pub fn new(id: impl Into<String>) -> Self {
        ProcessRemoveParams { id: id.into() }
    }
}

impl Validate for ProcessRemoveParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_process_id(&self.id)
    }
}
