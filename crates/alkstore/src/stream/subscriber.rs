//! [`Subscriber`]: replay a stream from a consumer's saved offset, then
//! follow it live, committing the offset as it goes.

use alkstore_core::Writes as _;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::stream::{Event, StreamOffsetCommitParams, StreamReadParams};
use alkstore_core::{BoxError, Engine, Error, StreamEngine};
use futures_util::FutureExt;
use tokio::sync::broadcast::error::RecvError;

use super::batch::{self, Next, Retries, Step, TxReader};
use super::ctx::{self, EventCtx};
use super::options::{OnError, StartAt, SubscriberOpts};
use super::Stream;
use crate::{Store, Tx, TxFuture};
use serde::de::DeserializeOwned;

/// Why a subscriber stopped before its shutdown signal (given to the
/// caller as an [`Error`]).
#[derive(Debug, thiserror::Error)]
pub(super) enum SubscribeError {
    /// The store failed (after the subscriber saved what it could).
    #[error(transparent)]
    Store(#[from] Error),
    /// The handler failed on an event and the error policy ran out; the
    /// saved offset is just before this event.
    #[error(
        "stream {stream:?}: handler failed on offset {offset} after {attempts} run(s): {source}"
    )]
    Handler {
        /// The stream.
        stream: String,
        /// The event the handler failed on.
        offset: i64,
        /// How many times it ran.
        attempts: u32,
        /// The handler's last error.
        source: BoxError,
    },
}

/// What a subscriber did before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubscriberReport {
    /// Events handled successfully.
    pub handled: u64,
    /// The offset saved last (`None`: nothing was saved).
    pub committed: Option<i64>,
}

/// Reads one stream as one consumer: replays from the consumer's saved
/// offset, then follows the stream live, woken by commits through the same
/// machinery as the worker (this process's hints, the SQLite watcher,
/// PostgreSQL's LISTEN with its reconnect) and a safety poll. Delivery is
/// at least once: the offset is saved only after events are handled, every
/// [`SubscriberOpts::commit_every`] events or
/// [`SubscriberOpts::commit_interval`], when caught up, and on shutdown; after
/// a crash the events since the last save run again.
///
/// Like every runtime of the crate (see the [crate docs](crate#runtimes))
/// it is made with `new(store, …)`, given its handler
/// ([`Subscriber::handler`] with the payload decoded from JSON,
/// [`Subscriber::handler_tx`] inside a transaction, `_raw` for bytes), and
/// then runs until a shutdown signal: [`Subscriber::run_until`].
///
/// ```no_run
/// # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
/// use alkstore::stream::{EventCtx, Subscriber};
///
/// #[derive(serde::Deserialize)]
/// struct Order { id: i64 }
///
/// let report = Subscriber::new(store, "orders", "mailer")
///     .handler(|event: EventCtx<Order>| async move {
///         println!("{} {:?} order {}", event.offset(), event.key(), event.payload().id);
///         Ok::<(), std::io::Error>(())
///     })
///     .run_until(alkstore::shutdown_signal())
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a subscriber does nothing until `run_until`"]
pub struct Subscriber {
    stream: Stream,
    consumer: String,
    opts: SubscriberOpts,
    worker: String,
    handler: Option<EventHandler>,
}

/// A plain subscriber handler, its types erased.
type PlainFn = ctx::PlainFn<Event>;

/// A transactional subscriber handler, its types erased.
type TxFn = ctx::TxFn<Event>;

/// A subscriber's handler.
#[derive(Clone)]
enum EventHandler {
    Plain(Arc<PlainFn>),
    Tx(Arc<TxFn>),
}

impl fmt::Debug for EventHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EventHandler::Plain(_) => "EventHandler::Plain",
            EventHandler::Tx(_) => "EventHandler::Tx",
        })
    }
}

impl Subscriber {
    /// A subscriber of `store`'s stream `stream`, reading as `consumer`
    /// (the name its offset is saved under), with default options and no
    /// handler yet.
    pub fn new(store: Store, stream: impl Into<String>, consumer: impl Into<String>) -> Subscriber {
        Subscriber {
            stream: store.stream(stream),
            consumer: consumer.into(),
            opts: SubscriberOpts::default(),
            worker: crate::worker::default_worker_id(),
            handler: None,
        }
    }

