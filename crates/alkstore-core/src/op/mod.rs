//! Every write operation, declared once and told where it runs.
//!
//! An operation *is* its parameters' type: [`JobEnqueueParams`] is the
//! enqueue. Its one [`Op`] implementation (in `declared.rs`) says what it
//! returns, which of this process's waiters it wakes once committed, what
//! it is fenced by, and when there is nothing to do. Each engine
//! implements it once, with [`Drive`], given where it runs ([`At`]): its
//! autocommit path (SQLite's writer with group commit, PostgreSQL's pool
//! with its combiner), or a connection inside a transaction (the engine's
//! own, [`Transaction`](crate::Transaction), or the application's). A
//! [`Place`] runs operations: an engine (each call commits on its own), a
//! [`Transaction`](crate::Transaction) (calls are poisoned on failure and
//! their hints wait for the commit), or an engine's `Within` (the
//! application's own transaction). [`Writes`] gives every place the
//! operations under their names, so `engine.job_enqueue(..)` and
//! `tx.job_enqueue(..)` are one method.
//!
//! This seam is **unstable**: engines implement it, and the `alkstore`
//! facade's handles (`store.queue(..)`, `tx.queue(..)`) are what
//! applications use.

mod declared;

use std::future::Future;
use std::time::Instant;

use tracing::Instrument as _;

use crate::group::GroupCheckpointParams;
use crate::lock::LockFenceParams;
use crate::notify::NotifyParams;
use crate::queue::{
    JobAckParams, JobEnqueueParams, JobFailParams, JobSettleParams, JobSnoozeParams,
};
use crate::schedule::{ScheduleInfo, ScheduleNameParams, SchedulePauseParams, ScheduleSetParams};
use crate::stream::{StreamOffsetCommitParams, StreamPublishParams};
use crate::{
    Checked, Engine, Enqueued, Error, JobRetryParams, PauseState, Result, RetryOutcome, Settle,
    Settled, Validate, WakeHub,
};

/// A write operation: its parameters' type (see the [module](self) docs).
pub trait Op: Validate + Send + 'static {
    /// What it returns.
    type Output: Send + 'static;
    /// Its name, in spans (`alkstore.op`, field `op`) and metrics (label
    /// `method`; `tx_<name>` inside a transaction).
    const NAME: &'static str;

    /// The output when there is nothing to do (an empty batch), without
    /// a round trip.
    fn idle(&self) -> Option<Self::Output> {
        None
    }

    /// This process's waiters to wake once the write is committed.
    fn hints(&self) -> Vec<Hint> {
        Vec::new()
    }

    /// Whether the output calls for the hints (a settle that left nothing
    /// claimable wakes nobody).
    fn wakes(_out: &Self::Output) -> bool {
        true
    }

    /// What the call is fenced by (a claim, a lease, a lock), as a
    /// transaction names it when the fence was lost.
    fn fence(&self) -> Option<String> {
        None
    }

    /// Whether the output says the fence was lost (a claim no longer
    /// held). Inside a transaction that is [`Error::NotHeld`] and poisons
    /// it; an autocommit call returns the output as it is.
    fn lost(_out: &Self::Output) -> bool {
        false
    }
}

/// Where an engine runs an operation.
#[derive(Debug)]
pub enum At<C> {
    /// On its own, committed before the call returns: the engine's
    /// autocommit path.
    Auto,
    /// On a connection inside an open transaction (the engine's own or the
    /// application's), committed with it.
    Tx(C),
}

/// The connection an engine runs a transaction's operations on.
pub trait TxConn: Engine {
    /// A borrowed connection inside an open transaction.
    type Conn<'c>
    where
        Self: 'c;
}

/// An engine's one implementation of the operation `P`, wherever it runs.
/// SQL only: validation, metrics, hints and poisoning are the [`Place`]'s.
pub trait Drive<P: Op>: TxConn {
    /// Run `params` at `at`. A failed call writes nothing of itself (each
    /// runs all or none, in a savepoint inside a transaction). Input only
    /// the database can judge is [`Error::InvalidInput`].
    fn drive<'a>(
        &'a self,
        at: At<Self::Conn<'a>>,
        params: Checked<P>,
    ) -> impl Future<Output = Result<P::Output>> + Send + 'a;
}

/// Somewhere operations run: an engine (autocommit), a
/// [`Transaction`](crate::Transaction), or an engine's `Within` (the
/// application's own transaction).
pub trait Place {
    /// The engine underneath.
    type Engine: Engine;

