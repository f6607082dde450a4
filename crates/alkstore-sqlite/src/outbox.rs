//! Every write of a transaction, on a connection of the application's own
//! ([`SqliteEngine::within`]), and the three outbox calls that came first
//! (`job_enqueue_in`, `stream_publish_in`, `notify_in`), now thin aliases
//! of it.
//!
//! The engine's own transaction ([`SqliteTx`](crate::SqliteTx), through
//! [`Transaction`](alkstore_core::Transaction)) runs the same functions on
//! its connection: one body of SQL per write, whichever way it is called.

use alkstore_core::group::GroupCheckpointParams;
use alkstore_core::lock::LockFenceParams;
use alkstore_core::notify::NotifyParams;
use alkstore_core::queue::{
    JobAckParams, JobEnqueueParams, JobFailParams, JobSettleParams, JobSnoozeParams,
};
use alkstore_core::schedule::{ScheduleInfo, ScheduleNameParams, ScheduleSetParams};
use alkstore_core::stream::{NewEvent, StreamOffsetCommitParams, StreamPublishParams};
use alkstore_core::{
    Checked, Claim, Engine, Enqueued, Error, JobRetryParams, NewJob, Result, RetryOutcome, Settle,
    Settled,
};
use rusqlite::Connection;

use crate::SqliteEngine;

impl SqliteEngine {
    /// The writes of a transaction, run on `conn`: usually inside the
    /// application's own open transaction on this store's file, so they
    /// commit or roll back with its own writes. The same calls, with the
    /// same names and promises, as [`Transaction`](alkstore_core::Transaction)
    /// (which opens a transaction on a connection of the engine's), for an
    /// application that runs its own `rusqlite` transactions.
    ///
    /// Each call is validated against this store's limits, timed by its
    /// clock, and runs all or none in a savepoint of its own: a call that
    /// fails leaves nothing of itself behind, and the transaction goes on.
    /// What to do then is the caller's: a claim, lease or lock found no
    /// longer held ([`Error::NotHeld`]) means the transaction must roll
    /// back, or its effects land twice.
    ///
    /// The connection must be on this store's file; give it a
    /// `busy_timeout`, since alkstore's writer shares the file, and use
    /// this crate's re-exported [`rusqlite`] so both
    /// sides link the same SQLite. Begin with `BEGIN IMMEDIATE`
    /// ([`rusqlite::TransactionBehavior::Immediate`]) when the transaction
    /// fences ([`Within::job_ack`], [`Within::group_checkpoint`],
    /// [`Within::lock_fence`]): the write lock taken at once is what keeps
    /// the claim, lease or lock from passing on before the commit. Workers
    /// and readers, in this process too, see the commit through the
    /// engine's `data_version` watcher.
    ///
    /// ```no_run
    /// # fn demo(engine: &alkstore_sqlite::SqliteEngine, conn: &mut rusqlite::Connection) -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_core::NewJob;
    /// use rusqlite::TransactionBehavior;
    /// let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    /// tx.execute("INSERT INTO orders (id) VALUES (1)", [])?;
    /// let store = engine.within(&tx);
    /// store.job_enqueue(NewJob::new("emails", b"order 1".to_vec()))?;
    /// store.notify("orders", "1 placed")?;
    /// tx.commit()?;
    /// # Ok(()) }
    /// ```
    pub fn within<'c>(&'c self, conn: &'c Connection) -> Within<'c> {
        Within { engine: self, conn }
    }

    /// Enqueue `job` on the caller's connection, usually inside the
    /// caller's open transaction (transactional outbox). A thin alias of
    /// [`Within::job_enqueue`] (`engine.within(conn).job_enqueue(job)`),
    /// kept for code written before it; see [`SqliteEngine::within`].
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
        let mut enqueued = self.within(conn).job_enqueue(job)?;
        enqueued
            .pop()
            .ok_or_else(|| Error::database("job_enqueue", "no outcome for the job"))
    }

    /// Publish `events` on the caller's connection, usually inside the
    /// caller's open transaction (a rollback drops them; their offsets were
    /// never visible and may be handed out again). Returns their offsets. A
    /// thin alias of [`Within::stream_publish`]; see
    /// [`SqliteEngine::within`].
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
        self.within(conn).stream_publish(events)
    }

    /// Send a notification on the caller's connection, usually inside the
    /// caller's open transaction: listeners get it only if that
    /// transaction commits. A thin alias of [`Within::notify`]; see
    /// [`SqliteEngine::within`].
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
        self.within(conn).notify(channel, payload)
    }
}