    /// With these options.
    pub fn opts(mut self, opts: SubscriberOpts) -> Subscriber {
        self.opts = opts;
        self
    }

    /// Name this subscriber in the store's process list (default: unique
    /// per process run).
    pub fn worker_id(mut self, id: impl Into<String>) -> Subscriber {
        self.worker = id.into();
        self
    }

    /// Handle every event with `handler`, at least once: the offset is
    /// saved after events are handled (see the type's docs). Replaces a
    /// handler set before.
    pub fn handler<T, F, Fut, E>(mut self, handler: F) -> Subscriber
    where
        T: DeserializeOwned + Send + 'static,
        F: Fn(EventCtx<T>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        self.handler = Some(EventHandler::Plain(ctx::plain(ctx::decoded::<T>, handler)));
        self
    }

    /// As [`Subscriber::handler`], with the payload's raw bytes.
    pub fn handler_raw<F, Fut, E>(mut self, handler: F) -> Subscriber
    where
        F: Fn(EventCtx<Vec<u8>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        self.handler = Some(EventHandler::Plain(ctx::plain(ctx::raw, handler)));
        self
    }

    /// Handle every event with a **transactional** `handler`: events run
    /// in transactions
    /// ([`Store::begin`](crate::Store::begin)) of up to
    /// [`SubscriberOpts::commit_every`] events, and each transaction commits
    /// the consumer's offset (at its last event) together with the
    /// handler's writes.
    ///
    /// # What a transactional handler is promised
    ///
    /// - **Exactly-once effects for the writes made in the transaction**
    ///   (every call on the [`Tx`], and the application's own SQL on
    ///   [`Tx::sqlite`] or [`Tx::postgres`]), on both engines: an event's
    ///   writes commit with the offset that moves past it, so after a crash
    ///   the subscriber resumes exactly where the committed writes end.
    ///   This holds with several subscribers of one consumer name running
    ///   at once too (a second instance, a paused one that resumes): each
    ///   transaction commits the offset only if it is still the one the
    ///   subscriber last saw saved
    ///   ([`StreamOffsetCommitParams::expecting`]), so when another
    ///   subscriber moved it first the transaction is refused and rolled
    ///   back, and this one goes on from the offset saved now. They do not
    ///   share the work, they race for it: to spread a stream over several
    ///   workers use a consumer group
    ///   ([`GroupRunner::handler_tx`](crate::group::GroupRunner::handler_tx)).
    /// - A batch is per-event handler calls inside one transaction. A
    ///   transaction takes what the last read returned, up to
    ///   `commit_every` events, and commits early once it has been open for
    ///   [`SubscriberOpts::commit_interval`]; so a busy stream makes few
    ///   commits and a quiet one adds no delay.
    /// - When a call fails, the whole transaction rolls back; the events
    ///   before the failing one run again and commit, then the failing one
    ///   runs alone per [`SubscriberOpts::on_error`]. When its runs are used
    ///   up the subscriber stops with [`Error::HandlerFailed`], its
    ///   offset saved just before that event.
    /// - **Not covered**: effects outside the database (messages sent,
    ///   HTTP calls) and writes made outside the transaction are at least
    ///   once: a rolled-back transaction's events run again.
    ///
    /// Plain handlers ([`Subscriber::handler`]) are at least once. On SQLite a
    /// transaction holds the store's write lock while its events run: keep
    /// handler calls short, and write only through the transaction.
    ///
    /// ```no_run
    /// # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
    /// use alkstore::stream::{EventCtx, Subscriber};
    /// Subscriber::new(store, "orders", "totals")
    ///     .handler_tx(|tx, event: EventCtx<serde_json::Value>| {
    ///         Box::pin(async move {
    ///             if let Some(conn) = tx.sqlite() {
    ///                 conn.execute("UPDATE totals SET n = n + 1 WHERE id = 1", [])?;
    ///             }
    ///             let _ = event.payload();
    ///             Ok::<(), alkstore::sqlite::rusqlite::Error>(())
    ///         })
    ///     })
    ///     .run_until(alkstore::shutdown_signal())
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn handler_tx<T, F, E>(mut self, handler: F) -> Subscriber
    where
        T: DeserializeOwned + Send + 'static,
        F: for<'t> Fn(&'t mut Tx, EventCtx<T>) -> TxFuture<'t, (), E> + Send + Sync + 'static,
        E: Into<BoxError> + 'static,
    {
        self.handler = Some(EventHandler::Tx(ctx::in_tx(ctx::decoded::<T>, handler)));
        self
    }

    /// As [`Subscriber::handler_tx`], with the payload's raw bytes.
    pub fn handler_tx_raw<F, E>(mut self, handler: F) -> Subscriber
    where
        F: for<'t> Fn(&'t mut Tx, EventCtx<Vec<u8>>) -> TxFuture<'t, (), E> + Send + Sync + 'static,
        E: Into<BoxError> + 'static,
    {
        self.handler = Some(EventHandler::Tx(ctx::in_tx(ctx::raw, handler)));
        self
    }

    /// Run the handler on every event until `shutdown` resolves (the
    /// offset is then saved) or an error stops it. A store out of reach
    /// for now ([`ErrorKind::Connect`](crate::ErrorKind::Connect) or
    /// [`Busy`](crate::ErrorKind::Busy): a restart, a failover, a dropped
    /// connection) does not stop it: it waits (100 ms, doubling to 5 s)
    /// and follows again from the saved offset. A subscriber without a
    /// handler is refused with
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) before
    /// anything is read.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<SubscriberReport, Error> {
        let Some(handler) = self.handler.clone() else {
            return Err(Error::invalid(
                "subscriber",
                "no handler: give one with handler or handler_tx before run_until",
            ));
        };
        alkstore_core::validate::validate_worker(&self.worker)?;
        let registration = {
            use crate::process::{Registration, Role, PROCESS_HEARTBEAT};
            let p = Role {
                kind: "subscriber",
                id: self.worker.clone(),
                roles: vec![format!("{}/{}", self.stream.name(), self.consumer)],
                concurrency: 1,
            };
            Registration::start(
                self.stream.store.engine().clone(),
                p,
                PROCESS_HEARTBEAT,
                Arc::new(|| 0),
            )
        };
        let shutdown = registration.or_ordered(shutdown);
        let out = match handler {
            EventHandler::Plain(f) => self.follow(&Plain(&*f), shutdown).await,
            EventHandler::Tx(f) => self.follow(&InTx(&*f), shutdown).await,
        };
        registration.end().await;
        out.map_err(|stop| match stop {
            SubscribeError::Store(e) => e,
            SubscribeError::Handler {
                stream,
                offset,
                attempts,
                source,
            } => Error::HandlerFailed {
                what: format!("stream {stream:?}"),
                offset,
                attempts,
                source,
            },
        })
    }

    async fn follow<P: Pages>(
        &self,
        pages: &P,
        shutdown: impl Future<Output = ()>,
    ) -> Result<SubscriberReport, SubscribeError> {
        let mut shutdown = std::pin::pin!(shutdown.fuse());
        let mut report = SubscriberReport::default();
        // A store out of reach: 100 ms, doubling to 5 s.
        let mut backoff =
            alkstore_core::Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
        loop {
            let mut run = Run {
                stream: &self.stream,
                consumer: &self.consumer,
                opts: &self.opts,
                offset: 0,
                saved: None,
                unsaved: 0,
                reread: false,
                last_save: Instant::now(),
                report: SubscriberReport::default(),
            };
            let out = run.follow(pages, shutdown.as_mut()).await;
            // Save what was handled, whatever stopped the run.
            let saved = run.save().await;
            report.handled += run.report.handled;
            report.committed = run.report.committed.or(report.committed);
            match (out, saved) {
                // The store out of reach for now (a restart, a failover, a
                // dropped connection): wait, then follow again from the
                // saved offset, as a worker rides out its claims' errors.
                // Events handled since the last save run again.
                (Err(SubscribeError::Store(e)), _) if is_transient(&e) => {
                    tracing::warn!(error = %e, stream = %self.stream.name(), "subscriber lost the store; following again");
                    tokio::select! {
                        () = shutdown.as_mut() => return Ok(report),
                        () = tokio::time::sleep(backoff.next()) => {}
                    }
                }
                (Err(e), _) => return Err(e),
                (Ok(()), Err(e)) => return Err(e.into()),
                (Ok(()), Ok(())) => return Ok(report),
            }
        }
    }
}

