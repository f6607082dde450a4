//! Enqueue inside the caller's own SQLite transaction (transactional outbox).

use alkstore_core::stream::{NewEvent, StreamPublishParams};
use alkstore_core::{Checked, Engine, Enqueued, NewJob, Result};
use rusqlite::Connection;

use crate::queues::insert_job;
use crate::streams::insert_events;
use crate::SqliteEngine;

impl SqliteEngine {
    /// Enqueue `job` on the caller's connection, usually inside the
    /// caller's open transaction, so the job commits or rolls back with the
    /// caller's own writes (transactional outbox). Validated against this
    /// store's limits, timed by its clock. The connection must be on this
    /// store's file; give it a `busy_timeout`, since alkstore's writer shares
    /// the file. Workers in other processes see the commit through their
    /// watcher; use this crate's re-exported [`rusqlite`]
    /// so both sides link the same SQLite.
    ///
    /// ```no_run
    /// # fn demo(engine: &alkstore_sqlite::SqliteEngine, conn: &mut rusqlite::Connection) -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_core::NewJob;
    /// let tx = conn.transaction()?;
    /// tx.execute("INSERT INTO orders (id) VALUES (1)", [])?;
    /// engine.job_enqueue_in(&tx, NewJob::new("emails", b"order 1".to_vec()))?;
    /// tx.commit()?;
    /// # Ok(()) }
    /// ```
    pub fn job_enqueue_in(&self, conn: &Connection, job: NewJob) -> Result<Enqueued> {
        job.validate(self.limits())?;
        // One id reserved per job: this connection keeps no block between
        // calls (its transaction may roll back, taking the reservation).
        // The reservation and the insert commit together, as
        // `stream_publish_in`'s counter and events do: outside a
        // transaction, a reservation committed alone would let a writer
        // reserve above it and commit a higher id first.
        all_or_none(conn, "job_enqueue", || {
            insert_job(conn, &job, self.now(), &mut None, 1)
        })
    }

    /// Publish `events` on the caller's connection, usually inside the
    /// caller's open transaction: they commit or roll back with the
    /// caller's own writes (a rollback drops them; their offsets were never
    /// visible and may be handed out again). Outside a transaction the
    /// batch runs in a savepoint of its own, so it is still all or none and
    /// its offsets commit together. Returns their offsets. Validated and
    /// timed like [`SqliteEngine::job_enqueue_in`]; subscribers in other
    /// processes see the commit through their watcher.
    ///
    /// ```no_run
    /// # fn demo(engine: &alkstore_sqlite::SqliteEngine, conn: &mut rusqlite::Connection) -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_core::stream::NewEvent;
    /// let tx = conn.transaction()?;
    /// tx.execute("INSERT INTO orders (id) VALUES (1)", [])?;
    /// engine.stream_publish_in(&tx, vec![NewEvent::new("orders", b"order 1 placed".to_vec())])?;
    /// tx.commit()?;
    /// # Ok(()) }
    /// ```
    pub fn stream_publish_in(&self, conn: &Connection, events: Vec<NewEvent>) -> Result<Vec<i64>> {
        let events = Checked::<StreamPublishParams>::new(events, self.limits())?.into_inner();
        // The counter bump and the inserts must commit together: a counter
        // committed alone could let another publisher's later offset become
        // readable first.
        all_or_none(conn, "stream_publish", || {
            insert_events(conn, &events.events, self.now())
        })
    }

    /// Send a notification on the caller's connection, usually inside the
    /// caller's open transaction: listeners get it only if that
    /// transaction commits (they read it when the data_version watcher
    /// sees the commit). Validated like [`NotifyEngine::notify`](alkstore_core::NotifyEngine::notify).
    ///
    /// ```no_run
    /// # fn demo(engine: &alkstore_sqlite::SqliteEngine, conn: &mut rusqlite::Connection) -> Result<(), Box<dyn std::error::Error>> {
    /// let tx = conn.transaction()?;
    /// tx.execute("UPDATE orders SET state = 'paid' WHERE id = 1", [])?;
    /// engine.notify_in(&tx, "orders", "1 paid")?;
    /// tx.commit()?;
    /// # Ok(()) }
    /// ```
    pub fn notify_in(&self, conn: &Connection, channel: &str, payload: &str) -> Result<()> {
        alkstore_core::notify::validate_notify(channel, payload)?;
        crate::notify::insert(conn, channel, payload, self.inner.clock.now_ms())
    }
}

/// Run `f`'s writes on `conn` in a savepoint: kept when it succeeds, undone
/// when it fails. Inside the caller's transaction they then commit with it;
/// outside one, together on their own.
fn all_or_none<T>(conn: &Connection, op: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    conn.execute_batch("SAVEPOINT alkstore_outbox")
        .map_err(crate::db(op))?;
    match f() {
        Ok(out) => {
            conn.execute_batch("RELEASE alkstore_outbox")
                .map_err(crate::db(op))?;
            Ok(out)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK TO alkstore_outbox; RELEASE alkstore_outbox");
            Err(e)
        }
    }
}