    /// The engine underneath.
    fn engine(&self) -> &Self::Engine;

    /// Validate and run one operation here.
    fn run<P: Op>(
        &self,
        params: impl Into<P> + Send,
    ) -> impl Future<Output = Result<P::Output>> + Send
    where
        Self::Engine: Drive<P>,
    {
        self.run_as::<P>(P::NAME, params)
    }

    /// [`Place::run`], named `name` in spans and metrics (`job_retry` is a
    /// `job_settle` of one).
    fn run_as<P: Op>(
        &self,
        name: &'static str,
        params: impl Into<P> + Send,
    ) -> impl Future<Output = Result<P::Output>> + Send
    where
        Self::Engine: Drive<P>;
}

/// An engine is the autocommit place: each call commits on its own, and
/// this process's waiters are woken at once.
impl<E: Engine + TxConn> Place for E {
    type Engine = E;

    fn engine(&self) -> &E {
        self
    }

    fn run_as<P: Op>(
        &self,
        name: &'static str,
        params: impl Into<P> + Send,
    ) -> impl Future<Output = Result<P::Output>> + Send
    where
        E: Drive<P>,
    {
        let params = params.into();
        timed(self, name, async move {
            if self.is_closed() {
                return Err(Error::Closed);
            }
            let p = Checked::<P>::new(params, self.limits())?;
            if let Some(out) = p.idle() {
                return Ok(out);
            }
            let hints = p.hints();
            let out = self.drive(At::Auto, p).await?;
            if P::wakes(&out) {
                wake(self.wake_hub(), hints);
            }
            Ok(out)
        })
    }
}

/// Run `call` in an `alkstore.op` span (field `op`: its name) and record
/// its metrics (`method`: its name).
pub(crate) async fn timed<E: Engine + ?Sized, T>(
    engine: &E,
    name: impl Into<metrics::SharedString>,
    call: impl Future<Output = Result<T>>,
) -> Result<T> {
    let name: metrics::SharedString = name.into();
    let started = Instant::now();
    let span = tracing::debug_span!("alkstore.op", op = %name);
    let out = call.instrument(span).await;
    crate::call::record(engine.capabilities().name, name, started, &out);
    out
}

/// A waiter of this process to wake once a write is committed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Hint {
    /// Workers of a queue.
    Queue(String),
    /// Readers of a stream.
    Stream(String),
    /// Listeners of a channel.
    Channel(String),
    /// Every worker (a job whose queue the call does not know).
    All,
}

/// Wake what `hints` name (deduplicated; `All` covers the rest).
pub(crate) fn wake(hub: &WakeHub, mut hints: Vec<Hint>) {
    if hints.is_empty() {
        return;
    }
    hints.sort_unstable();
    hints.dedup();
    if hints.contains(&Hint::All) {
        hub.all();
        return;
    }
    for hint in &hints {
        match hint {
            Hint::Queue(q) => hub.queue(q),
            Hint::Stream(s) => hub.stream(s),
            Hint::Channel(c) => hub.channel(c),
            Hint::All => {}
        }
    }
}

/// The write operations under their names, on every [`Place`]: an engine,
/// a [`Transaction`](crate::Transaction), an engine's `Within`. Each is
/// [`Place::run`] with its parameters; the single-claim settles
/// (`job_retry`, `job_fail`, `job_snooze`) are `job_settle` of one.
pub trait Writes: Place {
    /// Insert jobs atomically, all or none (a job with a unique key that
    /// is already taken is `Enqueued::Duplicate`, never an error). Returns
    /// one outcome per job. Inside a transaction they are claimable once it
    /// commits, and this process's workers are woken then.
    fn job_enqueue(
        &self,
        params: impl Into<JobEnqueueParams> + Send,
    ) -> impl Future<Output = Result<Vec<Enqueued>>> + Send
    where
        Self::Engine: Drive<JobEnqueueParams>,
    {
        self.run::<JobEnqueueParams>(params)
    }

    /// Complete claimed jobs (deleted, or kept as completed when the queue
    /// keeps them): one flag per claim, `true` only where the claim was
    /// still valid. Inside a transaction a claim no longer held is
    /// [`Error::NotHeld`] and poisons it, and the jobs stay the caller's
    /// (no rescue hands them out) until it ends.
    fn job_ack(
        &self,
        params: impl Into<JobAckParams> + Send,
    ) -> impl Future<Output = Result<Vec<bool>>> + Send
    where
        Self::Engine: Drive<JobAckParams>,
    {
        self.run::<JobAckParams>(params)
    }