/// Store errors a subscriber rides out: the store could not be reached, or
/// stayed locked (nothing was written either way).
fn is_transient(e: &Error) -> bool {
    matches!(
        e.kind(),
        alkstore_core::ErrorKind::Connect | alkstore_core::ErrorKind::Busy
    )
}

/// What a subscriber does with a page of events it read: false when
/// shutdown came first (the rest of the page stays unhandled).
trait Pages {
    fn page(
        &self,
        run: &mut Run<'_>,
        events: Vec<Event>,
        shutdown: &mut (impl futures_util::future::FusedFuture<Output = ()> + Unpin),
    ) -> impl Future<Output = Result<bool, SubscribeError>>;
}

/// A plain handler: one call per event, the offset saved now and then.
struct Plain<'f>(&'f PlainFn);

impl Pages for Plain<'_> {
    async fn page(
        &self,
        run: &mut Run<'_>,
        events: Vec<Event>,
        shutdown: &mut (impl futures_util::future::FusedFuture<Output = ()> + Unpin),
    ) -> Result<bool, SubscribeError> {
        for event in events {
            if shutdown.now_or_never().is_some() {
                return Ok(false);
            }
            if !run.handle(self.0, event, shutdown).await? {
                return Ok(false);
            }
            if run.unsaved >= run.opts.commit_every
                || run.last_save.elapsed() >= run.opts.commit_interval
            {
                run.save().await?;
            }
        }
        Ok(true)
    }
}

