//! One owned bucket's task: it runs the handler on the events the fetcher
//! hands it, in offset order (plain, or in transactions that commit the
//! checkpoint), retries and dead-letters failing events, reruns requeued
//! dead letters, and checkpoints under the lease's epoch; it starts nothing
//! once the lease may have lapsed.

use alkstore_core::Backoff;
use alkstore_core::Writes as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::group::{
    BucketLease, GroupCheckpointParams, GroupDead, GroupDeadAddParams, GroupDeadResolveParams,
};
use alkstore_core::stream::Event;
use alkstore_core::{BoxError, Error, ErrorKind, GroupEngine};
use tokio::sync::{mpsc, watch};

use super::fetch::give_back;
use super::shared::{Delivery, Fed, Handler, Shared, TxHandler};
use crate::stream::batch::{self, Next, Retries, Step, TxReader};
use crate::stream::OnError;
use crate::{Tx, TxFuture};

/// How a bucket handler ended.
#[derive(Debug, Default)]
pub(super) struct HandlerEnd {
    pub(super) handled: u64,
    pub(super) dead_lettered: u64,
    /// It found its lease gone (fenced).
    pub(super) lost: bool,
}

/// One owned bucket's handler: runs the handler on the bucket's events in
/// offset order and checkpoints under the lease's epoch; until told to
/// stop, the lease is found gone, or the lease may have lapsed (its
/// `valid_until` passed).
pub(super) async fn handle_bucket(
    s: Arc<Shared>,
    lease: BucketLease,
    mut fed: mpsc::Receiver<Fed>,
    mut stop: watch::Receiver<bool>,
    valid_until: watch::Receiver<Instant>,
) -> HandlerEnd {
    let mut h = BucketHandler {
        s: &s,
        bucket: lease.bucket,
        epoch: lease.epoch,
        offset: lease.checkpoint,
        saved: lease.checkpoint,
        unsaved: 0,
        last_save: Instant::now(),
        valid_until,
        untaken: Vec::new(),
        deferred: None,
        end: HandlerEnd::default(),
    };
    h.follow(&mut fed, &mut stop).await;
    // Whatever the fetcher queued is not run here: the bucket's next
    // holder (maybe this worker again) reads its events from the
    // checkpoint, and takes its requeued dead letters once marked again.
    fed.close();
    let mut untaken = std::mem::take(&mut h.untaken);
    while let Ok(item) = fed.try_recv() {
        if let Fed::Redeliver(dead) = item {
            untaken.push(dead.offset);
        }
    }
    give_back(&s, untaken).await;
    if !h.end.lost {
        // Hand the bucket over where it stands (a fenced save changes
        // nothing, and is only logged).
        let _ = h.save().await;
    }
    h.end
}

/// How one handler run (with its retries) ended.
enum Ran {
    Ok,
    /// The last error and how many runs.
    Failed(String, u32),
    Stopped,
    /// A transactional run whose transaction did not commit: the lease was
    /// lost (`NotHeld`) or the store failed.
    Refused(Error),
}

/// A bucket's transactions: the handler, then the checkpoint under the
/// lease's epoch, then a last look at the lease's `valid_until`.
struct BucketTx<'a> {
    s: &'a Shared,
    handler: &'a TxHandler,
    bucket: u32,
    epoch: i64,
    valid_until: watch::Receiver<Instant>,
    /// Checkpoint here rather than at the transaction's last event (a
    /// requeued dead letter's run: the checkpoint stays, fenced).
    at: Option<i64>,
}

impl BucketTx<'_> {
    fn valid(&self) -> bool {
        *self.valid_until.borrow() > Instant::now()
    }
}

impl TxReader for BucketTx<'_> {
    fn call<'t>(&'t self, tx: &'t mut Tx, event: &Event) -> TxFuture<'t, (), BoxError> {
        (self.handler)(
            tx,
            Delivery {
                event: event.clone(),
                bucket: self.bucket,
                epoch: self.epoch,
                worker: self.s.worker.clone(),
            },
        )
    }

    fn position<'t>(
        &'t self,
        tx: &'t mut Tx,
        offset: i64,
    ) -> Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 't>> {
        let s = self.s;
        let params = GroupCheckpointParams::new(
            s.group.clone(),
            self.bucket,
            &*s.worker,
            self.epoch,
            self.at.unwrap_or(offset),
        );
        Box::pin(async move {
            // Fenced by the epoch, and from here on the lease cannot be
            // taken over until the transaction ends; then the lease must
            // still be surely valid by this host's clock (a worker frozen
            // past its TTL commits nothing).
            tx.group_checkpoint(params).await?;
            if self.valid() {
                Ok(())
            } else {
                Err(Error::NotHeld {
                    what: format!(
                        "lease on bucket {} of group {} (past its TTL by this host's clock)",
                        self.bucket, s.group
                    ),
                })
            }
        })
    }

    fn may_start(&self) -> bool {
        self.valid()
    }
}