/// The writes of a transaction on a connection of the application's own
/// (see [`SqliteEngine::within`]): the calls of
/// [`Transaction`](alkstore_core::Transaction), synchronous.
#[derive(Clone, Copy)]
pub struct Within<'c> {
    engine: &'c SqliteEngine,
    conn: &'c Connection,
}

impl std::fmt::Debug for Within<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Within")
            .field("engine", self.engine)
            .finish_non_exhaustive()
    }
}

impl Within<'_> {
    /// Validate `params` against the store's limits.
    fn check<P: alkstore_core::Validate>(&self, params: impl Into<P>) -> Result<Checked<P>> {
        Checked::new(params, self.engine.limits())
    }

    /// Enqueue jobs (one, or a batch all or none): claimable once the
    /// transaction commits. As
    /// [`Transaction::job_enqueue`](alkstore_core::Transaction::job_enqueue).
    pub fn job_enqueue(&self, params: impl Into<JobEnqueueParams>) -> Result<Vec<Enqueued>> {
        let p = self.check(params)?;
        self.enqueue_checked(p)
    }

    /// Complete a job the caller's claim holds, when the transaction
    /// commits; [`Error::NotHeld`] when the claim is no longer held. As
    /// [`Transaction::job_ack`](alkstore_core::Transaction::job_ack).
    pub fn job_ack(&self, claim: Claim) -> Result<()> {
        let id = claim.id;
        let p = self.check::<JobAckParams>(vec![claim])?;
        match self.ack_checked(p)?.first() {
            Some(true) => Ok(()),
            _ => Err(claim_lost(id)),
        }
    }

    /// Retry a job the caller's claim holds (backoff, or dead when out of
    /// attempts), when the transaction commits. As
    /// [`Transaction::job_retry`](alkstore_core::Transaction::job_retry).
    pub fn job_retry(&self, params: JobRetryParams) -> Result<RetryOutcome> {
        match self.settle_one(Settle::Retry(params))? {
            Settled::Retried(outcome) => Ok(outcome),
            other => Err(unexpected("job_retry", other)),
        }
    }

    /// Move a job the caller's claim holds to dead, when the transaction
    /// commits. As [`Transaction::job_fail`](alkstore_core::Transaction::job_fail).
    pub fn job_fail(&self, params: impl Into<JobFailParams>) -> Result<()> {
        let JobFailParams { claim, error, .. } = params.into();
        match self.settle_one(Settle::Fail { claim, error })? {
            Settled::Failed(true) => Ok(()),
            other => Err(unexpected("job_fail", other)),
        }
    }

    /// Put a job the caller's claim holds back, due after the delay,
    /// without using an attempt; returns when it is due. As
    /// [`Transaction::job_snooze`](alkstore_core::Transaction::job_snooze).
    pub fn job_snooze(&self, params: impl Into<JobSnoozeParams>) -> Result<i64> {
        let JobSnoozeParams { claim, delay, .. } = params.into();
        match self.settle_one(Settle::Snooze { claim, delay })? {
            Settled::Snoozed(Some(at)) => Ok(at),
            other => Err(unexpected("job_snooze", other)),
        }
    }

    /// One settle, a claim no longer held as [`Error::NotHeld`].
    fn settle_one(&self, settle: Settle) -> Result<Settled> {
        let id = settle.claim().id;
        let p = self.check::<JobSettleParams>(vec![settle])?;
        match self.settle_checked(p)?.pop() {
            Some(
                Settled::Retried(RetryOutcome::NotHeld)
                | Settled::Failed(false)
                | Settled::Snoozed(None),
            ) => Err(claim_lost(id)),
            Some(settled) => Ok(settled),
            None => Err(Error::database("job_settle", "no outcome for the job")),
        }
    }

    /// Publish events (one, or a batch all or none): readable once the
    /// transaction commits. Returns their offsets. As
    /// [`Transaction::stream_publish`](alkstore_core::Transaction::stream_publish).
    pub fn stream_publish(&self, params: impl Into<StreamPublishParams>) -> Result<Vec<i64>> {
        let p = self.check(params)?;
        self.publish_checked(p)
    }

    /// Save a consumer's offset (monotone) when the transaction commits. As
    /// [`Transaction::stream_offset_commit`](alkstore_core::Transaction::stream_offset_commit).
    pub fn stream_offset_commit(&self, params: StreamOffsetCommitParams) -> Result<i64> {
        let p = self.check(params)?;
        self.offset_commit_checked(p)
    }

    /// Send a notification that listeners get when the transaction commits.
    /// As [`Transaction::notify`](alkstore_core::Transaction::notify).
    pub fn notify(&self, channel: impl Into<String>, payload: impl Into<String>) -> Result<()> {
        let p = self.check(NotifyParams::new(channel, payload))?;
        self.notify_checked(p)
    }

    /// Register or change a schedule when the transaction commits. As
    /// [`Transaction::schedule_set`](alkstore_core::Transaction::schedule_set).
    pub fn schedule_set(&self, params: ScheduleSetParams) -> Result<ScheduleInfo> {
        let p = self.check(params)?;
        self.schedule_set_checked(p)
    }

    /// Remove a schedule when the transaction commits; `false` when there
    /// was none. As
    /// [`Transaction::schedule_remove`](alkstore_core::Transaction::schedule_remove).
    pub fn schedule_remove(&self, params: impl Into<ScheduleNameParams>) -> Result<bool> {
        let p = self.check(params)?;
        self.schedule_remove_checked(p)
    }

    /// Pause a schedule when the transaction commits. As
    /// [`Transaction::schedule_pause`](alkstore_core::Transaction::schedule_pause).
    pub fn schedule_pause(&self, params: impl Into<ScheduleNameParams>) -> Result<ScheduleInfo> {
        let p = self.check(params)?;
        self.schedule_set_paused_checked(p, true)
    }

    /// Resume a paused schedule when the transaction commits. As
    /// [`Transaction::schedule_resume`](alkstore_core::Transaction::schedule_resume).
    pub fn schedule_resume(&self, params: impl Into<ScheduleNameParams>) -> Result<ScheduleInfo> {
        let p = self.check(params)?;
        self.schedule_set_paused_checked(p, false)
    }

    /// Save a bucket's checkpoint under the lease epoch the caller holds;
    /// [`Error::NotHeld`] when the lease is no longer the caller's. As
    /// [`Transaction::group_checkpoint`](alkstore_core::Transaction::group_checkpoint).
    pub fn group_checkpoint(&self, params: GroupCheckpointParams) -> Result<i64> {
        let p = self.check(params)?;
        self.checkpoint_checked(p)
    }

    /// Check that lock `name` is still held under `token` (not expired by
    /// the store's clock, not passed on); [`Error::NotHeld`] otherwise.
    /// Inside a transaction holding the write lock (`BEGIN IMMEDIATE`), it
    /// stays so until the transaction ends. As
    /// [`Transaction::lock_fence`](alkstore_core::Transaction::lock_fence).
    pub fn lock_fence(&self, name: impl Into<String>, token: i64) -> Result<()> {
        let p = self.check(LockFenceParams::new(name, token))?;
        self.lock_fence_checked(p)
    }

    // The validated forms, shared with the engine's own transaction
    // (`tx.rs`): each write in a savepoint of its own, on the engine's
    // clock.

    pub(crate) fn enqueue_checked(&self, p: Checked<JobEnqueueParams>) -> Result<Vec<Enqueued>> {
        let jobs = p.into_inner().jobs;
        // Ids reserved for this call alone: this connection keeps no block
        // between calls (its transaction may roll back, taking the
        // reservation with it). The reservation and the inserts commit
        // together: a reservation committed alone would let the writer
        // reserve above it and commit a higher id first.
        let block = i64::try_from(jobs.len()).unwrap_or(i64::MAX).max(1);
        self.all_or_none("job_enqueue", |conn| {
            crate::queues::enqueue::enqueue_in(conn, &jobs, self.engine.now(), &mut None, block)
        })
    }

    pub(crate) fn ack_checked(&self, p: Checked<JobAckParams>) -> Result<Vec<bool>> {
        let claims = p.into_inner().claims;
        self.all_or_none("job_ack", |conn| {
            crate::queues::settle::ack_in(conn, &claims, self.engine.now(), &mut Default::default())
        })
    }

    pub(crate) fn settle_checked(&self, p: Checked<JobSettleParams>) -> Result<Vec<Settled>> {
        let batch = p.into_inner().batch;
        self.all_or_none("job_settle", |conn| {
            crate::queues::settle::settle_in(conn, batch, self.engine.now())
        })
    }

    pub(crate) fn publish_checked(&self, p: Checked<StreamPublishParams>) -> Result<Vec<i64>> {
        // The counter bump and the inserts commit together: a counter
        // committed alone could let another publisher's later offset
        // become readable first.
        self.all_or_none("stream_publish", |conn| {
            crate::streams::insert_events(conn, &p.events, self.engine.now())
        })
    }

    pub(crate) fn offset_commit_checked(
        &self,
        p: Checked<StreamOffsetCommitParams>,
    ) -> Result<i64> {
        self.all_or_none("stream_offset_commit", |conn| {
            crate::streams::offset_commit_in(conn, &p, self.engine.now())
        })
    }

    pub(crate) fn notify_checked(&self, p: Checked<NotifyParams>) -> Result<()> {
        self.all_or_none("notify", |conn| {
            crate::notify::insert(conn, &p.channel, &p.payload, self.now_ms())
        })
    }

    pub(crate) fn schedule_set_checked(
        &self,
        p: Checked<ScheduleSetParams>,
    ) -> Result<ScheduleInfo> {
        self.all_or_none("schedule_set", |conn| {
            crate::schedules::set_in(conn, &p, self.now_ms())
        })
    }

    pub(crate) fn schedule_remove_checked(&self, p: Checked<ScheduleNameParams>) -> Result<bool> {
        self.all_or_none("schedule_remove", |conn| {
            crate::schedules::remove_in(conn, &p.name)
        })
    }

    pub(crate) fn schedule_set_paused_checked(
        &self,
        p: Checked<ScheduleNameParams>,
        paused: bool,
    ) -> Result<ScheduleInfo> {
        self.all_or_none("schedule_set_paused", |conn| {
            crate::schedules::set_paused_in(conn, &p.name, paused, self.now_ms())
        })
    }

    pub(crate) fn checkpoint_checked(&self, p: Checked<GroupCheckpointParams>) -> Result<i64> {
        self.all_or_none("group_checkpoint", |conn| {
            crate::groups::checkpoint::checkpoint_in(conn, &p, self.now_ms())
        })
    }

    pub(crate) fn lock_fence_checked(&self, p: Checked<LockFenceParams>) -> Result<()> {
        // One statement: nothing to undo.
        crate::locks::fence_in(self.conn, &p.name, p.token, self.now_ms())
    }

    fn now_ms(&self) -> i64 {
        self.engine.inner.clock.now_ms()
    }

    /// Run `f`'s writes on the connection in a savepoint: kept when it
    /// succeeds, undone when it fails. Inside the caller's transaction they
    /// then commit with it; outside one, together on their own.
    fn all_or_none<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<T> {
        let conn = self.conn;
        crate::connection::run_cached(conn, "SAVEPOINT alkstore_call").map_err(crate::db(op))?;
        match f(conn) {
            Ok(out) => {
                crate::connection::run_cached(conn, "RELEASE alkstore_call")
                    .map_err(crate::db(op))?;
                Ok(out)
            }
            Err(e) => {
                let _ = crate::connection::run_cached(conn, "ROLLBACK TO alkstore_call");
                let _ = crate::connection::run_cached(conn, "RELEASE alkstore_call");
                Err(e)
            }
        }
    }
}

/// The claim on job `id` is no longer the caller's.
fn claim_lost(id: i64) -> Error {
    Error::NotHeld {
        what: format!("claim on job {id}"),
    }
}

fn unexpected(op: &'static str, got: Settled) -> Error {
    Error::database(op, format!("unexpected outcome {got:?}"))
}