/// A transactional handler: transactions of up to `commit_every` events,
/// each committing the offset (see [`Subscriber::handler_tx`]).
struct InTx<'f>(&'f TxFn);

impl Pages for InTx<'_> {
    async fn page(
        &self,
        run: &mut Run<'_>,
        events: Vec<Event>,
        shutdown: &mut (impl futures_util::future::FusedFuture<Output = ()> + Unpin),
    ) -> Result<bool, SubscribeError> {
        let engine = run.stream.store().engine().clone();
        let mut retries = Retries::new(run.opts.on_error);
        let mut rest = &events[..];
        while let Some(head) = rest.first() {
            if shutdown.now_or_never().is_some() {
                return Ok(false);
            }
            let (n, wait) = match retries.next(rest, run.opts.commit_every as usize) {
                Next::Run(n, wait) => (n, wait),
                Next::GiveUp(source, attempts) => {
                    return Err(SubscribeError::Handler {
                        stream: run.stream.name().to_string(),
                        offset: head.offset,
                        attempts,
                        source,
                    })
                }
            };
            if !wait.is_zero() {
                tokio::select! {
                    biased;
                    () = &mut *shutdown => return Ok(false),
                    () = tokio::time::sleep(wait) => {}
                }
            }
            let reader = OffsetReader {
                handler: self.0,
                stream: run.stream.name(),
                consumer: run.consumer,
                expected: run.saved.unwrap_or(0),
            };
            match batch::one_tx(&reader, &engine, &rest[..n], run.opts.commit_interval).await {
                Step::Committed(done @ 1..) => {
                    let offset = rest[done - 1].offset;
                    run.committed(offset, done);
                    retries.committed(offset);
                    rest = &rest[done..];
                }
                Step::Committed(0) | Step::Stopped => return Ok(false),
                Step::Failed { index, error } => {
                    let offset = rest[index].offset;
                    tracing::warn!(
                        stream = %run.stream.name(),
                        consumer = %run.consumer,
                        offset,
                        run = retries.runs(offset) + 1,
                        error = %error,
                        "stream handler failed; its transaction was rolled back"
                    );
                    retries.failed(offset, error);
                }
                // Another subscriber of the consumer moved the offset
                // first: it handled these events, and this transaction's
                // writes were rolled back. Go on from where it is now.
                Step::Refused(Error::NotHeld { what }) => {
                    let saved = run.stream.offset(run.consumer).await?;
                    tracing::debug!(
                        stream = %run.stream.name(),
                        consumer = %run.consumer,
                        saved = ?saved,
                        %what,
                        "another subscriber moved the consumer's offset; reading on from it"
                    );
                    run.moved_by_another(saved);
                    return Ok(true);
                }
                Step::Refused(e) => return Err(e.into()),
            }
        }
        Ok(true)
    }
}

/// A subscriber's transactions: the handler, then the consumer's offset,
/// moved only from `expected` (the offset the subscriber last saw saved).
struct OffsetReader<'a> {
    handler: &'a TxFn,
    stream: &'a str,
    consumer: &'a str,
    expected: i64,
}

