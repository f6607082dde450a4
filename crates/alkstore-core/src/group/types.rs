//! The value shapes of consumer-group calls.

/// A bucket lease a worker holds: which bucket, under which epoch, and
/// where its checkpoint stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketLease {
    /// The bucket, in `0..N`.
    pub bucket: u32,
    /// Grows on every successful claim of the bucket; a checkpoint is saved
    /// only under the current epoch (fencing).
    pub epoch: i64,
    /// The last offset handled in this bucket (0: none yet).
    pub checkpoint: i64,
    /// When the lease lapses unless renewed, unix milliseconds by the
    /// database's clock.
    pub expires_at_ms: i64,
}

/// An event with the bucket it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketEvent {
    /// Its bucket in the group.
    pub bucket: u32,
    /// The event.
    pub event: crate::stream::Event,
}

/// What one heartbeat's renewal learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renewal {
    /// The leases the worker still holds, renewed, by bucket. A bucket it
    /// held before and that is missing here was lost.
    pub held: Vec<BucketLease>,
    /// The group's live workers (unexpired members, by the database's
    /// clock), this one included: a worker that holds no bucket yet counts
    /// too, so the others make room for it.
    pub live_workers: u32,
    /// The group's bucket count N.
    pub buckets: u32,
    /// How long until the next lease held by another worker lapses (by the
    /// database's clock), if any: a worker looks again then, so a dead
    /// peer's buckets move a TTL after its last renewal, not up to a
    /// heartbeat later.
    pub next_lapse_in_ms: Option<i64>,
}

/// One bucket of a group, for status pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketStatus {
    /// The bucket, in `0..N`.
    pub bucket: u32,
    /// Its holder, if any lease was ever taken and not released.
    pub owner: Option<String>,
    /// Claims so far.
    pub epoch: i64,
    /// When the holder's lease lapses (unix ms); `None` when unowned.
    pub expires_at_ms: Option<i64>,
    /// Whether the lease has lapsed by the database's clock.
    pub expired: bool,
    /// The last offset handled in this bucket.
    pub checkpoint: i64,
    /// Readable events of the bucket after its checkpoint.
    pub lag: u64,
}

/// A group's buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupStatus {
    /// The group.
    pub group: String,
    /// The stream it reads.
    pub stream: String,
    /// Every bucket, by number.
    pub buckets: Vec<BucketStatus>,
}

/// A group in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// The group.
    pub group: String,
    /// The stream it reads.
    pub stream: String,
    /// Its bucket count N.
    pub buckets: u32,
    /// Distinct workers holding an unexpired lease.
    pub live_owners: u32,
    /// Live workers (unexpired members), with or without buckets.
    pub live_workers: u32,
    /// Its dead letters (events its handler gave up on), requeued or not.
    pub dead: u64,
}

/// An event a group's handler gave up on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDead {
    /// The event's offset.
    pub offset: i64,
    /// Its bucket.
    pub bucket: u32,
    /// Its stream.
    pub stream: String,
    /// Its key.
    pub key: Option<String>,
    /// Its payload.
    pub payload: Vec<u8>,
    /// The handler's last error.
    pub error: String,
    /// How many times the handler ran.
    pub attempts: u32,
    /// When it was given up on (unix seconds).
    pub failed_at: i64,
    /// When it was published (unix seconds).
    pub created_at: i64,
    /// Asked to run again and not yet taken by its bucket's holder.
    pub requeued: bool,
}

impl GroupDead {
    /// The event as it was published.
    pub fn event(&self) -> crate::stream::Event {
        crate::stream::Event {
            offset: self.offset,
            stream: self.stream.as_str().into(),
            key: self.key.clone(),
            payload: self.payload.clone(),
            created_at: self.created_at,
        }
    }
}

/// What a resize did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupResize {
    /// The bucket count before.
    pub from: u32,
    /// The bucket count now.
    pub to: u32,
    /// The checkpoint every new bucket starts from: the lowest of the old
    /// ones, so no event is skipped.
    pub rewound_to: i64,
}

/// How many bucket rows a group has for one bucket count (see
/// [`GroupEngine::group_counts`](super::GroupEngine::group_counts)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketCount {
    /// The bucket count the rows were made for.
    pub buckets: u32,
    /// How many rows have it.
    pub rows: u64,
}

/// How a bucket's lease came to its holder: the cause of a handoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HandoffCause {
    /// The bucket's first lease.
    First,
    /// Its holder gave it back to make room for a member that joined.
    Rebalance,
    /// Its holder left the group (a clean shutdown).
    Leave,
    /// Its holder's lease lapsed: the holder died, hung or lost the
    /// database (a failover).
    Lapse,
}

impl HandoffCause {
    /// `first`, `rebalance`, `leave` or `lapse`: how the store keeps it.
    pub fn as_str(self) -> &'static str {
        match self {
            HandoffCause::First => "first",
            HandoffCause::Rebalance => "rebalance",
            HandoffCause::Leave => "leave",
            HandoffCause::Lapse => "lapse",
        }
    }

    /// The cause a stored word names (`None` for an unknown one).
    pub fn parse(word: &str) -> Option<HandoffCause> {
        Some(match word {
            "first" => HandoffCause::First,
            "rebalance" => HandoffCause::Rebalance,
            "leave" => HandoffCause::Leave,
            "lapse" => HandoffCause::Lapse,
            _ => return None,
        })
    }
}

/// One change of a bucket's holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handoff {
    /// The bucket.
    pub bucket: u32,
    /// The new lease's epoch.
    pub epoch: i64,
    /// Who held it before (`None` for a first lease).
    pub from_worker: Option<String>,
    /// Who holds it now.
    pub to_worker: String,
    /// Why it moved.
    pub cause: HandoffCause,
    /// When (unix ms, the store's clock).
    pub at_ms: i64,
}

/// A group's lease history: the latest handoffs, and every handoff ever
/// counted by cause.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupHandoffs {
    /// Newest first (kept for [`HANDOFF_RETENTION`](super::HANDOFF_RETENTION)).
    pub recent: Vec<Handoff>,
    /// Every handoff of the group by cause, since it was created.
    pub totals: Vec<(HandoffCause, u64)>,
}
