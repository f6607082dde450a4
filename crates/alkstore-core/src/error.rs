use std::fmt;

/// A boxed error from a driver or the operating system, kept as a source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `Result` with alkstore's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure an alkstore engine or runtime reports.
///
/// Input errors ([`ErrorKind::InvalidInput`]) are raised before anything is
/// written. Match on [`Error::kind`] rather than on driver messages.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument was rejected before anything was written.
    #[error("invalid {what}: {reason}")]
    InvalidInput {
        /// Which argument (for example `queue name`).
        what: &'static str,
        /// Why it was rejected.
        reason: String,
    },
    /// A payload is larger than the store's configured limit.
    #[error("payload of {size} bytes exceeds the limit of {limit} bytes")]
    PayloadTooLarge {
        /// The payload's size in bytes.
        size: usize,
        /// The configured limit in bytes.
        limit: usize,
    },
    /// A store URL could not be understood.
    #[error("invalid store url {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given (passwords masked).
        url: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The database holds a schema written by a newer alkstore.
    #[error("the store's schema version {found} is newer than this alkstore supports ({supported}); upgrade alkstore")]
    SchemaTooNew {
        /// Version recorded in the database.
        found: i64,
        /// Newest version this build understands.
        supported: i64,
    },
    /// The database could not be reached or refused the login. One line:
    /// what was connected to (never a password) and why, the driver's
    /// chain of causes folded in once (build it with [`Error::connect`]).
    #[error("cannot connect to {target}: {cause}")]
    Connect {
        /// What was connected to: `PostgreSQL at host:port (database "d",
        /// user "u")`, `SQLite file path`, or `the database` when unknown.
        target: String,
        /// The driver's error and its causes, each once, joined by `: `.
        cause: String,
    },
    /// A statement failed inside the database.
    #[error("database error during {op}: {source}")]
    Database {
        /// The operation that failed (for example `job_claim`).
        op: &'static str,
        /// The driver's error.
        #[source]
        source: BoxError,
    },
    /// A payload could not be encoded or decoded.
    #[error("payload {direction} failed: {source}")]
    Payload {
        /// `encoding` or `decoding`.
        direction: &'static str,
        /// The serializer's error.
        #[source]
        source: BoxError,
    },
    /// The store was closed (its engine thread or pool is gone).
    #[error("the store is closed")]
    Closed,
    /// The database stayed locked by another connection or process for the
    /// whole busy timeout; nothing was written. Safe to retry.
    #[error("the database was locked by another connection for {waited:?} during {op}; nothing was written, retry later")]
    Busy {
        /// The operation that waited (for example `job_enqueue`).
        op: &'static str,
        /// How long it waited: the store's busy timeout.
        waited: std::time::Duration,
    },
    /// The database's disk (or its size limit) is full: nothing of the
    /// call was written. Work already committed is intact; the same call
    /// succeeds once space is freed.
    #[error(
        "the database's disk is full during {op}; nothing was written: free space, then retry"
    )]
    StorageFull {
        /// The operation (for example `job_enqueue`).
        op: &'static str,
    },
    /// A concurrent change got in the way; nothing was written, and the same
    /// call is expected to succeed when tried again.
    #[error("conflict during {op}: {reason}; nothing was written, retry")]
    Conflict {
        /// The operation (for example `job_enqueue`).
        op: &'static str,
        /// What got in the way.
        reason: String,
    },
    /// The caller no longer holds what it acted under: a claim, a lease or a
    /// lock that expired or was taken over (fenced by a newer holder).
    #[error("{what} is no longer held by the caller")]
    NotHeld {
        /// What was lost (for example `lease on bucket 3 of group g`).
        what: String,
    },
    /// A transaction was rolled back instead of committed: a call inside it
    /// failed (a claim, lease or lock no longer held, a database error),
    /// so nothing it wrote, the application's own SQL included, was kept.
    #[error("the transaction was rolled back at {op}: {reason}; nothing of it was written")]
    RolledBack {
        /// The call that found it could not go on (`commit`, `job_ack`, …).
        op: &'static str,
        /// The first failure inside the transaction.
        reason: String,
    },
    /// A consumer group exists with another bucket count or stream than the
    /// one asked for; nothing was written. Changing N is an explicit resize.
    #[error("group {group:?} has {existing_buckets} buckets on stream {existing_stream:?}; asked for {requested_buckets} on {requested_stream:?}; nothing was written")]
    GroupMismatch {
        /// The group.
        group: String,
        /// Its bucket count in the store.
        existing_buckets: u32,
        /// The bucket count asked for.
        requested_buckets: u32,
        /// Its stream in the store.
        existing_stream: String,
        /// The stream asked for.
        requested_stream: String,
    },
    /// The thing asked for does not exist (a job id, for example).
    #[error("{what} not found: {detail}")]
    NotFound {
        /// What was looked for (for example `job 7`).
        what: String,
        /// What that means (for example why it may be gone).
        detail: String,
    },
    /// There is no store at the URL (a read-only command does not create one).
    #[error("no alkstore store at {url}: {reason}")]
    NoStore {
        /// The URL (passwords masked).
        url: String,
        /// What is missing.
        reason: String,
    },
    /// A runtime's handler kept failing on one event until its error
    /// policy ran out, and the runtime stopped there (its saved position
    /// is just before that event).
    #[error("{what}: handler failed on offset {offset} after {attempts} run(s): {source}")]
    HandlerFailed {
        /// Where it ran (for example `stream "orders"`).
        what: String,
        /// The event the handler failed on.
        offset: i64,
        /// How many times it ran.
        attempts: u32,
        /// The handler's last error.
        source: BoxError,
    },
}

