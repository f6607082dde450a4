//! Enqueue inside the caller's own SQLite transaction (transactional outbox).

use alkstore_core::{Clock, Enqueued, Limits, NewJob, Result, SystemClock};
use rusqlite::Connection;

use crate::queues::insert_job;

/// Enqueue `job` on the caller's connection, usually inside the caller's
/// open transaction, so the job commits or rolls back with the caller's own
/// writes. The store must have been opened once on this file (it creates the
/// tables). Give the caller's connection a `busy_timeout`: alkstore's writer
/// shares the file.
///
/// ```no_run
/// # fn demo(conn: &mut rusqlite::Connection) -> Result<(), Box<dyn std::error::Error>> {
/// use alkstore_core::NewJob;
/// let tx = conn.transaction()?;
/// tx.execute("INSERT INTO orders (id) VALUES (1)", [])?;
/// alkstore_sqlite::enqueue_in(&tx, &NewJob::new("emails", b"order 1".to_vec()))?;
/// tx.commit()?;
/// # Ok(()) }
/// ```
pub fn enqueue_in(conn: &Connection, job: &NewJob) -> Result<Enqueued> {
    job.validate(&Limits::default())?;
    insert_job(conn, job, SystemClock.now())
}