struct BucketHandler<'a> {
    s: &'a Shared,
    bucket: u32,
    epoch: i64,
    /// The last event handled (or dead-lettered).
    offset: i64,
    saved: i64,
    unsaved: u32,
    last_save: Instant,
    /// The lease's `valid_until` (see `Owned::valid_until` in the
    /// coordinator).
    valid_until: watch::Receiver<Instant>,
    /// Requeued dead letters taken but not run (stopped first).
    untaken: Vec<i64>,
    /// An item taken off the queue while gathering a transaction's batch,
    /// to handle next.
    deferred: Option<Fed>,
    end: HandlerEnd,
}

impl BucketHandler<'_> {
    /// Told to stop, or the lease may have lapsed: start nothing more.
    fn stopping(&self, stop: &watch::Receiver<bool>) -> bool {
        *stop.borrow() || *self.valid_until.borrow() <= Instant::now()
    }

    async fn follow(&mut self, fed: &mut mpsc::Receiver<Fed>, stop: &mut watch::Receiver<bool>) {
        let s = self.s;
        loop {
            if self.stopping(stop) {
                return;
            }
            // Checkpoint at least every commit_interval while busy.
            let due = s
                .opts
                .commit_interval
                .saturating_sub(self.last_save.elapsed());
            let next = if let Some(item) = self.deferred.take() {
                Some(item)
            } else {
                tokio::select! {
                biased;
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return;
                    }
                    continue;
                }
                next = fed.recv() => next,
                () = tokio::time::sleep(due), if self.offset > self.saved => {
                    if !self.save().await {
                        return;
                    }
                    continue;
                }
                }
            };
            match next {
                None => return,
                Some(Fed::Redeliver(dead)) => {
                    if !self.redeliver(dead, stop).await {
                        return;
                    }
                }
                Some(Fed::CaughtUp) => {
                    if !self.save().await {
                        return;
                    }
                }
                Some(Fed::Event(event)) => {
                    if event.offset <= self.offset {
                        continue;
                    }
                    if let Handler::Tx(handler) = &s.handler {
                        let events = self.gather(event, fed);
                        if !self.handle_tx(handler.as_ref(), events, stop).await {
                            return;
                        }
                        continue;
                    }
                    if !self.handle(event, stop).await {
                        return;
                    }
                    if (self.unsaved >= s.opts.commit_every
                        || self.last_save.elapsed() >= s.opts.commit_interval)
                        && !self.save().await
                    {
                        return;
                    }
                }
            }
        }
    }

    /// A transaction's events: `first`, and the bucket's events already
    /// queued after it, up to `commit_every`; anything else taken off the
    /// queue is handled next.
    fn gather(&mut self, first: Event, fed: &mut mpsc::Receiver<Fed>) -> Vec<Event> {
        let most = self.s.opts.commit_every as usize;
        let mut events = vec![first];
        while events.len() < most {
            match fed.try_recv() {
                Ok(Fed::Event(e)) => {
                    if events.last().is_some_and(|last| e.offset > last.offset) {
                        events.push(e);
                    }
                }
                Ok(other) => {
                    self.deferred = Some(other);
                    break;
                }
                Err(_) => break,
            }
        }
        events
    }

    /// The bucket's transactions for `handler`, checkpointing at their
    /// last event (`at`: there instead).
    fn bucket_tx<'a>(&self, handler: &'a TxHandler, at: Option<i64>) -> BucketTx<'a>
    where
        Self: 'a,
    {
        BucketTx {
            s: self.s,
            handler,
            bucket: self.bucket,
            epoch: self.epoch,
            valid_until: self.valid_until.clone(),
            at,
        }
    }

    /// Run `events` in transactions that commit the checkpoint with the
    /// handler's writes (see
    /// [`GroupRunner::handler_tx`](super::GroupRunner::handler_tx)); an event whose runs
    /// are used up is dead-lettered. False when stopping, or when a
    /// transaction was refused (the lease is gone) or failed.
    async fn handle_tx(
        &mut self,
        handler: &TxHandler,
        events: Vec<Event>,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let s = self.s;
        let reader = self.bucket_tx(handler, None);
        let mut retries = Retries::new(s.opts.on_error);
        let mut rest = &events[..];
        while let Some(head) = rest.first() {
            if self.stopping(stop) {
                return false;
            }
            let (n, wait) = match retries.next(rest, s.opts.commit_every as usize) {
                Next::Run(n, wait) => (n, wait),
                Next::GiveUp(error, runs) => {
                    if !self
                        .dead_letter(head.clone(), error.to_string(), runs)
                        .await
                    {
                        return false;
                    }
                    rest = &rest[1..];
                    continue;
                }
            };
            if !wait.is_zero() && !self.pause(wait, stop).await {
                return false;
            }
            match batch::one_tx(&reader, &s.engine, &rest[..n], s.opts.commit_interval).await {
                Step::Committed(done @ 1..) => {
                    let offset = rest[done - 1].offset;
                    self.offset = offset;
                    self.saved = offset;
                    self.unsaved = 0;
                    self.last_save = Instant::now();
                    self.end.handled += done as u64;
                    retries.committed(offset);
                    rest = &rest[done..];
                }
                Step::Committed(0) | Step::Stopped => return false,
                Step::Failed { index, error } => {
                    let offset = rest[index].offset;
                    tracing::warn!(group = %s.group, bucket = self.bucket, offset, run = retries.runs(offset) + 1, error = %error, "group handler failed; its transaction was rolled back");
                    retries.failed(offset, error);
                }
                Step::Refused(e) => {
                    self.end.lost = e.kind() == ErrorKind::NotHeld;
                    tracing::warn!(group = %s.group, bucket = self.bucket, error = %e, "the bucket's transaction did not commit: its writes were rolled back");
                    return false;
                }
            }
        }
        true
    }

    /// Wait `wait` before running a failing event again; false when told
    /// to stop meanwhile.
    async fn pause(&self, wait: Duration, stop: &mut watch::Receiver<bool>) -> bool {
        tokio::select! {
            biased;
            changed = stop.changed() => !(changed.is_err() || *stop.borrow()),
            () = tokio::time::sleep(wait) => true,
        }
    }

    /// Run a requeued dead letter's `event` in a transaction of its own,
    /// per the error policy, its checkpoint kept where it is (fenced).
    async fn redeliver_in_tx(
        &self,
        handler: &TxHandler,
        event: &Event,
        stop: &mut watch::Receiver<bool>,
    ) -> Ran {
        let s = self.s;
        let reader = self.bucket_tx(handler, Some(self.saved));
        let mut retries = Retries::new(s.opts.on_error);
        let events = std::slice::from_ref(event);
        loop {
            if self.stopping(stop) {
                return Ran::Stopped;
            }
            let wait = match retries.next(events, 1) {
                Next::Run(_, wait) => wait,
                Next::GiveUp(error, runs) => return Ran::Failed(error.to_string(), runs),
            };
            if !wait.is_zero() && !self.pause(wait, stop).await {
                return Ran::Stopped;
            }
            match batch::one_tx(&reader, &s.engine, events, s.opts.commit_interval).await {
                Step::Committed(_) => return Ran::Ok,
                Step::Stopped => return Ran::Stopped,
                Step::Failed { error, .. } => {
                    tracing::warn!(group = %s.group, bucket = self.bucket, offset = event.offset, run = retries.runs(event.offset) + 1, error = %error, "group handler failed on a requeued dead letter");
                    retries.failed(event.offset, error);
                }
                Step::Refused(e) => return Ran::Refused(e),
            }
        }
    }

    /// Run a requeued dead letter again: deleted when it succeeds, dead
    /// again (with the new error) when it fails. The bucket's offset does
    /// not move. False when stopping or the lease is gone.
    async fn redeliver(&mut self, dead: GroupDead, stop: &mut watch::Receiver<bool>) -> bool {
        let s = self.s;
        let event = dead.event();
        let offset = event.offset;
        let outcome = match self.run_handler(&event, stop).await {
            Ran::Stopped => {
                // Taken (its mark cleared) but not run: marked again when
                // the bucket's task ends.
                self.untaken.push(offset);
                return false;
            }
            Ran::Refused(e) => {
                // Run, but its transaction rolled back: as not run.
                tracing::warn!(group = %s.group, bucket = self.bucket, offset, error = %e, "a requeued dead letter's transaction did not commit");
                self.untaken.push(offset);
                self.end.lost = e.kind() == ErrorKind::NotHeld;
                return false;
            }
            Ran::Ok => {
                s.engine
                    .group_dead_resolve(GroupDeadResolveParams::new(
                        s.group.clone(),
                        self.bucket,
                        s.worker.to_string(),
                        self.epoch,
                        offset,
                    ))
                    .await
            }
            Ran::Failed(error, attempts) => {
                s.engine
                    .group_dead_add(GroupDeadAddParams::new(
                        s.group.clone(),
                        self.bucket,
                        s.worker.to_string(),
                        self.epoch,
                        event,
                        error,
                        attempts,
                    ))
                    .await
            }
        };
        match outcome {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(group = %s.group, bucket = self.bucket, offset, error = %e, "requeued dead letter not settled");
                self.end.lost = e.kind() == ErrorKind::NotHeld;
                !self.end.lost
            }
        }
    }

    /// Run the handler on `event` per the error policy.
    async fn run_handler(&self, event: &Event, stop: &mut watch::Receiver<bool>) -> Ran {
        let s = self.s;
        let plain = match &s.handler {
            Handler::Plain(plain) => plain,
            Handler::Tx(handler) => {
                return self.redeliver_in_tx(handler.as_ref(), event, stop).await
            }
        };
        // Handler retries: the policy's wait, doubling to 60 s.
        let (attempts, mut backoff) = match s.opts.on_error {
            OnError::Stop => (1, Backoff::new(Duration::ZERO, Duration::ZERO)),
            OnError::Retry { attempts, backoff } => (
                attempts.max(1),
                Backoff::new(backoff, Duration::from_secs(60).max(backoff)),
            ),
        };
        let mut run = 0;
        loop {
            // Checked right before every run (a first run, a retry or a
            // requeued dead letter): the task may have waited, or its
            // process been frozen, past the lease's lapse since it last
            // looked, and the bucket's next holder may run this event now.
            if self.stopping(stop) {
                return Ran::Stopped;
            }
            run += 1;
            let delivery = Delivery {
                event: event.clone(),
                bucket: self.bucket,
                epoch: self.epoch,
                worker: s.worker.clone(),
            };
            let error: BoxError = match plain(delivery).await {
                Ok(()) => return Ran::Ok,
                Err(e) => e,
            };
            tracing::warn!(group = %s.group, bucket = self.bucket, offset = event.offset, run, error = %error, "group handler failed");
            if run >= attempts {
                // A run that failed as the bucket was being given up (a
                // shutdown that stopped it, a lapsing lease) is not the
                // event's fault: the next holder runs it again instead of
                // it going to the dead letters.
                if self.stopping(stop) {
                    return Ran::Stopped;
                }
                return Ran::Failed(error.to_string(), run);
            }
            tokio::select! {
                biased;
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return Ran::Stopped;
                    }
                }
                () = tokio::time::sleep(backoff.next()) => {}
            }
        }
    }

    /// Run the handler on `event` per the error policy; when the retries
    /// run out, record a dead letter and go on. False when stopping.
    async fn handle(&mut self, event: Event, stop: &mut watch::Receiver<bool>) -> bool {
        let offset = event.offset;
        match self.run_handler(&event, stop).await {
            Ran::Stopped | Ran::Refused(_) => false,
            Ran::Ok => {
                self.offset = offset;
                self.unsaved += 1;
                self.end.handled += 1;
                true
            }
            Ran::Failed(error, attempts) => self.dead_letter(event, error, attempts).await,
        }
    }

    async fn dead_letter(&mut self, event: Event, error: String, attempts: u32) -> bool {
        let s = self.s;
        let offset = event.offset;
        let added = s
            .engine
            .group_dead_add(GroupDeadAddParams::new(
                s.group.clone(),
                self.bucket,
                s.worker.to_string(),
                self.epoch,
                event,
                error,
                attempts,
            ))
            .await;
        match added {
            Ok(()) => {
                tracing::error!(group = %s.group, bucket = self.bucket, offset, attempts, "event dead-lettered; the bucket goes on");
                self.offset = offset;
                self.unsaved += 1;
                self.end.dead_lettered += 1;
                true
            }
            Err(e) => {
                // Fenced (the bucket moved on) or the store failed: stop
                // here, unsaved, so this event runs again under the next
                // lease rather than being skipped.
                tracing::warn!(group = %s.group, bucket = self.bucket, error = %e, "dead letter not recorded");
                self.end.lost = e.kind() == ErrorKind::NotHeld;
                false
            }
        }
    }

    /// Checkpoint the last handled offset; false when the lease is gone
    /// (or the store failed, so the handler ends and the coordinator starts
    /// another while the lease is held).
    async fn save(&mut self) -> bool {
        self.last_save = Instant::now();
        if self.offset <= self.saved {
            self.unsaved = 0;
            return true;
        }
        let s = self.s;
        let saved = s
            .engine
            .group_checkpoint(GroupCheckpointParams::new(
                s.group.clone(),
                self.bucket,
                &*s.worker,
                self.epoch,
                self.offset,
            ))
            .await;
        match saved {
            Ok(at) => {
                self.saved = at;
                self.unsaved = 0;
                true
            }
            Err(e) => {
                self.end.lost = e.kind() == ErrorKind::NotHeld;
                tracing::warn!(group = %s.group, bucket = self.bucket, error = %e, "checkpoint refused");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests;
