//! One group transaction: begin it (waiting for another connection's
//! lock only where that may block), run each queued command in its own
//! savepoint (or none, see [`Atomicity`]), then commit or roll back, and
//! deliver every command's result.

use std::panic::AssertUnwindSafe;

use alkstore_core::{Error, Result};

use super::state::{GroupFailure, WriterState};
use crate::connection::{run_cached, without_waiting};
use crate::is_busy;

/// Hands a command's result to its caller once its group ended (with the
/// group's failure, if it failed as a whole).
pub(super) type Deliver = Box<dyn FnOnce(Option<&GroupFailure>) + Send>;
/// A queued write: runs in the group's transaction, returns its delivery.
pub(super) type Command = Box<dyn FnOnce(&mut WriterState) -> Deliver + Send>;

/// What [`run_group`] did with a batch.
pub(super) enum Group {
    /// It ran (committed or not: `count` was told which).
    Ran,
    /// Another connection holds the write lock and this thread may not
    /// wait for it: nothing ran, the batch is handed back.
    Locked(Vec<Command>),
}

/// `BEGIN IMMEDIATE`, waiting up to the busy timeout for another
/// connection's lock only when `may_wait`.
fn begin(st: &mut WriterState, may_wait: bool) -> rusqlite::Result<()> {
    let sql = "BEGIN IMMEDIATE";
    match may_wait {
        true => run_cached(&st.conn, sql),
        false => without_waiting(&st.conn, st.busy_timeout, sql),
    }
}

/// Run one group transaction.
/// `count` is told whether the group committed once it ran, before its
/// callers get their results (not when the file was locked: `Locked`).
pub(super) fn run_group(
    st: &mut WriterState,
    batch: Vec<Command>,
    may_wait: bool,
    count: &dyn Fn(bool),
) -> Group {
    // A previous group may have left a transaction open (a failed ROLLBACK);
    // never build on it.
    if !st.conn.is_autocommit() {
        let _ = st.conn.execute_batch("ROLLBACK");
        st.forget_rolled_back();
    }
    let begin = begin(st, may_wait);
    if let Err(e) = &begin {
        if !may_wait && is_busy(e) {
            return Group::Locked(batch);
        }
    }
    if let Err(e) = begin {
        // Each command reports why without running (see `in_savepoint`).
        let failure = if is_busy(&e) {
            GroupFailure::Busy(st.busy_timeout)
        } else {
            tracing::error!(error = %e, "sqlite writer could not begin a transaction");
            GroupFailure::Other(format!("begin: {e}"))
        };
        st.begin_failure = Some(failure);
        let delivers: Vec<Deliver> = batch.into_iter().map(|cmd| cmd(st)).collect();
        st.begin_failure = None;
        count(false);
        for d in delivers {
            d(None);
        }
        return Group::Ran;
    }
    // Another connection committed since the last group began: hint
    // listeners (the watcher leaves commits made before a group to this
    // look, see `GroupActivity`); and ids reserved since are below that
    // connection's, so take a new block. Once a group, not per job.
    if st.others_committed() {
        st.hub.all();
        st.job_ids = None;
    }
    st.activity.begin();
    let group = run_begun(st, batch, count);
    st.activity.end();
    group
}

/// [`run_group`] once its transaction has begun.
fn run_begun(st: &mut WriterState, batch: Vec<Command>, count: &dyn Fn(bool)) -> Group {
    let mut delivers: Vec<Deliver> = Vec::with_capacity(batch.len());
    let mut aborted: Option<String> = None;
    // A command alone in its group skips its savepoint (two statements and
    // the sub-journal's page copies); its failure rolls the group back.
    st.sole_command = batch.len() == 1;
    st.sole_command_failed = false;
    for cmd in batch {
        if let Some(reason) = &aborted {
            // Refused unrun (see `in_savepoint`): its caller learns why, and
            // nothing of it was written.
            st.begin_failure = Some(GroupFailure::GroupAborted(reason.clone()));
            delivers.push(cmd(st));
            st.begin_failure = None;
            continue;
        }
        match std::panic::catch_unwind(AssertUnwindSafe(|| cmd(st))) {
            Ok(deliver) => delivers.push(deliver),
            Err(_) => {
                aborted = Some("another write command of its group panicked".to_string());
                continue;
            }
        }
        // SQLite may roll the whole transaction back by itself (disk full,
        // I/O error). Later commands would then commit on their own, so stop.
        if st.conn.is_autocommit() {
            aborted = Some("SQLite rolled the group's transaction back".to_string());
        }
    }
    let sole_failed = std::mem::take(&mut st.sole_command_failed);
    st.sole_command = false;
    if sole_failed && aborted.is_none() {
        // Its own error is what its caller gets; nothing of it stays.
        let _ = st.conn.execute_batch("ROLLBACK");
        st.forget_rolled_back();
        count(false);
        for d in delivers {
            d(None);
        }
        return Group::Ran;
    }
    let err = match aborted {
        Some(reason) => {
            let _ = st.conn.execute_batch("ROLLBACK");
            st.forget_rolled_back();
            Some(GroupFailure::GroupAborted(reason))
        }
        None => {
            let commit = st
                .conn
                .prepare_cached("COMMIT")
                .and_then(|mut s| s.execute([]));
            match commit {
                Ok(_) => None,
                Err(e) => {
                    let _ = st.conn.execute_batch("ROLLBACK");
                    // Rescue bookkeeping may describe rolled-back work.
                    st.forget_rolled_back();
                    Some(if is_busy(&e) {
                        GroupFailure::Busy(st.busy_timeout)
                    } else if crate::is_full(&e) {
                        GroupFailure::Full
                    } else {
                        GroupFailure::Other(format!("commit: {e}"))
                    })
                }
            }
        }
    };
    let committed = err.is_none();
    count(committed);
    for d in delivers {
        d(err.as_ref());
    }
    Group::Ran
}

/// What undoes a failed command without touching its group's others.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Atomicity {
    /// A savepoint around the command.
    Savepoint,
    /// The command writes with one statement, which SQLite undoes by itself
    /// when it fails.
    OneStatement,
}

pub(super) fn in_savepoint<T>(
    st: &mut WriterState,
    op: &'static str,
    atomicity: Atomicity,
    f: impl FnOnce(&mut WriterState) -> Result<T>,
) -> Result<T> {
    if let Some(failure) = &st.begin_failure {
        return Err(failure.error(op));
    }
    if st.sole_command {
        let result = f(st);
        st.sole_command_failed = result.is_err();
        return result;
    }
    if atomicity == Atomicity::OneStatement {
        return f(st);
    }
    st.conn
        .prepare_cached("SAVEPOINT alk_cmd")
        .and_then(|mut s| s.execute([]))
        .map_err(|e| Error::database(op, e))?;
    let result = f(st);
    let end = if result.is_ok() {
        "RELEASE alk_cmd"
    } else {
        "ROLLBACK TO alk_cmd"
    };
    let ended = st
        .conn
        .prepare_cached(end)
        .and_then(|mut s| s.execute([]))
        .map_err(|e| Error::database(op, e));
    if result.is_err() {
        // The command's writes are undone, a reservation of ids with them.
        st.job_ids = None;
        // ROLLBACK TO keeps the savepoint open; release it too.
        let _ = st
            .conn
            .prepare_cached("RELEASE alk_cmd")
            .and_then(|mut s| s.execute([]));
    }
    ended?;
    result
}