impl TxReader for OffsetReader<'_> {
    fn call<'t>(&'t self, tx: &'t mut Tx, event: &Event) -> TxFuture<'t, (), BoxError> {
        (self.handler)(tx, event.clone())
    }

    fn position<'t>(
        &'t self,
        tx: &'t mut Tx,
        offset: i64,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 't>> {
        let params = StreamOffsetCommitParams::new(self.stream, self.consumer, offset)
            .expecting(self.expected);
        Box::pin(async move { tx.stream_offset_commit(params).await.map(drop) })
    }
}

/// A reader's short follow-up reads (subscribers, group workers): after a
/// hint, its start, a full page or a new bucket, the newest events may
/// still be held back by an older open transaction (PostgreSQL), and no
/// other wake-up may come for them before the poll. So it looks again
/// soon, backing off from 1 to 200 ms, for up to 5 s (at most the poll),
/// then leaves it to the next hint or the poll.
#[derive(Debug)]
pub(crate) struct FollowUps {
    /// The next short wait, and since when follow-ups run; `None`: none do.
    next: Option<(Duration, Instant)>,
}

impl FollowUps {
    /// Follow-ups running from now (a reader starts with them).
    pub(crate) fn started() -> Self {
        let mut f = FollowUps { next: None };
        f.start();
        f
    }

    /// Start them again from now.
    pub(crate) fn start(&mut self) {
        self.next = Some((Duration::from_millis(1), Instant::now()));
    }

    /// How long to wait before the next read: the next short wait while
    /// follow-ups run, else `poll_interval`.
    pub(crate) fn next_wait(&mut self, poll_interval: Duration) -> Duration {
        match self.next {
            Some((next, since)) if since.elapsed() < poll_interval.min(Duration::from_secs(5)) => {
                self.next = Some(((next * 2).min(Duration::from_millis(200)), since));
                next
            }
            _ => {
                self.next = None;
                poll_interval
            }
        }
    }
}

/// One run's state.
struct Run<'a> {
    stream: &'a Stream,
    consumer: &'a str,
    opts: &'a SubscriberOpts,
    /// The last event handled.
    offset: i64,
    /// The offset last saved.
    saved: Option<i64>,
    /// Handled events since then.
    unsaved: u32,
    /// Read again at once, from `offset`, whatever the last read found.
    reread: bool,
    last_save: Instant,
    report: SubscriberReport,
}

