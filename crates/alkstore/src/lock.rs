//! Locks through the facade: a [`Lock`] handle names a lock, and a
//! [`LockGuard`] holds it — renewing in the background, reporting loss,
//! and releasing when dropped.
//!
//! Every acquisition carries a fencing token that strictly grows per lock
//! name. Pass it to whatever the lock protects and have that refuse a
//! token lower than the highest it has seen: a holder that stalled past its
//! TTL while another took over can then do no harm.
//!
//! ```no_run
//! # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
//! use std::time::Duration;
//! let lock = store.lock("nightly-report").ttl(Duration::from_secs(30));
//! if let Some(mut guard) = lock.try_acquire().await? {
//!     tokio::select! {
//!         () = guard.lost() => eprintln!("lost the lock; stopping"),
//!         () = async { /* the work, stamped with guard.token() */ } => {}
//!     }
//!     guard.release().await?;
//! }
//! # Ok(()) }
//! ```

use crate::runs::Runs;
use crate::Store;
use alkstore_core::Writes as _;
use std::time::Duration;

pub use alkstore_core::lock::{
    LockAcquireParams, LockGrant, LockInfo, LockReleaseParams, LockReleased, LockRenewParams,
    LockRenewed, MAX_LOCK_TTL,
};
use alkstore_core::{LockEngine, Result};
use tokio::sync::{oneshot, watch};

use crate::AnyEngine;

/// The default lock TTL (a guard renews every third of it).
pub const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(30);

/// A named lock of a store: acquire it to get a [`LockGuard`].
#[derive(Debug, Clone)]
pub struct Lock<R: Runs = Store> {
    at: R,
    name: String,
    owner: String,
    ttl: Duration,
}

/// `fence` runs where the handle was made (see [`Runs`]); inside a
/// transaction (`tx.lock(name).fence(token)`) it keeps the lock from
/// passing on until the transaction ends.
impl<R: Runs> Lock<R> {
    pub(crate) fn new(at: R, name: String) -> Lock<R> {
        Lock {
            at,
            name,
            owner: crate::worker::default_worker_id(),
            ttl: DEFAULT_LOCK_TTL,
        }
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Check that the lock is still held under `token` (the guard's
    /// [`LockGuard::token`]): [`Error::NotHeld`](crate::Error::NotHeld)
    /// when it lapsed or passed on. Inside a transaction it stays so until
    /// the transaction ends, so the holder's writes never land after the
    /// lock passed on (a failed fence poisons the transaction).
    pub async fn fence(&self, token: i64) -> Result<()> {
        self.at
            .place()
            .lock_fence(alkstore_core::lock::LockFenceParams::new(
                self.name.clone(),
                token,
            ))
            .await
    }
}

impl Lock {
    /// How long a hold lasts without renewal (default 30 s; 1 ms..=1 day).
    /// The guard renews every third of it, so a holder that dies frees the
    /// lock within one TTL.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Lock {
        self.ttl = ttl;
        self
    }

    /// The holder's name (default: host, process id and a per-handle
    /// suffix). Two handles with the same owner are still distinct holders:
    /// each acquisition has its own token.
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> Lock {
        self.owner = owner.into();
        self
    }

    /// Take the lock for one TTL if it is free or lapsed, without a guard:
    /// the grant's token is the caller's to renew and release
    /// ([`Lock::renew`], [`Lock::release`]) — a holder in another process
    /// or language (the HTTP API). `None` while it is held, this owner's
    /// hold included (locks are not re-entrant).
    pub async fn grant(&self) -> Result<Option<LockGrant>> {
        self.at
            .engine()
            .lock_acquire(LockAcquireParams::new(&self.name, &self.owner, self.ttl))
            .await
    }

    /// Extend a [`Lock::grant`] held under `token` by the TTL.
    pub async fn renew(&self, token: i64) -> Result<LockRenewed> {
        self.at
            .engine()
            .lock_renew(LockRenewParams::new(
                &*self.name,
                &*self.owner,
                token,
                self.ttl,
            ))
            .await
    }

    /// Free a [`Lock::grant`] if it is still held under `token`.
    pub async fn release(&self, token: i64) -> Result<LockReleased> {
        self.at
            .engine()
            .lock_release(LockReleaseParams::new(&*self.name, &*self.owner, token))
            .await
    }

    /// Take the lock if it is free; `None` while someone else (or this
    /// holder) has it.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        // The hold is sure for a TTL from before the request was sent.
        let sent = tokio::time::Instant::now();
        let grant = self
            .at
            .engine()
            .lock_acquire(LockAcquireParams::new(&self.name, &self.owner, self.ttl))
            .await?;
        Ok(grant.map(|g| LockGuard::start(self.at.engine().clone(), g, self.ttl, sent)))
    }

