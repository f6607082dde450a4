//! The coordinator of a group worker: every heartbeat it renews the
//! worker's leases, stops the handlers of buckets it lost, claims a bucket
//! while below its fair share and releases its surplus when workers join;
//! it starts and stops the per-bucket tasks and tallies the report.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::group::{BucketLease, GroupClaimParams, GroupReleaseParams, GroupRenewParams};
use alkstore_core::{Error, ErrorKind, GroupEngine, Result};
use futures_util::FutureExt;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::bucket::{handle_bucket, HandlerEnd};
use super::shared::{lock, FetchSlot, GroupReport, Shared};

/// An owned bucket's handler task.
pub(super) struct Owned {
    epoch: i64,
    stop: watch::Sender<bool>,
    /// Until when this lease is surely valid, by this host's monotonic
    /// clock: the start of the claim or of the last renewal that returned
    /// it (same epoch) plus the TTL; the database computed its expiry later
    /// than that start. Its handler starts nothing past it, so a worker
    /// whose renewals fail, or that was frozen past its TTL, runs no event
    /// that the bucket's next owner may run too. Only a renewal that still
    /// returns the lease extends it: a lease lost meanwhile stays lapsed.
    valid_until: watch::Sender<Instant>,
    task: JoinHandle<HandlerEnd>,
}

pub(super) struct Coordinator {
    pub(super) shared: Arc<Shared>,
    pub(super) buckets: BTreeMap<u32, Owned>,
    pub(super) report: GroupReport,
    /// Until when every lease of the last renewal is surely valid (see
    /// [`Owned::valid_until`]).
    pub(super) valid_until: Instant,
    /// Live workers at the last pass.
    pub(super) last_live: u32,
    /// Until when passes come quickly: for a heartbeat after this worker
    /// starts (peers often start together) and after the number of live
    /// workers changes, so shares settle in milliseconds, not heartbeats.
    pub(super) settle_until: Instant,
}