    /// Record many finished attempts that did not end in an ack (retries,
    /// failures, snoozes) in one commit: each behaves exactly as its
    /// single call, the outcomes in the order given. Invalid input
    /// anywhere rejects the batch before anything is written.
    fn job_settle(
        &self,
        params: impl Into<JobSettleParams> + Send,
    ) -> impl Future<Output = Result<Vec<Settled>>> + Send
    where
        Self::Engine: Drive<JobSettleParams>,
    {
        let run = self.run::<JobSettleParams>(params);
        async move { Ok(run.await?.outcomes) }
    }

    /// Reschedule a claimed job with the queue's backoff (or the given
    /// delay), or move it to dead when out of attempts; `NotHeld` as an
    /// outcome when the claim is no longer held (inside a transaction:
    /// [`Error::NotHeld`]).
    fn job_retry(&self, params: JobRetryParams) -> impl Future<Output = Result<RetryOutcome>> + Send
    where
        Self::Engine: Drive<JobSettleParams>,
    {
        settle_one(self, "job_retry", Settle::from(params), |s| match s {
            Settled::Retried(outcome) => Ok(outcome),
            other => Err(other),
        })
    }

    /// Move a claimed job to dead now; `false` when the claim is no longer
    /// held (inside a transaction: [`Error::NotHeld`]).
    fn job_fail(
        &self,
        params: impl Into<JobFailParams> + Send,
    ) -> impl Future<Output = Result<bool>> + Send
    where
        Self::Engine: Drive<JobSettleParams>,
    {
        settle_one(self, "job_fail", Settle::from(params.into()), |s| match s {
            Settled::Failed(failed) => Ok(failed),
            other => Err(other),
        })
    }

    /// Put a claimed job back to pending, due after the delay, without
    /// using an attempt (the handler asked to run again later): its new
    /// due time, or `None` when the claim is no longer held (inside a
    /// transaction: [`Error::NotHeld`]). A job whose cancellation was
    /// requested goes to dead as `cancelled` instead.
    fn job_snooze(
        &self,
        params: impl Into<JobSnoozeParams> + Send,
    ) -> impl Future<Output = Result<Option<i64>>> + Send
    where
        Self::Engine: Drive<JobSettleParams>,
    {
        settle_one(
            self,
            "job_snooze",
            Settle::from(params.into()),
            |s| match s {
                Settled::Snoozed(due) => Ok(due),
                other => Err(other),
            },
        )
    }

    /// Append events, all or none; their offsets in the order given. Each
    /// stream's readers in this process are woken at once (inside a
    /// transaction: at its commit, when the events become readable), others
    /// through the engine's cross-process signal.
    fn stream_publish(
        &self,
        params: impl Into<StreamPublishParams> + Send,
    ) -> impl Future<Output = Result<Vec<i64>>> + Send
    where
        Self::Engine: Drive<StreamPublishParams>,
    {
        self.run::<StreamPublishParams>(params)
    }

    /// Save a consumer's offset. Monotone: a commit below the saved offset
    /// is **ignored** (the saved one stays, and is returned), so a late
    /// commit from a slow path cannot move a consumer back. An offset
    /// beyond the stream's head is [`InvalidInput`](Error::InvalidInput).
    /// With an expectation (`StreamOffsetCommitParams::expecting`) it is a
    /// compare-and-set instead: the offset moves only from exactly the
    /// expected one, else [`Error::NotHeld`] and nothing is written.
    fn stream_offset_commit(
        &self,
        params: StreamOffsetCommitParams,
    ) -> impl Future<Output = Result<i64>> + Send
    where
        Self::Engine: Drive<StreamOffsetCommitParams>,
    {
        self.run::<StreamOffsetCommitParams>(params)
    }

    /// Send a notification on a channel (inside a transaction: when it
    /// commits, and never if it rolls back).
    fn notify(&self, params: NotifyParams) -> impl Future<Output = Result<()>> + Send
    where
        Self::Engine: Drive<NotifyParams>,
    {
        self.run::<NotifyParams>(params)
    }

    /// Register a schedule, or change one (upsert by name). A new
    /// schedule, or one whose spec or zone changed, gets its next boundary
    /// after now; re-registering the same spec keeps the pending boundary
    /// (so registering at every start-up neither skips nor repeats one). A
    /// paused schedule stays paused. A bad spec or zone is
    /// [`InvalidInput`](Error::InvalidInput) and writes nothing.
    fn schedule_set(
        &self,
        params: ScheduleSetParams,
    ) -> impl Future<Output = Result<ScheduleInfo>> + Send
    where
        Self::Engine: Drive<ScheduleSetParams>,
    {
        self.run::<ScheduleSetParams>(params)
    }

