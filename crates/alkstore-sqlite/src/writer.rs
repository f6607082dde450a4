//! The single writer thread and its group commit.
//!
//! Callers send closures; the thread drains everything queued, opens one
//! `BEGIN IMMEDIATE` transaction, runs each closure inside its own savepoint,
//! commits once, and only then hands each caller its result. Many concurrent
//! writers therefore share one commit (and one WAL append), which is where
//! SQLite's write throughput comes from.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Arc;

use alkstore_core::{Clock, Error, Result};
use rusqlite::Connection;
use tokio::sync::oneshot;

/// Most commands folded into one transaction, to bound latency.
const MAX_GROUP: usize = 512;

/// State owned by the writer thread.
pub(crate) struct WriterState {
    pub conn: Connection,
    pub clock: Arc<dyn Clock>,
    /// Per queue, the second at which expired claims were last rescued.
    /// Claims expire on whole seconds, so one rescue per second per queue
    /// finds every expired claim.
    pub last_rescue: HashMap<String, i64>,
}

type Deliver = Box<dyn FnOnce(Option<&str>) + Send>;
type Command = Box<dyn FnOnce(&mut WriterState) -> Deliver + Send>;

/// Sends commands to the writer thread.
#[derive(Clone)]
pub(crate) struct WriterHandle {
    tx: mpsc::Sender<Command>,
}

pub(crate) fn spawn(conn: Connection, clock: Arc<dyn Clock>) -> Result<WriterHandle> {
    let (tx, rx) = mpsc::channel::<Command>();
    let state = WriterState {
        conn,
        clock,
        last_rescue: HashMap::new(),
    };
    std::thread::Builder::new()
        .name("alkstore-sqlite-writer".into())
        .spawn(move || run(state, rx))
        .map_err(|e| Error::database("spawn writer", e))?;
    Ok(WriterHandle { tx })
}

fn run(mut st: WriterState, rx: mpsc::Receiver<Command>) {
    let mut batch: Vec<Command> = Vec::with_capacity(MAX_GROUP);
    let mut delivers: Vec<Deliver> = Vec::with_capacity(MAX_GROUP);
    while let Ok(first) = rx.recv() {
        batch.push(first);
        while batch.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(c) => batch.push(c),
                Err(_) => break,
            }
        }
        if let Err(e) = st.conn.execute_batch("BEGIN IMMEDIATE") {
            let msg = format!("begin: {e}");
            for cmd in batch.drain(..) {
                // Run nothing; report the failure to every caller.
                drop(cmd);
            }
            tracing::error!(error = %msg, "sqlite writer could not begin a transaction");
            continue;
        }
        for cmd in batch.drain(..) {
            delivers.push(cmd(&mut st));
        }
        let commit = st.conn.execute_batch("COMMIT");
        let err = match commit {
            Ok(()) => None,
            Err(e) => {
                let _ = st.conn.execute_batch("ROLLBACK");
                // Rescue bookkeeping may describe rolled-back work.
                st.last_rescue.clear();
                Some(format!("commit: {e}"))
            }
        };
        for d in delivers.drain(..) {
            d(err.as_deref());
        }
    }
}

impl WriterHandle {
    /// Run `f` in the next group transaction; resolves after the commit.
    pub(crate) async fn write<T, F>(&self, op: &'static str, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriterState) -> Result<T> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel::<Result<T>>();
        let cmd: Command = Box::new(move |st: &mut WriterState| {
            let result = in_savepoint(st, op, f);
            Box::new(move |commit_err: Option<&str>| {
                let result = match commit_err {
                    None => result,
                    Some(msg) => Err(Error::database(op, msg.to_string())),
                };
                let _ = tx.send(result);
            })
        });
        self.tx.send(cmd).map_err(|_| Error::Closed)?;
        // A dropped sender means the command never ran (begin failed or the
        // thread is gone).
        rx.await
            .map_err(|_| Error::database(op, "the writer could not run the command"))?
    }
}

fn in_savepoint<T>(
    st: &mut WriterState,
    op: &'static str,
    f: impl FnOnce(&mut WriterState) -> Result<T>,
) -> Result<T> {
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
        // ROLLBACK TO keeps the savepoint open; release it too.
        let _ = st
            .conn
            .prepare_cached("RELEASE alk_cmd")
            .and_then(|mut s| s.execute([]));
    }
    ended?;
    result
}