impl Coordinator {
    pub(super) async fn run(&mut self, shutdown: impl Future<Output = ()>) -> Result<()> {
        let mut shutdown = std::pin::pin!(shutdown.fuse());
        let opts = self.shared.opts.clone();
        loop {
            let (ramping, next_lapse) = self.pass().await?;
            // While below its share and buckets are free, claim the next one
            // soon (one per pass, re-counting live workers in between, so a
            // worker starting alone does not grab everything first).
            let wait = if ramping {
                (opts.heartbeat / 20).min(Duration::from_millis(2))
            } else if Instant::now() < self.settle_until {
                (opts.heartbeat / 10).min(Duration::from_millis(50))
            } else {
                opts.heartbeat
            };
            // Look again as soon as a peer's lease lapses (a dead peer's
            // buckets are then claimable), if that comes first.
            let wait = next_lapse.map_or(wait, |lapse| wait.min(lapse));
            tokio::select! {
                biased;
                () = &mut shutdown => return Ok(()),
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One heartbeat pass: whether it claimed a bucket and is still below
    /// its fair share, and how long until a peer's lease lapses.
    async fn pass(&mut self) -> Result<(bool, Option<Duration>)> {
        let s = self.shared.clone();
        self.reap().await;
        let started = Instant::now();
        let renewal = match s
            .engine
            .group_renew(GroupRenewParams::new(
                s.group.clone(),
                &*s.worker,
                s.opts.ttl,
            ))
            .await
        {
            Ok(r) => r,
            Err(e) if is_transient(&e) => {
                tracing::warn!(group = %s.group, error = %e, "group renewal failed; retrying next heartbeat");
                if self.valid_until <= Instant::now() {
                    // The leases may have lapsed: stop handling at once.
                    self.stop_all().await;
                }
                return Ok((false, None));
            }
            Err(e) => return Err(e),
        };
        self.valid_until = started + s.opts.ttl;
        // A millisecond past the lapse, so the claim finds it lapsed.
        let next_lapse = renewal
            .next_lapse_in_ms
            .and_then(|ms| u64::try_from(ms).ok())
            .map(|ms| Duration::from_millis(ms + 1));
        let held: BTreeMap<u32, BucketLease> =
            renewal.held.into_iter().map(|l| (l.bucket, l)).collect();
        // Lost buckets first: stop their handlers before anything else.
        let lost: Vec<u32> = self
            .buckets
            .iter()
            .filter(|(b, o)| held.get(b).is_none_or(|l| l.epoch != o.epoch))
            .map(|(b, _)| *b)
            .collect();
        for bucket in lost {
            tracing::info!(group = %s.group, bucket, "bucket lost to another worker");
            self.report.lost += 1;
            self.stop(bucket).await;
        }
        // A handler that stopped at its lease's lapse while the renewal ran
        // is restarted now, not a heartbeat later.
        self.reap().await;
        for lease in held.values() {
            match self.buckets.get(&lease.bucket) {
                // Still held under the epoch its handler runs: extended.
                Some(owned) => {
                    owned.valid_until.send_replace(self.valid_until);
                }
                // Held without a handler (its handler ended on a store
                // error, or stopped at its lease's lapse): start one.
                None => self.start(lease.clone(), self.valid_until),
            }
        }
        let live = renewal.live_workers.max(1);
        if live != self.last_live {
            self.last_live = live;
            self.settle_until = Instant::now() + s.opts.heartbeat;
        }
        let mine: Vec<u32> = held.keys().copied().collect();
        let step = alkstore_core::group::rebalance(renewal.buckets, live, &mine);
        if let alkstore_core::group::Rebalance::Take(want) = step {
            // One bucket per pass (the pass repeats at once while more are
            // wanted): a lone starter does not take every bucket only to
            // give most back as its peers start.
            let claimed = Instant::now();
            let taken = s
                .engine
                .group_claim(GroupClaimParams::new(
                    s.group.clone(),
                    &*s.worker,
                    s.opts.ttl,
                    1,
                ))
                .await;
            match taken {
                Ok(leases) => {
                    let got = !leases.is_empty();
                    for lease in leases {
                        tracing::info!(group = %s.group, bucket = lease.bucket, epoch = lease.epoch, "bucket claimed");
                        self.report.claimed += 1;
                        self.start(lease, claimed + s.opts.ttl);
                    }
                    return Ok((got && want > 1, next_lapse));
                }
                Err(e) if is_transient(&e) => {
                    tracing::warn!(group = %s.group, error = %e, "group claim failed");
                }
                Err(e) => return Err(e),
            }
        } else if let alkstore_core::group::Rebalance::Give(surplus) = step {
            // Make room for workers that joined: give back the highest
            // buckets beyond the share, each checkpointed first.
            for bucket in surplus {
                self.stop(bucket).await;
                s.engine
                    .group_release(GroupReleaseParams::new(
                        s.group.clone(),
                        &*s.worker,
                        vec![bucket],
                    ))
                    .await?;
                tracing::info!(group = %s.group, bucket, "bucket released to make room");
                self.report.released += 1;
            }
        }
        Ok((false, next_lapse))
    }

    /// Start handling a newly held bucket, surely valid until
    /// `valid_until`: its handler task, and a slot the fetcher feeds from
    /// the bucket's checkpoint on.
    fn start(&mut self, lease: BucketLease, valid_until: Instant) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let (valid_tx, valid_rx) = watch::channel(valid_until);
        let (queue, fed) = mpsc::channel(self.shared.opts.batch.max(1) as usize);
        lock(&self.shared.fetch).insert(
            lease.bucket,
            FetchSlot {
                after: lease.checkpoint,
                queue,
            },
        );
        let bucket = lease.bucket;
        let epoch = lease.epoch;
        let task = tokio::spawn(handle_bucket(
            self.shared.clone(),
            lease,
            fed,
            stop_rx,
            valid_rx,
        ));
        self.buckets.insert(
            bucket,
            Owned {
                epoch,
                stop: stop_tx,
                valid_until: valid_tx,
                task,
            },
        );
        self.shared.added.notify_one();
    }

    /// Stop handling one bucket and wait for its handler (it checkpoints).
    async fn stop(&mut self, bucket: u32) {
        lock(&self.shared.fetch).remove(&bucket);
        if let Some(owned) = self.buckets.remove(&bucket) {
            owned.stop.send_replace(true);
            self.finish(owned.task.await);
        }
    }

    pub(super) async fn stop_all(&mut self) {
        lock(&self.shared.fetch).clear();
        for owned in self.buckets.values() {
            owned.stop.send_replace(true);
        }
        let buckets = std::mem::take(&mut self.buckets);
        for (_, owned) in buckets {
            self.finish(owned.task.await);
        }
    }

    /// Collect handlers that ended by themselves (fenced, or a store error).
    async fn reap(&mut self) {
        let done: Vec<u32> = self
            .buckets
            .iter()
            .filter(|(_, o)| o.task.is_finished())
            .map(|(b, _)| *b)
            .collect();
        for bucket in done {
            lock(&self.shared.fetch).remove(&bucket);
            if let Some(owned) = self.buckets.remove(&bucket) {
                self.finish(owned.task.await);
            }
        }
    }

    fn finish(&mut self, end: Result<HandlerEnd, tokio::task::JoinError>) {
        match end {
            Ok(end) => {
                self.report.handled += end.handled;
                self.report.dead_lettered += end.dead_lettered;
                if end.lost {
                    self.report.lost += 1;
                }
            }
            Err(e) => tracing::error!(error = %e, "a group bucket handler panicked"),
        }
    }
}

/// Errors a worker rides out (the next heartbeat tries again) rather than
/// stopping on.
fn is_transient(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Connect | ErrorKind::Database | ErrorKind::Busy | ErrorKind::Conflict
    )
}