/// The category of an [`Error`], stable across engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// See [`Error::InvalidInput`].
    InvalidInput,
    /// See [`Error::PayloadTooLarge`].
    PayloadTooLarge,
    /// See [`Error::InvalidUrl`].
    InvalidUrl,
    /// See [`Error::SchemaTooNew`].
    SchemaTooNew,
    /// See [`Error::Connect`].
    Connect,
    /// See [`Error::Database`].
    Database,
    /// See [`Error::Payload`].
    Payload,
    /// See [`Error::Closed`].
    Closed,
    /// See [`Error::Busy`]: retryable.
    Busy,
    /// See [`Error::NoStore`].
    NoStore,
    /// See [`Error::NotFound`].
    NotFound,
    /// See [`Error::Conflict`]: retryable.
    Conflict,
    /// See [`Error::NotHeld`].
    NotHeld,
    /// See [`Error::GroupMismatch`].
    GroupMismatch,
    /// See [`Error::RolledBack`].
    RolledBack,
    /// See [`Error::StorageFull`]: retryable once space is freed.
    StorageFull,
    /// See [`Error::HandlerFailed`].
    HandlerFailed,
}

impl ErrorKind {
    /// A stable snake_case name (metric labels, logs).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::PayloadTooLarge => "payload_too_large",
            ErrorKind::InvalidUrl => "invalid_url",
            ErrorKind::SchemaTooNew => "schema_too_new",
            ErrorKind::Connect => "connect",
            ErrorKind::Database => "database",
            ErrorKind::Payload => "payload",
            ErrorKind::Closed => "closed",
            ErrorKind::Busy => "busy",
            ErrorKind::NoStore => "no_store",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::NotHeld => "not_held",
            ErrorKind::GroupMismatch => "group_mismatch",
            ErrorKind::RolledBack => "rolled_back",
            ErrorKind::StorageFull => "storage_full",
            ErrorKind::HandlerFailed => "handler_failed",
        }
    }
}

impl Error {
    /// The error's category.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidInput { .. } => ErrorKind::InvalidInput,
            Error::PayloadTooLarge { .. } => ErrorKind::PayloadTooLarge,
            Error::InvalidUrl { .. } => ErrorKind::InvalidUrl,
            Error::SchemaTooNew { .. } => ErrorKind::SchemaTooNew,
            Error::Connect { .. } => ErrorKind::Connect,
            Error::Database { .. } => ErrorKind::Database,
            Error::Payload { .. } => ErrorKind::Payload,
            Error::Closed => ErrorKind::Closed,
            Error::Busy { .. } => ErrorKind::Busy,
            Error::NoStore { .. } => ErrorKind::NoStore,
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::Conflict { .. } => ErrorKind::Conflict,
            Error::NotHeld { .. } => ErrorKind::NotHeld,
            Error::GroupMismatch { .. } => ErrorKind::GroupMismatch,
            Error::RolledBack { .. } => ErrorKind::RolledBack,
            Error::StorageFull { .. } => ErrorKind::StorageFull,
            Error::HandlerFailed { .. } => ErrorKind::HandlerFailed,
        }
    }

    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(what: &'static str, reason: impl fmt::Display) -> Self {
        Error::InvalidInput {
            what,
            reason: reason.to_string(),
        }
    }

    /// [`Error::Connect`] to `target` (never give it a password), with
    /// `cause` and its chain of sources folded into one line: each error's
    /// text once, a source whose text its parent already shows skipped.
    pub fn connect(target: impl Into<String>, cause: impl Into<BoxError>) -> Self {
        let cause: BoxError = cause.into();
        let mut text = cause.to_string();
        let mut source = cause.source();
        while let Some(s) = source {
            let part = s.to_string();
            if !part.is_empty() && !text.contains(&part) {
                text.push_str(": ");
                text.push_str(&part);
            }
            source = s.source();
        }
        Error::Connect {
            target: target.into(),
            cause: text,
        }
    }

    /// Shorthand for [`Error::Database`] from any driver error.
    pub fn database(op: &'static str, source: impl Into<BoxError>) -> Self {
        Error::Database {
            op,
            source: source.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a message and an optional source.
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn connect_errors_name_the_target_and_each_cause_once() {
        let refused = Layer("Connection refused (os error 111)", None);
        let driver = Layer("error connecting to server", Some(Box::new(refused)));
        let err = Error::connect("PostgreSQL at 127.0.0.1:1", driver);
        assert_eq!(
            err.to_string(),
            "cannot connect to PostgreSQL at 127.0.0.1:1: error connecting to server: Connection refused (os error 111)"
        );
        assert!(std::error::Error::source(&err).is_none(), "no line repeats");
        assert_eq!(err.kind(), ErrorKind::Connect);

        // A driver that already shows its cause does not show it twice.
        let inner = Layer("timed out", None);
        let outer = Layer("handshake failed: timed out", Some(Box::new(inner)));
        assert_eq!(
            Error::connect("x", outer).to_string(),
            "cannot connect to x: handshake failed: timed out"
        );
    }
}
