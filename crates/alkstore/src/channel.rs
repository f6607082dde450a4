//! Notification channels through the facade: a [`Channel`] handle
//! ([`Store::channel`](crate::Store::channel)) notifies on a channel and
//! gives a [`Listener`] for it (inside your own transaction,
//! `tx.channel(name).notify(..)` sends at commit).
//!
//! Delivery is ephemeral: a listener gets what is committed on its channel
//! while it listens, in commit order, at most once. A listener that falls
//! far behind may miss messages (PostgreSQL: more than 1,024 hints queued
//! in this process; SQLite: older than a minute).
//!
//! ```no_run
//! # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
//! let orders = store.channel("orders");
//! let mut listener = orders.listen().await?;
//! orders.notify("42 shipped").await?;
//! let n = listener.recv().await?;
//! assert_eq!(n.payload, "42 shipped");
//! # Ok(()) }
//! ```

use crate::runs::Runs;
use alkstore_core::Writes as _;
use std::collections::VecDeque;
use std::time::Duration;

pub use alkstore_core::notify::{
    validate_notify, Notification, NotifyParams, NotifyPollParams, MAX_NOTIFY_PAYLOAD,
};
use alkstore_core::{Engine, Error, NotifyEngine, Result, Wake};
use tokio::sync::broadcast::error::RecvError;

use crate::{AnyEngine, Store};

/// A handle to one notification channel (see the [module](self) docs).
#[derive(Debug, Clone)]
pub struct Channel<R: Runs = Store> {
    at: R,
    name: String,
}

/// `notify` runs where the handle was made (see [`Runs`]):
/// `store.channel(..)` sends at once, `tx.channel(..)` when the
/// transaction commits (and never if it rolls back).
impl<R: Runs> Channel<R> {
    pub(crate) fn new(at: R, name: String) -> Channel<R> {
        Channel { at, name }
    }

    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Send `payload` (at most [`MAX_NOTIFY_PAYLOAD`] bytes) to everyone
    /// listening on the channel when it commits (at once, here).
    pub async fn notify(&self, payload: impl Into<String>) -> Result<()> {
        self.at
            .place()
            .notify(NotifyParams::new(self.name.clone(), payload))
            .await
    }
}

impl Channel {
    /// Listen: the listener gets what is sent on the channel from now on.
    pub async fn listen(&self) -> Result<Listener> {
        Listener::new(self.at.engine().clone(), self.name.clone()).await
    }
}

/// How often a listener on an engine that keeps notifications looks without
/// a wake (a lost hint costs at most this).
const SAFETY_POLL: Duration = Duration::from_secs(5);

/// A subscription to one channel (see the [module](self) docs).
#[derive(Debug)]
pub struct Listener {
    engine: AnyEngine,
    channel: String,
    wakes: tokio::sync::broadcast::Receiver<Wake>,
    /// Engines that keep notifications: the last id read.
    after_id: i64,
    pending: VecDeque<Notification>,
    push: bool,
}

impl Listener {
    pub(crate) async fn new(engine: AnyEngine, channel: String) -> Result<Listener> {
        validate_notify(&channel, "")?;
        // Subscribe before reading the head: nothing committed in between
        // is missed.
        let wakes = engine.wake_subscribe();
        let push = engine.capabilities().pushes_notifications;
        engine.notify_ready().await?;
        let after_id = if push { 0 } else { engine.notify_head().await? };
        Ok(Listener {
            engine,
            channel,
            wakes,
            after_id,
            pending: VecDeque::new(),
            push,
        })
    }

    /// The channel.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The next notification on the channel, waiting for one.
    pub async fn recv(&mut self) -> Result<Notification> {
        loop {
            if let Some(n) = self.pending.pop_front() {
                return Ok(n);
            }
            if !self.push {
                let got = self
                    .engine
                    .notify_poll(NotifyPollParams::new(
                        self.channel.clone(),
                        self.after_id,
                        1_000,
                    ))
                    .await?;
                if let Some(last) = got.last() {
                    self.after_id = last.id;
                    self.pending.extend(got);
                    continue;
                }
            }
            self.wait().await?;
        }
    }

    /// Wait for what may bring a notification: a pushed one for this
    /// channel (returned through `pending`), or a hint to read again.
    async fn wait(&mut self) -> Result<()> {
        loop {
            let woken = if self.push {
                Ok(self.wakes.recv().await)
            } else {
                tokio::time::timeout(SAFETY_POLL, self.wakes.recv()).await
            };
            match woken {
                Err(_elapsed) => return Ok(()),
                Ok(Ok(Wake::Message(m))) if self.push => {
                    if m.channel == self.channel {
                        self.pending.push_back((*m).clone());
                        return Ok(());
                    }
                }
                Ok(Ok(Wake::Notify(c))) if !self.push && *c == *self.channel => return Ok(()),
                Ok(Ok(Wake::All)) if !self.push => return Ok(()),
                Ok(Ok(_)) => {}
                Ok(Err(RecvError::Lagged(n))) => {
                    tracing::warn!(channel = %self.channel, lagged = n, "listener fell behind; notifications may be lost");
                    if !self.push {
                        return Ok(());
                    }
                }
                Ok(Err(RecvError::Closed)) => return Err(Error::Closed),
            }
        }
    }
}
