//! What the leader of a group owns while it holds the writer lock: the
//! write connection and what the writer keeps across groups
//! ([`WriterState`]), and why a group failed ([`GroupFailure`]).

use std::sync::Arc;

use alkstore_core::queue::RescueSchedule;
use alkstore_core::{Clock, Error, WakeHub};
use rusqlite::Connection;

use super::activity::GroupActivity;
use super::queue_state::{JobIds, QueueOfJob};

/// State owned by whoever holds the writer lock.
pub(crate) struct WriterState {
    pub conn: Connection,
    pub clock: Arc<dyn Clock>,
    /// When each queue's expired rows were last handed back (see
    /// `alkstore_core::queue::RescueSchedule`).
    pub rescues: RescueSchedule,
    /// How long `BEGIN IMMEDIATE` waits for another connection's lock.
    pub busy_timeout: std::time::Duration,
    /// The queue of each job this writer claimed and has not acked yet.
    pub queue_of: QueueOfJob,
    /// Ids this writer reserved for new jobs.
    pub job_ids: Option<JobIds>,
    /// Listeners to hint when a group finds that another connection has
    /// committed since the last group.
    pub(super) hub: Arc<WakeHub>,
    /// `PRAGMA data_version` on this connection at the last group's start
    /// (see [`WriterState::others_committed`]).
    pub(super) others_version: Option<i64>,
    /// Whether a group is running, for the commit watcher.
    pub(super) activity: Arc<GroupActivity>,
    /// Set while a group could not begin: its commands fail with this error
    /// instead of running.
    pub(super) begin_failure: Option<GroupFailure>,
    /// Set while a group of one command runs: it needs no savepoint of its
    /// own, because the group's transaction is rolled back if it fails.
    pub(super) sole_command: bool,
    /// Set when that sole command failed: roll back instead of committing.
    pub(super) sole_command_failed: bool,
}

impl WriterState {
    /// Whether another connection has committed since the last look (this
    /// connection's `PRAGMA data_version` moves only for those), or the
    /// version could not be read.
    pub(super) fn others_committed(&mut self) -> bool {
        let version = crate::connection::data_version(&self.conn);
        let moved = version.is_none() || version != self.others_version;
        self.others_version = version;
        moved
    }

    /// Forget what a rolled-back transaction may have written: rescue
    /// bookkeeping, and ids reserved for new jobs (another connection could
    /// reserve them again).
    pub(super) fn forget_rolled_back(&mut self) {
        self.rescues.clear();
        self.job_ids = None;
    }
}

/// Why a group transaction failed: could not begin, was aborted, or could
/// not commit.
#[derive(Clone)]
pub(super) enum GroupFailure {
    /// Another connection held the write lock for the whole busy timeout.
    Busy(std::time::Duration),
    /// The disk (or the size limit) is full.
    Full,
    /// Anything else SQLite reported.
    Other(String),
    /// An earlier command of the group failed the whole group (it panicked,
    /// or SQLite rolled the transaction back): later ones are refused.
    GroupAborted(String),
}

impl GroupFailure {
    pub(super) fn error(&self, op: &'static str) -> Error {
        match self {
            GroupFailure::Busy(waited) => Error::Busy {
                op,
                waited: *waited,
            },
            GroupFailure::Full => Error::StorageFull { op },
            GroupFailure::Other(msg) => Error::database(op, msg.clone()),
            GroupFailure::GroupAborted(reason) => Error::Conflict {
                op,
                reason: format!("not run, because {reason}"),
            },
        }
    }
}