impl Run<'_> {
    async fn follow<P: Pages>(
        &mut self,
        pages: &P,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), SubscribeError> {
        let engine = self.stream.store().engine();
        let name = self.stream.name().to_string();
        // Subscribe before the first read, so no commit falls in between.
        let mut hints = engine.wake_subscribe();
        self.saved = self.stream.offset(self.consumer).await?;
        self.offset = match (self.saved, self.opts.start) {
            (Some(o), _) => o,
            (None, StartAt::Beginning) => 0,
            (None, StartAt::Head) => {
                // Save the starting point at once: a run that stops before
                // handling anything must resume here, not at a later head.
                let head = self.stream.stats().await?.head.unwrap_or(0);
                if head > 0 {
                    self.offset = head;
                    self.unsaved = 1;
                    self.save().await?;
                }
                head
            }
        };
        let mut shutdown = std::pin::pin!(shutdown.fuse());
        // Follow-up reads after the first read, any full page and a hint.
        let mut follow_ups = FollowUps::started();
        loop {
            let events = engine
                .stream_read(StreamReadParams::new(
                    name.clone(),
                    self.offset,
                    self.opts.batch,
                ))
                .await?;
            let got = events.len();
            let caught_up = got < self.opts.batch as usize;
            if !pages.page(self, events, &mut shutdown).await? {
                return Ok(());
            }
            let reread = std::mem::take(&mut self.reread);
            if !caught_up || reread {
                follow_ups.start();
                continue;
            }
            self.save().await?;
            // A hint's event may still be held back whether or not this read
            // found others (see `FollowUps`).
            let wait = follow_ups.next_wait(self.opts.poll_interval);
            // Wait for a hint about this stream, the wait above, or shutdown.
            let poll = tokio::time::sleep(wait);
            tokio::pin!(poll);
            loop {
                tokio::select! {
                    biased;
                    () = &mut shutdown => return Ok(()),
                    hint = hints.recv() => match hint {
                        // A new commit: its event may be held back as
                        // well, so the short waits start again (carrying
                        // on with an earlier hint's, backed off to 200 ms,
                        // made a held-back event wait that long).
                        Ok(w) if w.concerns_stream(&name) => {
                            follow_ups.start();
                            break;
                        }
                        Ok(_) => continue,
                        Err(RecvError::Lagged(_)) => break,
                        Err(RecvError::Closed) => {
                            hints = engine.wake_subscribe();
                            break;
                        }
                    },
                    () = &mut poll => break,
                }
            }
        }
    }

    /// Run the handler on `event` per the error policy; false when shutdown
    /// came during a retry wait (the event stays unhandled).
    async fn handle(
        &mut self,
        handler: &PlainFn,
        event: Event,
        shutdown: &mut (impl futures_util::future::FusedFuture<Output = ()> + Unpin),
    ) -> Result<bool, SubscribeError> {
        // Handler retries: the policy's wait, doubling to 60 s.
        let (attempts, mut backoff) = match self.opts.on_error {
            OnError::Stop => (
                1,
                alkstore_core::Backoff::new(Duration::ZERO, Duration::ZERO),
            ),
            OnError::Retry { attempts, backoff } => (
                attempts.max(1),
                alkstore_core::Backoff::new(backoff, Duration::from_secs(60).max(backoff)),
            ),
        };
        let offset = event.offset;
        let mut run = 0;
        loop {
            run += 1;
            match handler(event.clone()).await {
                Ok(()) => {
                    self.offset = offset;
                    self.unsaved += 1;
                    self.report.handled += 1;
                    return Ok(true);
                }
                Err(e) => {
                    tracing::warn!(
                        stream = %self.stream.name(),
                        consumer = %self.consumer,
                        offset,
                        run,
                        error = %e,
                        "stream handler failed"
                    );
                    if run >= attempts {
                        return Err(SubscribeError::Handler {
                            stream: self.stream.name().to_string(),
                            offset,
                            attempts: run,
                            source: e,
                        });
                    }
                }
            }
            tokio::select! {
                biased;
                () = &mut *shutdown => return Ok(false),
                () = tokio::time::sleep(backoff.next()) => {}
            }
        }
    }

    /// Events up to `offset`, `n` of them, committed in a transaction with
    /// the offset.
    fn committed(&mut self, offset: i64, n: usize) {
        self.offset = offset;
        self.saved = Some(offset);
        self.report.committed = Some(offset);
        self.report.handled += n as u64;
        self.unsaved = 0;
        self.last_save = Instant::now();
    }

    /// Another subscriber of the consumer saved `saved` (`None`: nothing)
    /// before this one could: go on from there, reading at once.
    fn moved_by_another(&mut self, saved: Option<i64>) {
        self.offset = saved.unwrap_or(0);
        self.saved = saved;
        self.unsaved = 0;
        self.last_save = Instant::now();
        self.reread = true;
    }

    /// Save the offset if anything was handled since the last save.
    async fn save(&mut self) -> Result<(), Error> {
        if self.saved.is_some_and(|s| s >= self.offset)
            || (self.saved.is_none() && self.unsaved == 0)
        {
            self.unsaved = 0;
            self.last_save = Instant::now();
            return Ok(());
        }
        let saved = self
            .stream
            .store()
            .engine()
            .stream_offset_commit(StreamOffsetCommitParams::new(
                self.stream.name(),
                self.consumer,
                self.offset,
            ))
            .await?;
        self.saved = Some(saved);
        self.report.committed = Some(saved);
        self.unsaved = 0;
        self.last_save = Instant::now();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>(_: &T) {}

    /// Both runs can be spawned onto a multi-threaded runtime.
    #[tokio::test]
    async fn runs_are_send() {
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = crate::Store::open(&url).await.expect("open");
        let sub = Subscriber::new(store, "s", "c");
        let plain = sub
            .clone()
            .handler(|_e: EventCtx<u32>| async { Ok::<(), std::io::Error>(()) })
            .run_until(async {});
        assert_send(&plain);
        let in_tx = sub
            .handler_tx_raw(|_tx, _e: EventCtx<Vec<u8>>| {
                Box::pin(async { Ok::<(), std::io::Error>(()) })
            })
            .run_until(async {});
        assert_send(&in_tx);
    }
}
