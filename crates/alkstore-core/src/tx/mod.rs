//! The application's own transaction: every write of every primitive,
//! committed together with the application's own SQL, or not at all.
//!
//! Engines implement [`TxDriver`]: begin a transaction on a connection of
//! their own, run each primitive's write inside it, commit, roll back. The
//! one wrapper, [`Transaction`], is what callers use: it validates every
//! call's input against the store's limits before anything is written (bad
//! input is refused and the transaction goes on unharmed, as it does when
//! the engine refuses input only the database can judge, such as an offset
//! beyond the stream's head, with [`Error::InvalidInput`]), and it
//! **poisons** the transaction when a call fails for any other reason: a
//! claim, lease or lock that is no longer the caller's
//! ([`Error::NotHeld`]), or a database error. A poisoned transaction never
//! commits: [`Transaction::commit`] rolls it back and returns
//! [`Error::RolledBack`] naming the first failure, so the application's own
//! writes vanish with it.
//!
//! What the fenced calls promise:
//!
//! - [`Transaction::job_ack`] (and retry, fail, snooze) only touches a job
//!   the caller's claim still holds, and keeps the job from being handed
//!   to anyone else until the transaction ends.
//! - [`Transaction::group_checkpoint`] only moves a bucket's checkpoint
//!   under the lease epoch the caller holds, and keeps the lease from being
//!   taken over until the transaction ends.
//! - [`Transaction::stream_offset_commit`] with an expectation
//!   ([`StreamOffsetCommitParams::expecting`]) only moves a consumer's
//!   offset from the one the caller read, and keeps it there until the
//!   transaction ends, so two instances of a consumer cannot both commit
//!   their writes for the same events.
//! - [`Transaction::lock_fence`] checks that a lock's fencing token is
//!   still the holder's and keeps it so until the transaction ends
//!   (PostgreSQL: a row lock that a takeover waits for; SQLite: the write
//!   lock the transaction holds), so the holder's writes can never land
//!   after the lock passed on.
//!
//! Dropping a transaction without committing rolls it back.

use std::future::Future;
use std::time::Instant;

use crate::group::GroupCheckpointParams;
use crate::lock::LockFenceParams;
use crate::notify::NotifyParams;
use crate::queue::{
    JobAckParams, JobEnqueueParams, JobFailParams, JobSettleParams, JobSnoozeParams,
};
use crate::schedule::{ScheduleInfo, ScheduleNameParams, ScheduleSetParams};
use crate::stream::{StreamOffsetCommitParams, StreamPublishParams};
use crate::{
    Checked, Claim, Engine, Enqueued, Error, JobRetryParams, Result, RetryOutcome, Settle, Settled,
};

/// Driver: what an engine implements so every primitive's writes can join
/// one transaction. SQL only: validation, poisoning, metrics and wake
/// hints are the wrapper's ([`Transaction`]).
///
/// Each write runs all or none inside the transaction (a failed write
/// leaves nothing of itself behind), and reports a claim, lease or lock
/// the caller no longer holds as [`Error::NotHeld`] (or, for acks and
/// settles, as a `false`/not-held outcome the wrapper turns into one).
/// Input the database refuses (an offset beyond the stream's head) is
/// [`Error::InvalidInput`], after which the transaction must go on as if
/// the call had not been made: the wrapper does not poison it.
pub trait TxDriver: Engine + Clone {
    /// The engine's open transaction. Dropping it rolls it back.
    type Tx: Send + 'static;

    /// Open a transaction on a connection of the engine's own (SQLite: it
    /// takes the write lock at once, waiting up to the busy timeout).
    fn tx_begin(&self) -> impl Future<Output = Result<Self::Tx>> + Send;

    /// Commit.
    fn tx_commit(&self, tx: Self::Tx) -> impl Future<Output = Result<()>> + Send;

    /// Roll back.
    fn tx_rollback(&self, tx: Self::Tx) -> impl Future<Output = Result<()>> + Send;

    /// As [`QueueEngine::job_enqueue`](crate::QueueEngine::job_enqueue).
    fn tx_job_enqueue(
        &self,
        tx: &mut Self::Tx,
        params: Checked<JobEnqueueParams>,
    ) -> impl Future<Output = Result<Vec<Enqueued>>> + Send;

    /// As [`QueueEngine::job_ack`](crate::QueueEngine::job_ack): one
    /// `true` per claim still held (its job is now done).
    fn tx_job_ack(
        &self,
        tx: &mut Self::Tx,
        params: Checked<JobAckParams>,
    ) -> impl Future<Output = Result<Vec<bool>>> + Send;