    /// Remove a schedule and its history; `false` when there was none.
    /// Jobs it already enqueued stay.
    fn schedule_remove(
        &self,
        params: impl Into<ScheduleNameParams> + Send,
    ) -> impl Future<Output = Result<bool>> + Send
    where
        Self::Engine: Drive<ScheduleNameParams>,
    {
        self.run::<ScheduleNameParams>(params)
    }

    /// Pause a schedule ([`NotFound`](Error::NotFound) when there is none).
    fn schedule_pause(
        &self,
        name: impl Into<String>,
    ) -> impl Future<Output = Result<ScheduleInfo>> + Send
    where
        Self::Engine: Drive<SchedulePauseParams>,
    {
        self.run_as(
            "schedule_pause",
            SchedulePauseParams::new(name, PauseState::Paused),
        )
    }

    /// Resume a paused schedule ([`NotFound`](Error::NotFound) when there
    /// is none).
    fn schedule_resume(
        &self,
        name: impl Into<String>,
    ) -> impl Future<Output = Result<ScheduleInfo>> + Send
    where
        Self::Engine: Drive<SchedulePauseParams>,
    {
        self.run_as(
            "schedule_resume",
            SchedulePauseParams::new(name, PauseState::Running),
        )
    }

    /// Save a bucket's checkpoint, fenced: only the worker holding the
    /// bucket under `epoch` may move it, else [`Error::NotHeld`] and
    /// nothing changes. Forward only: a checkpoint below the saved one is
    /// ignored (the saved one stays and is returned); an offset beyond the
    /// stream's head is [`InvalidInput`](Error::InvalidInput). Inside a
    /// transaction the lease stays the caller's until it ends (a takeover
    /// waits or skips the bucket).
    fn group_checkpoint(
        &self,
        params: GroupCheckpointParams,
    ) -> impl Future<Output = Result<i64>> + Send
    where
        Self::Engine: Drive<GroupCheckpointParams>,
    {
        self.run::<GroupCheckpointParams>(params)
    }

    /// Check that a lock is still held under its fencing token;
    /// [`Error::NotHeld`] otherwise. Inside a transaction it stays so until
    /// the transaction ends, so the holder's writes never land after the
    /// lock passed on.
    fn lock_fence(&self, params: LockFenceParams) -> impl Future<Output = Result<()>> + Send
    where
        Self::Engine: Drive<LockFenceParams>,
    {
        self.run::<LockFenceParams>(params)
    }
}

impl<T: Place + ?Sized> Writes for T {}

/// `AllOps`, and its impl for every engine that drives them all, from one
/// list of the operations.
macro_rules! all_ops {
    ($($p:ty),* $(,)?) => {
        /// An engine that drives every write operation: the one bound for
        /// code generic over engines (`E: AllOps`) that calls them by name.
        pub trait AllOps: Engine $(+ Drive<$p>)* {}

        impl<T> AllOps for T where T: Engine $(+ Drive<$p>)* {}
    };
}

all_ops!(
    JobEnqueueParams,
    JobAckParams,
    JobSettleParams,
    StreamPublishParams,
    StreamOffsetCommitParams,
    NotifyParams,
    ScheduleSetParams,
    ScheduleNameParams,
    SchedulePauseParams,
    GroupCheckpointParams,
    LockFenceParams,
);

/// A settle of one claim (`job_retry`, `job_fail`, `job_snooze`), named
/// `name`: the batch operation with one element, its one outcome picked
/// by `pick` (another kind of outcome is an error).
fn settle_one<'a, P: Place + ?Sized, T: Send + 'static>(
    place: &'a P,
    name: &'static str,
    settle: Settle,
    pick: fn(Settled) -> std::result::Result<T, Settled>,
) -> impl Future<Output = Result<T>> + Send + 'a
where
    P::Engine: Drive<JobSettleParams>,
{
    let run = place.run_as::<JobSettleParams>(name, vec![settle]);
    async move {
        let settled = run
            .await?
            .outcomes
            .into_iter()
            .next()
            .ok_or_else(|| Error::database(name, "the engine returned no outcome"))?;
        pick(settled).map_err(|other| unexpected(name, other))
    }
}

/// A single settle answered with another kind of outcome.
fn unexpected(op: &'static str, got: Settled) -> Error {
    Error::database(op, format!("the engine answered with {got:?}"))
}