    /// Take the lock, retrying every `poll` until it is free or `timeout`
    /// passes (`None` then).
    pub async fn acquire_within(
        &self,
        timeout: Duration,
        poll: Duration,
    ) -> Result<Option<LockGuard>> {
        let now = tokio::time::Instant::now();
        let deadline = now.checked_add(timeout).unwrap_or(now + MAX_LOCK_TTL);
        loop {
            if let Some(guard) = self.try_acquire().await? {
                return Ok(Some(guard));
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(poll.min(deadline - now)).await;
        }
    }
}

/// What the renewing task is told when its guard goes away.
#[derive(Debug)]
enum Stop {
    /// Dropped: release in the background.
    Release,
    /// [`LockGuard::release`] releases itself; just stop renewing.
    Quiet,
}

/// A held lock. Renews every third of its TTL in the background; once a
/// renewal finds the lock gone (released by someone with its token, or
/// lapsed and taken over) — or no renewal succeeded for a whole TTL — the
/// guard counts as lost: [`LockGuard::lost`] resolves and
/// [`LockGuard::is_held`] turns false. Dropping it releases the lock.
#[derive(Debug)]
pub struct LockGuard {
    engine: AnyEngine,
    grant: LockGrant,
    held: watch::Receiver<bool>,
    stop: Option<oneshot::Sender<Stop>>,
}

impl LockGuard {
    fn start(
        engine: AnyEngine,
        grant: LockGrant,
        ttl: Duration,
        sent: tokio::time::Instant,
    ) -> LockGuard {
        let (held_tx, held) = watch::channel(true);
        let (stop, stop_rx) = oneshot::channel();
        tokio::spawn(renew_loop(
            engine.clone(),
            grant.clone(),
            ttl,
            sent + ttl,
            held_tx,
            stop_rx,
        ));
        LockGuard {
            engine,
            grant,
            held,
            stop: Some(stop),
        }
    }

    /// This acquisition's fencing token.
    pub fn token(&self) -> i64 {
        self.grant.token
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.grant.name
    }

    /// The holder's name.
    pub fn owner(&self) -> &str {
        &self.grant.owner
    }

    /// Whether the lock is still held, as far as the last renewal knows.
    pub fn is_held(&self) -> bool {
        *self.held.borrow()
    }

    /// Resolves once the lock is lost (at once if it already is).
    pub async fn lost(&mut self) {
        let _ = self.held.wait_for(|held| !held).await;
    }

    /// Stop renewing and release now; [`LockReleased::NotHeld`] when the
    /// lock was already lost.
    pub async fn release(mut self) -> Result<LockReleased> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Stop::Quiet);
        }
        self.engine
            .lock_release(LockReleaseParams::new(
                &self.grant.name,
                &self.grant.owner,
                self.grant.token,
            ))
            .await
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Stop::Release);
        }
    }
}

/// Renew every third of `ttl` until told to stop or the lock is lost.
async fn renew_loop(
    engine: AnyEngine,
    grant: LockGrant,
    ttl: Duration,
    mut sure_until: tokio::time::Instant,
    held: watch::Sender<bool>,
    mut stop: oneshot::Receiver<Stop>,
) {
    let every = ttl / 3;
    // `sure_until`: held for sure until a TTL after the last acquire or
    // renewal that was sent and succeeded (measured from before it was
    // sent).
    loop {
        tokio::select! {
            how = &mut stop => {
                if matches!(how, Ok(Stop::Release)) && *held.borrow() {
                    let release = LockReleaseParams::new(&grant.name, &grant.owner, grant.token);
                    if let Err(e) = engine.lock_release(release).await {
                        tracing::warn!(lock = %grant.name, error = %e, "releasing a dropped lock failed; it lapses by its TTL");
                    }
                }
                return;
            }
            // After a failed renewal, try again no later than the moment
            // the hold could lapse.
            () = tokio::time::sleep_until((tokio::time::Instant::now() + every).min(sure_until)) => {}
        }
        let sent = tokio::time::Instant::now();
        let renew = LockRenewParams::new(&grant.name, &grant.owner, grant.token, ttl);
        // A renewal still unanswered when the hold may lapse (a pool
        // exhausted, a half-open connection) counts as lost: by then
        // someone else may hold the lock.
        let answer = tokio::time::timeout_at(sure_until, engine.lock_renew(renew)).await;
        let Ok(answer) = answer else {
            tracing::warn!(lock = %grant.name, "lock lost: the renewal did not come back within the TTL");
            let _ = held.send(false);
            return;
        };
        match answer {
            Ok(LockRenewed::Held(_)) => sure_until = sent + ttl,
            Ok(LockRenewed::NotHeld) => {
                tracing::warn!(lock = %grant.name, token = grant.token, "lock lost");
                let _ = held.send(false);
                return;
            }
            Err(e) if tokio::time::Instant::now() >= sure_until => {
                tracing::warn!(lock = %grant.name, error = %e, "lock lost: no renewal for a whole TTL");
                let _ = held.send(false);
                return;
            }
            Err(e) => {
                tracing::warn!(lock = %grant.name, error = %e, "lock renewal failed; retrying")
            }
        }
    }
}
