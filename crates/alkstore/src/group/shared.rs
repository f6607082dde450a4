//! The types a group runner's parts share: what a handler is handed
//! ([`GroupEvent`], made from the fetcher's [`Delivery`]), what a run returns ([`GroupReport`]),
//! the handler with its types erased, and the worker's [`Shared`] state
//! with the fetcher's per-bucket slots. A leaf: the runner, the
//! coordinator, the fetcher and the bucket tasks import it, not each other.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use alkstore_core::group::GroupDead;
use alkstore_core::stream::Event;
use alkstore_core::BoxError;
use tokio::sync::{mpsc, Notify};

use super::options::GroupOpts;
use crate::stream::ctx::{PlainFn, TxFn};
use crate::stream::EventCtx;
use crate::AnyEngine;

/// One event as the fetcher hands it to a bucket's handler, with the lease
/// it is handled under (the user's handler gets it as a [`GroupEvent`]).
#[derive(Debug, Clone)]
pub(super) struct Delivery {
    /// The event.
    pub(super) event: Event,
    /// Its bucket.
    pub(super) bucket: u32,
    /// The epoch of this worker's lease on the bucket.
    pub(super) epoch: i64,
    /// This worker's id in the group.
    pub(super) worker: Arc<str>,
}

/// One event handed to a group's handler, its payload decoded from JSON to
/// `T` (a raw handler gets `GroupEvent<Vec<u8>>`, the bytes), with the
/// lease it is handled under.
#[derive(Debug, Clone)]
pub struct GroupEvent<T> {
    event: EventCtx<T>,
    bucket: u32,
    epoch: i64,
    worker: Arc<str>,
}

impl<T> GroupEvent<T> {
    /// The decoded payload.
    pub fn payload(&self) -> &T {
        self.event.payload()
    }

    /// Take the payload.
    pub fn into_payload(self) -> T {
        self.event.into_payload()
    }

    /// The event's offset in its stream.
    pub fn offset(&self) -> i64 {
        self.event.offset()
    }

    /// The key it was published with (its bucket is the key's hash).
    pub fn key(&self) -> Option<&str> {
        self.event.key()
    }

    /// The stream.
    pub fn stream(&self) -> &str {
        self.event.stream()
    }

    /// When it was published (unix seconds, the engine's clock).
    pub fn created_at(&self) -> i64 {
        self.event.created_at()
    }

    /// Its bucket.
    pub fn bucket(&self) -> u32 {
        self.bucket
    }

    /// The epoch of this worker's lease on the bucket: effects ordered or
    /// fenced by it stay right across failovers.
    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// This worker's id in the group.
    pub fn worker(&self) -> &str {
        &self.worker
    }
}

/// The delivery as a handler of `T` sees it (`decode`: the stream's rule,
/// JSON or raw bytes).
pub(super) fn group_event<T: 'static>(
    decode: fn(Event) -> Result<EventCtx<T>, BoxError>,
) -> impl Fn(Delivery) -> Result<GroupEvent<T>, BoxError> + Send + Sync + 'static {
    move |d: Delivery| {
        Ok(GroupEvent {
            event: decode(d.event)?,
            bucket: d.bucket,
            epoch: d.epoch,
            worker: d.worker,
        })
    }
}

/// What a group worker did before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupReport {
    /// Events handled successfully.
    pub handled: u64,
    /// Events given up on (written to the group's dead letters).
    pub dead_lettered: u64,
    /// Bucket leases taken.
    pub claimed: u64,
    /// Buckets lost to another worker (or to a lapsed lease).
    pub lost: u64,
    /// Buckets given back to make room for other workers.
    pub released: u64,
}

/// A group's handler, its types erased.
#[derive(Clone)]
pub(super) enum Handler {
    /// [`GroupRunner::handler`](super::GroupRunner::handler)'s.
    Plain(Arc<PlainHandler>),
    /// [`GroupRunner::handler_tx`](super::GroupRunner::handler_tx)'s.
    Tx(Arc<TxHandler>),
}

impl fmt::Debug for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Handler::Plain(_) => "Handler::Plain",
            Handler::Tx(_) => "Handler::Tx",
        })
    }
}

/// A plain group handler, its types erased.
pub(super) type PlainHandler = PlainFn<Delivery>;

/// A transactional group handler, its types erased.
pub(super) type TxHandler = TxFn<Delivery>;

/// What the fetcher and every bucket handler of one worker share.
pub(super) struct Shared {
    pub(super) engine: AnyEngine,
    pub(super) group: String,
    pub(super) stream: String,
    pub(super) worker: Arc<str>,
    pub(super) opts: GroupOpts,
    pub(super) handler: Handler,
    /// The owned buckets the fetcher feeds: how far each was fetched, and
    /// its handler's queue.
    pub(super) fetch: Mutex<BTreeMap<u32, FetchSlot>>,
    /// Wakes the fetcher when a bucket is added.
    pub(super) added: Notify,
}

pub(super) struct FetchSlot {
    /// The last offset handed to the bucket's handler (or known to have
    /// no event of the bucket up to it).
    pub(super) after: i64,
    pub(super) queue: mpsc::Sender<Fed>,
}

/// What the fetcher hands a bucket's handler.
pub(super) enum Fed {
    Event(Event),
    /// A dead letter someone requeued: run it again, outside offset order.
    Redeliver(GroupDead),
    /// The fetcher found nothing more for now: checkpoint.
    CaughtUp,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