    /// As [`QueueEngine::job_settle`](crate::QueueEngine::job_settle).
    fn tx_job_settle(
        &self,
        tx: &mut Self::Tx,
        params: Checked<JobSettleParams>,
    ) -> impl Future<Output = Result<Vec<Settled>>> + Send;

    /// As [`StreamEngine::stream_publish`](crate::StreamEngine::stream_publish):
    /// the offsets, in order.
    fn tx_stream_publish(
        &self,
        tx: &mut Self::Tx,
        params: Checked<StreamPublishParams>,
    ) -> impl Future<Output = Result<Vec<i64>>> + Send;

    /// As [`StreamEngine::stream_offset_commit`](crate::StreamEngine::stream_offset_commit).
    fn tx_stream_offset_commit(
        &self,
        tx: &mut Self::Tx,
        params: Checked<StreamOffsetCommitParams>,
    ) -> impl Future<Output = Result<i64>> + Send;

    /// As [`NotifyEngine::notify`](crate::NotifyEngine::notify): listeners
    /// get it when the transaction commits.
    fn tx_notify(
        &self,
        tx: &mut Self::Tx,
        params: Checked<NotifyParams>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// As [`ScheduleEngine::schedule_set`](crate::ScheduleEngine::schedule_set).
    fn tx_schedule_set(
        &self,
        tx: &mut Self::Tx,
        params: Checked<ScheduleSetParams>,
    ) -> impl Future<Output = Result<ScheduleInfo>> + Send;

    /// As [`ScheduleEngine::schedule_remove`](crate::ScheduleEngine::schedule_remove).
    fn tx_schedule_remove(
        &self,
        tx: &mut Self::Tx,
        params: Checked<ScheduleNameParams>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// As [`ScheduleEngine::schedule_pause`](crate::ScheduleEngine::schedule_pause)
    /// (`paused`) and `schedule_resume`.
    fn tx_schedule_set_paused(
        &self,
        tx: &mut Self::Tx,
        params: Checked<ScheduleNameParams>,
        to: crate::PauseState,
    ) -> impl Future<Output = Result<ScheduleInfo>> + Send;

    /// As [`GroupEngine::group_checkpoint`](crate::GroupEngine::group_checkpoint),
    /// and the lease stays the caller's until the transaction ends (a
    /// takeover waits or skips the bucket).
    fn tx_group_checkpoint(
        &self,
        tx: &mut Self::Tx,
        params: Checked<GroupCheckpointParams>,
    ) -> impl Future<Output = Result<i64>> + Send;

    /// Check that the lock is still held under the token (not expired, not
    /// taken over) and keep it so until the transaction ends;
    /// [`Error::NotHeld`] otherwise.
    fn tx_lock_fence(
        &self,
        tx: &mut Self::Tx,
        params: Checked<LockFenceParams>,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// An open transaction carrying the writes of every primitive (see the
/// [module](self) docs): the same names as the autocommit calls, one
/// commit for all of them and the application's own SQL.
///
/// ```no_run
/// # async fn demo<E: alkstore_core::tx::TxDriver>(engine: &E) -> alkstore_core::Result<()> {
/// use alkstore_core::tx::Transaction;
/// use alkstore_core::NewJob;
/// let mut tx = Transaction::begin(engine).await?;
/// tx.job_enqueue(NewJob::new("emails", b"order 1".to_vec())).await?;
/// tx.notify("orders", "1 placed").await?;
/// tx.commit().await?;
/// # Ok(()) }
/// ```
pub struct Transaction<E: TxDriver> {
    engine: E,
    /// `None` once committed or rolled back.
    tx: Option<E::Tx>,
    /// The first failure after which the transaction must not commit.
    poisoned: Option<String>,
    /// This process's waiters to wake at commit.
    hints: Vec<Hint>,
    started: Instant,
}

impl<E: TxDriver> std::fmt::Debug for Transaction<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("engine", &self.engine.capabilities().name)
            .field("open", &self.tx.is_some())
            .field("poisoned", &self.poisoned)
            .finish()
    }
}

/// Run one call inside the transaction: refuse it when the transaction is
/// closed or poisoned, validate its input (refused input changes nothing
/// and does not poison), run it, and poison the transaction when it fails.
macro_rules! tx_call {
    ($self:ident, $method:ident, $params:expr => $ty:ty, |$engine:ident, $tx:ident, $p:ident| $run:expr) => {{
        use tracing::Instrument as _;
        let started = Instant::now();
        let span = tracing::debug_span!(concat!("alkstore.tx.", stringify!($method)));
        let out = async {
            let $tx = open_tx(&mut $self.tx, &$self.poisoned, stringify!($method))?;
            let $p = Checked::<$ty>::new($params, $self.engine.limits())?;
            let $engine = &$self.engine;
            // Poisoned while the call runs: should its future be dropped
            // part-way (a timeout, a `select!`), some of its statements
            // may have run, and the transaction must not commit them.
            $self.poisoned =
                Some(concat!(stringify!($method), " was cancelled before it finished").to_string());
            let out: Result<_> = $run.await;
            match &out {
                Ok(_) => $self.poisoned = None,
                // Input only the database could judge (an offset beyond
                // the stream's head): refused, nothing of the call
                // written, the transaction as it was.
                Err(e) if e.kind() == crate::ErrorKind::InvalidInput => $self.poisoned = None,
                Err(e) => $self.poisoned = Some(format!("{} failed: {e}", stringify!($method))),
            }
            out
        }
        .instrument(span)
        .await;
        crate::call::record(
            $self.engine.capabilities().name,
            concat!("tx_", stringify!($method)),
            started,
            &out,
        );
        out
    }};
}

impl<E: TxDriver> Transaction<E> {
    /// Open a transaction on `engine`.
    pub async fn begin(engine: &E) -> Result<Transaction<E>> {
        if engine.is_closed() {
            return Err(Error::Closed);
        }
        let tx = engine.tx_begin().await?;
        Ok(Transaction {
            engine: engine.clone(),
            tx: Some(tx),
            poisoned: None,
            hints: Vec::new(),
            started: Instant::now(),
        })
    }

    /// The engine's transaction, for the application's own SQL (the
    /// engine crates give it a native handle: a `rusqlite` connection, a
    /// `tokio_postgres` client). `None` once committed or rolled back.
    pub fn driver_tx(&self) -> Option<&E::Tx> {
        self.tx.as_ref()
    }

    /// As [`Transaction::driver_tx`], mutable.
    pub fn driver_tx_mut(&mut self) -> Option<&mut E::Tx> {
        self.tx.as_mut()
    }

    /// The engine the transaction runs on.
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// Why the transaction can no longer commit, if it cannot.
    pub fn poisoned(&self) -> Option<&str> {
        self.poisoned.as_deref()
    }

    /// Mark the transaction as one that must not commit (a failure of the
    /// application's own that it wants to roll everything back on).
    pub fn poison(&mut self, op: &str, cause: &dyn std::fmt::Display) {
        if self.poisoned.is_none() {
            self.poisoned = Some(format!("{op} failed: {cause}"));
        }
    }

    /// Enqueue jobs (one, or a batch all or none): claimable once the
    /// transaction commits, and workers in this process are woken then.
    pub async fn job_enqueue(
        &mut self,
        params: impl Into<JobEnqueueParams> + Send,
    ) -> Result<Vec<Enqueued>> {
        let out = tx_call!(self, job_enqueue, params => JobEnqueueParams, |engine, tx, p| {
            let queues: Vec<String> = p.jobs.iter().map(|j| j.queue.clone()).collect();
            async move {
                let out = engine.tx_job_enqueue(tx, p).await?;
                Ok((out, queues))
            }
        });
        out.map(|(enqueued, queues)| {
            self.hints.extend(queues.into_iter().map(Hint::Queue));
            enqueued
        })
    }

    /// Complete a job the caller's claim holds: it is done when the
    /// transaction commits. A claim no longer held is
    /// [`Error::NotHeld`] and poisons the transaction.
    pub async fn job_ack(&mut self, claim: Claim) -> Result<()> {
        let what = format!("claim on job {}", claim.id);
        tx_call!(self, job_ack, vec![claim] => JobAckParams, |engine, tx, p| async move {
            let acked = engine.tx_job_ack(tx, p).await?;
            match acked.first() {
                Some(true) => Ok(()),
                _ => Err(Error::NotHeld { what }),
            }
        })
    }

    /// Retry a job the caller's claim holds (backoff, or dead when out of
    /// attempts), when the transaction commits. A claim no longer held is
    /// [`Error::NotHeld`] and poisons the transaction.
    pub async fn job_retry(&mut self, params: JobRetryParams) -> Result<RetryOutcome> {
        match self.settle_one(Settle::Retry(params)).await? {
            Settled::Retried(outcome) => Ok(outcome),
            other => Err(unexpected("job_retry", other)),
        }
    }

    /// Move a job the caller's claim holds to dead, when the transaction
    /// commits. A claim no longer held is [`Error::NotHeld`] and poisons
    /// the transaction.
    pub async fn job_fail(&mut self, params: impl Into<JobFailParams> + Send) -> Result<()> {
        let JobFailParams { claim, error } = params.into();
        match self.settle_one(Settle::Fail { claim, error }).await? {
            Settled::Failed(true) => Ok(()),
            other => Err(unexpected("job_fail", other)),
        }
    }

    /// Put a job the caller's claim holds back, due after the delay,
    /// without using an attempt; returns when it is due. A claim no longer
    /// held is [`Error::NotHeld`] and poisons the transaction.
    pub async fn job_snooze(&mut self, params: impl Into<JobSnoozeParams> + Send) -> Result<i64> {
        let JobSnoozeParams { claim, delay } = params.into();
        match self.settle_one(Settle::Snooze { claim, delay }).await? {
            Settled::Snoozed(Some(at)) => Ok(at),
            other => Err(unexpected("job_snooze", other)),
        }
    }

    async fn settle_one(&mut self, settle: Settle) -> Result<Settled> {
        let (id, queue_hint) = match &settle {
            Settle::Retry(p) => (p.claim.id, true),
            Settle::Fail { claim, .. } => (claim.id, false),
            Settle::Snooze { claim, .. } => (claim.id, true),
        };
        let what = format!("claim on job {id}");
        let out = tx_call!(self, job_settle, vec![settle] => JobSettleParams, |engine, tx, p| async move {
            let mut outcomes = engine.tx_job_settle(tx, p).await?;
            let settled = outcomes
                .pop()
                .ok_or_else(|| Error::database("job_settle", "no outcome for the job"))?;
            match settled {
                Settled::Retried(RetryOutcome::NotHeld)
                | Settled::Failed(false)
                | Settled::Snoozed(None) => Err(Error::NotHeld { what }),
                other => Ok(other),
            }
        });
        if queue_hint && out.is_ok() {
            // The job's queue is not known here; a retry or snooze due now
            // wakes this process's workers on every queue.
            self.hints.push(Hint::All);
        }
        out
    }

    /// Publish events (one, or a batch all or none): readable once the
    /// transaction commits. Returns their offsets.
    pub async fn stream_publish(
        &mut self,
        params: impl Into<StreamPublishParams> + Send,
    ) -> Result<Vec<i64>> {
        let out = tx_call!(self, stream_publish, params => StreamPublishParams, |engine, tx, p| {
            let streams: Vec<String> = p.events.iter().map(|e| e.stream.clone()).collect();
            async move { Ok((engine.tx_stream_publish(tx, p).await?, streams)) }
        });
        out.map(|(offsets, streams)| {
            self.hints.extend(streams.into_iter().map(Hint::Stream));
            offsets
        })
    }

    /// Save a consumer's offset (monotone, as the autocommit call) when
    /// the transaction commits. With an expectation
    /// ([`StreamOffsetCommitParams::expecting`]) the offset must still be
    /// the expected one and stays so until the transaction ends; one that
    /// moved is [`Error::NotHeld`] and poisons the transaction, so the
    /// application's writes for those events roll back (another instance
    /// of the consumer handled them).
    pub async fn stream_offset_commit(&mut self, params: StreamOffsetCommitParams) -> Result<i64> {
        tx_call!(self, stream_offset_commit, params => StreamOffsetCommitParams, |engine, tx, p| {
            engine.tx_stream_offset_commit(tx, p)
        })
    }

    /// Send a notification that listeners get when the transaction commits.
    pub async fn notify(
        &mut self,
        channel: impl Into<String>,
        payload: impl Into<String>,
    ) -> Result<()> {
        let params = NotifyParams::new(channel, payload);
        let out = tx_call!(self, notify, params => NotifyParams, |engine, tx, p| {
            let channel = p.channel.clone();
            async move { engine.tx_notify(tx, p).await.map(|()| channel) }
        });
        out.map(|channel| self.hints.push(Hint::Channel(channel)))
    }

    /// Register or change a schedule when the transaction commits.
    pub async fn schedule_set(&mut self, params: ScheduleSetParams) -> Result<ScheduleInfo> {
        tx_call!(self, schedule_set, params => ScheduleSetParams, |engine, tx, p| {
            engine.tx_schedule_set(tx, p)
        })
    }

    /// Remove a schedule when the transaction commits; `false` when there
    /// was none.
    pub async fn schedule_remove(
        &mut self,
        params: impl Into<ScheduleNameParams> + Send,
    ) -> Result<bool> {
        tx_call!(self, schedule_remove, params => ScheduleNameParams, |engine, tx, p| {
            engine.tx_schedule_remove(tx, p)
        })
    }

    /// Pause a schedule when the transaction commits.
    /// [`NotFound`](Error::NotFound) when there is none.
    pub async fn schedule_pause(
        &mut self,
        params: impl Into<ScheduleNameParams> + Send,
    ) -> Result<ScheduleInfo> {
        tx_call!(self, schedule_pause, params => ScheduleNameParams, |engine, tx, p| {
            engine.tx_schedule_set_paused(tx, p, crate::PauseState::Paused)
        })
    }

    /// Resume a paused schedule when the transaction commits.
    /// [`NotFound`](Error::NotFound) when there is none.
    pub async fn schedule_resume(
        &mut self,
        params: impl Into<ScheduleNameParams> + Send,
    ) -> Result<ScheduleInfo> {
        tx_call!(self, schedule_resume, params => ScheduleNameParams, |engine, tx, p| {
            engine.tx_schedule_set_paused(tx, p, crate::PauseState::Running)
        })
    }

    /// Save a bucket's checkpoint under the lease epoch the caller holds,
    /// keeping the lease until the transaction ends. A lease no longer held
    /// is [`Error::NotHeld`] and poisons the transaction.
    pub async fn group_checkpoint(&mut self, params: GroupCheckpointParams) -> Result<i64> {
        tx_call!(self, group_checkpoint, params => GroupCheckpointParams, |engine, tx, p| {
            engine.tx_group_checkpoint(tx, p)
        })
    }

    /// Fence the transaction's writes with a lock: check that `token` is
    /// still the holder's and keep it so until the transaction ends. A lock
    /// that expired or passed on is [`Error::NotHeld`] and poisons the
    /// transaction.
    pub async fn lock_fence(&mut self, name: impl Into<String>, token: i64) -> Result<()> {
        let params = LockFenceParams::new(name, token);
        tx_call!(self, lock_fence, params => LockFenceParams, |engine, tx, p| {
            engine.tx_lock_fence(tx, p)
        })
    }

    /// Commit every write made in the transaction, and wake this process's
    /// workers and readers. A poisoned transaction is rolled back instead
    /// and this returns [`Error::RolledBack`].
    pub async fn commit(mut self) -> Result<()> {
        let Some(tx) = self.tx.take() else {
            return Err(Error::RolledBack {
                op: "commit",
                reason: "the transaction already ended".into(),
            });
        };
        if let Some(reason) = self.poisoned.take() {
            // Refused whatever the rollback does: a failed rollback still
            // ends the transaction (the engine discards the connection).
            if let Err(e) = self.engine.tx_rollback(tx).await {
                tracing::warn!(error = %e, "rolling back a poisoned transaction failed");
            }
            return Err(Error::RolledBack {
                op: "commit",
                reason,
            });
        }
        let started = Instant::now();
        let out = self.engine.tx_commit(tx).await;
        crate::call::record(self.engine.capabilities().name, "tx_commit", started, &out);
        out?;
        let hub = self.engine.wake_hub();
        self.hints.sort_unstable();
        self.hints.dedup();
        if self.hints.contains(&Hint::All) {
            hub.all();
        } else {
            for hint in &self.hints {
                match hint {
                    Hint::Queue(q) => hub.queue(q),
                    Hint::Stream(s) => hub.stream(s),
                    Hint::Channel(c) => hub.notify(c),
                    Hint::All => {}
                }
            }
        }
        tracing::debug!(
            held_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "alkstore transaction committed"
        );
        Ok(())
    }

    /// Roll back every write made in the transaction.
    pub async fn rollback(mut self) -> Result<()> {
        match self.tx.take() {
            Some(tx) => self.engine.tx_rollback(tx).await,
            None => Ok(()),
        }
    }
}

/// The open transaction, unless it ended or was poisoned.
fn open_tx<'t, T>(
    tx: &'t mut Option<T>,
    poisoned: &Option<String>,
    op: &'static str,
) -> Result<&'t mut T> {
    if let Some(reason) = poisoned {
        return Err(Error::RolledBack {
            op,
            reason: reason.clone(),
        });
    }
    tx.as_mut().ok_or(Error::RolledBack {
        op,
        reason: "the transaction already ended".into(),
    })
}

/// A waiter of this process to wake when the transaction commits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Hint {
    Queue(String),
    Stream(String),
    Channel(String),
    All,
}

fn unexpected(op: &'static str, got: Settled) -> Error {
    match got {
        Settled::Retried(RetryOutcome::NotHeld)
        | Settled::Failed(false)
        | Settled::Snoozed(None) => Error::NotHeld {
            what: format!("claim ({op})"),
        },
        other => Error::database(op, format!("unexpected outcome {other:?}")),
    }
}
