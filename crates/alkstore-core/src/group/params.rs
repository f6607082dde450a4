//! The parameters of consumer-group calls, each validating itself.

use std::time::Duration;

use crate::stream::validate_stream_name;
use crate::validate::validate_worker;
use crate::{Error, Limits, Result, Validate};

use super::{validate_group_name, MAX_BUCKETS};

/// The longest lease TTL: a day. A dead worker's buckets wait this long.
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(86_400);

fn validate_buckets(buckets: u32) -> Result<()> {
    if !(1..=MAX_BUCKETS).contains(&buckets) {
        return Err(Error::invalid(
            "bucket count",
            format!("{buckets} is outside 1..={MAX_BUCKETS}"),
        ));
    }
    Ok(())
}

fn validate_bucket(bucket: u32) -> Result<()> {
    if bucket >= MAX_BUCKETS {
        return Err(Error::invalid(
            "bucket",
            format!("{bucket} is outside 0..{MAX_BUCKETS}"),
        ));
    }
    Ok(())
}

fn validate_ttl(ttl: Duration) -> Result<()> {
    crate::validate::validate_ttl("lease ttl", ttl, MAX_LEASE_TTL)
}

/// The TTL in whole milliseconds (validated: 1 ms..=1 day, so it fits).
pub fn ttl_ms(ttl: Duration) -> i64 {
    crate::validate::millis(ttl)
}

/// Parameters of `group_ensure`: make sure the group's N bucket rows exist.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupEnsureParams {
    /// The group.
    pub group: String,
    /// The stream it reads.
    pub stream: String,
    /// Its bucket count N (1..=[`MAX_BUCKETS`]).
    pub buckets: u32,
}

impl GroupEnsureParams {
    /// Group `group` reads `stream` in `buckets` buckets.
    pub fn new(group: impl Into<String>, stream: impl Into<String>, buckets: u32) -> Self {
        GroupEnsureParams {
            group: group.into(),
            stream: stream.into(),
            buckets,
        }
    }
}

impl Validate for GroupEnsureParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        validate_stream_name(&self.stream)?;
        validate_buckets(self.buckets)
    }
}

/// Parameters of `group_claim`: take up to `max` unowned or expired buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupClaimParams {
    /// The group.
    pub group: String,
    /// The claiming worker (unique per process run).
    pub worker: String,
    /// How long the new leases last unless renewed.
    pub ttl: Duration,
    /// Most buckets to take (1..=[`MAX_BUCKETS`]).
    pub max: u32,
}

impl GroupClaimParams {
    /// `worker` takes up to `max` buckets of `group` for `ttl`.
    pub fn new(
        group: impl Into<String>,
        worker: impl Into<String>,
        ttl: Duration,
        max: u32,
    ) -> Self {
        GroupClaimParams {
            group: group.into(),
            worker: worker.into(),
            ttl,
            max,
        }
    }
}

impl Validate for GroupClaimParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        validate_worker(&self.worker)?;
        validate_ttl(self.ttl)?;
        if !(1..=MAX_BUCKETS).contains(&self.max) {
            return Err(Error::invalid(
                "claim count",
                format!("{} is outside 1..={MAX_BUCKETS}", self.max),
            ));
        }
        Ok(())
    }
}

/// Parameters of `group_renew`: extend every lease the worker holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupRenewParams {
    /// The group.
    pub group: String,
    /// The worker.
    pub worker: String,
    /// How long the renewed leases last.
    pub ttl: Duration,
}

impl GroupRenewParams {
    /// `worker` renews its leases in `group` for `ttl`.
    pub fn new(group: impl Into<String>, worker: impl Into<String>, ttl: Duration) -> Self {
        GroupRenewParams {
            group: group.into(),
            worker: worker.into(),
            ttl,
        }
    }
}

impl Validate for GroupRenewParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        validate_worker(&self.worker)?;
        validate_ttl(self.ttl)
    }
}

/// Parameters of `group_release`: give buckets back at once.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupReleaseParams {
    /// The group.
    pub group: String,
    /// The worker; only buckets it still holds are released.
    pub worker: String,
    /// The buckets to give back.
    pub buckets: Vec<u32>,
}

impl GroupReleaseParams {
    /// `worker` gives back `buckets` of `group`.
    pub fn new(group: impl Into<String>, worker: impl Into<String>, buckets: Vec<u32>) -> Self {
        GroupReleaseParams {
            group: group.into(),
            worker: worker.into(),
            buckets,
        }
    }
}

impl Validate for GroupReleaseParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        validate_worker(&self.worker)?;
        if self.buckets.len() > MAX_BUCKETS as usize {
            return Err(Error::invalid(
                "buckets",
                format!("more than {MAX_BUCKETS} in one release"),
            ));
        }
        self.buckets.iter().try_for_each(|b| validate_bucket(*b))
    }
}

/// Parameters of `group_checkpoint`: a fenced, forward-only checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupCheckpointParams {
    /// The group.
    pub group: String,
    /// The bucket.
    pub bucket: u32,
    /// The worker that holds it.
    pub worker: String,
    /// The epoch its lease was claimed under.
    pub epoch: i64,
    /// The last offset handled in the bucket.
    pub offset: i64,
}

impl GroupCheckpointParams {
    /// `worker`, holding `bucket` of `group` under `epoch`, has handled it
    /// up to `offset`.
    pub fn new(
        group: impl Into<String>,
        bucket: u32,
        worker: impl Into<String>,
        epoch: i64,
        offset: i64,
    ) -> Self {
        GroupCheckpointParams {
            group: group.into(),
            bucket,
            worker: worker.into(),
            epoch,
            offset,
        }
    }
}

impl Validate for GroupCheckpointParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        validate_worker(&self.worker)?;
        validate_bucket(self.bucket)?;
        if self.offset < 0 {
            return Err(Error::invalid("checkpoint", "must not be negative"));
        }
        if self.epoch < 1 {
            return Err(Error::invalid(
                "epoch",
                "a held lease's epoch is at least 1",
            ));
        }
        Ok(())
    }
}

/// Parameters of `group_read`: the events of some buckets after an
/// offset, in offset order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupReadParams {
    /// The group (its row names the stream and N).
    pub group: String,
    /// The buckets (a worker reads all it owns in one scan).
    pub buckets: Vec<u32>,
    /// Only events after this offset.
    pub after: i64,
    /// Most events to return (1..=`Limits::max_page`).
    pub limit: u32,
}

impl GroupReadParams {
    /// Up to `limit` events of `bucket` of `group` after `after`.
    pub fn new(group: impl Into<String>, bucket: u32, after: i64, limit: u32) -> Self {
        GroupReadParams {
            group: group.into(),
            buckets: vec![bucket],
            after,
            limit,
        }
    }

    /// Up to `limit` events of any of `buckets` of `group` after `after`.
    pub fn buckets(group: impl Into<String>, buckets: Vec<u32>, after: i64, limit: u32) -> Self {
        GroupReadParams {
            group: group.into(),
            buckets,
            after,
            limit,
        }
    }
}

impl Validate for GroupReadParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        if self.buckets.len() > MAX_BUCKETS as usize {
            return Err(Error::invalid(
                "buckets",
                format!("more than {MAX_BUCKETS} in one read"),
            ));
        }
        self.buckets.iter().try_for_each(|b| validate_bucket(*b))?;
        limits.check_page("read limit", self.limit)
    }
}

/// Parameters of `group_status`: which group, and whether to count each
/// bucket's lag (a scan of the stream past its checkpoint; leave it out
/// when polling ownership or checkpoints often).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupStatusParams {
    /// The group.
    pub group: String,
    /// Count each bucket's lag (default); `false` reports 0.
    pub lag: bool,
}

impl GroupStatusParams {
    /// Status of `group` without counting lag.
    pub fn without_lag(group: impl Into<String>) -> Self {
        GroupStatusParams {
            group: group.into(),
            lag: false,
        }
    }
}

impl<S: Into<String>> From<S> for GroupStatusParams {
    fn from(group: S) -> Self {
        GroupStatusParams {
            group: group.into(),
            lag: true,
        }
    }
}

impl Validate for GroupStatusParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)
    }
}

/// Parameters of `group_leave`: a worker's clean exit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupLeaveParams {
    /// The group.
    pub group: String,
    /// The worker leaving.
    pub worker: String,
}

impl GroupLeaveParams {
    /// `worker` leaves `group`.
    pub fn new(group: impl Into<String>, worker: impl Into<String>) -> Self {
        GroupLeaveParams {
            group: group.into(),
            worker: worker.into(),
        }
    }
}

impl Validate for GroupLeaveParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        validate_worker(&self.worker)
    }
}

/// Parameters of `group_dead_add`: give up on an event, fenced like a
/// checkpoint (only the bucket's current holder may).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupDeadAddParams {
    /// The group.
    pub group: String,
    /// The event's bucket.
    pub bucket: u32,
    /// The worker holding it.
    pub worker: String,
    /// The epoch its lease was claimed under.
    pub epoch: i64,
    /// The event.
    pub event: crate::stream::Event,
    /// The handler's last error.
    pub error: String,
    /// How many times the handler ran.
    pub attempts: u32,
}

impl GroupDeadAddParams {
    /// `worker`, holding `bucket` of `group` under `epoch`, gives up on
    /// `event` after `attempts` runs, the last failing with `error`.
    pub fn new(
        group: impl Into<String>,
        bucket: u32,
        worker: impl Into<String>,
        epoch: i64,
        event: crate::stream::Event,
        error: impl Into<String>,
        attempts: u32,
    ) -> Self {
        GroupDeadAddParams {
            group: group.into(),
            bucket,
            worker: worker.into(),
            epoch,
            event,
            error: error.into(),
            attempts,
        }
    }
}

impl Validate for GroupDeadAddParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        validate_worker(&self.worker)?;
        validate_bucket(self.bucket)?;
        if self.epoch < 1 {
            return Err(Error::invalid(
                "epoch",
                "a held lease's epoch is at least 1",
            ));
        }
        if self.event.payload.len() > limits.max_payload_bytes {
            return Err(Error::PayloadTooLarge {
                size: self.event.payload.len(),
                limit: limits.max_payload_bytes,
            });
        }
        Ok(())
    }
}

/// Parameters of `group_dead_list`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupDeadListParams {
    /// The group.
    pub group: String,
    /// Only dead letters after this offset.
    pub after: i64,
    /// Most to return (1..=`Limits::max_page`).
    pub limit: u32,
}

impl GroupDeadListParams {
    /// Up to `limit` dead letters of `group` after offset `after`.
    pub fn new(group: impl Into<String>, after: i64, limit: u32) -> Self {
        GroupDeadListParams {
            group: group.into(),
            after,
            limit,
        }
    }
}

impl Validate for GroupDeadListParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        limits.check_page("list limit", self.limit)
    }
}

/// Parameters of `group_resize`: change a stopped group's bucket count.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupResizeParams {
    /// The group.
    pub group: String,
    /// The new bucket count N (1..=[`MAX_BUCKETS`]).
    pub buckets: u32,
}

impl GroupResizeParams {
    /// Give `group` `buckets` buckets.
    pub fn new(group: impl Into<String>, buckets: u32) -> Self {
        GroupResizeParams {
            group: group.into(),
            buckets,
        }
    }
}

impl Validate for GroupResizeParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        validate_buckets(self.buckets)
    }
}

/// Parameters of `group_dead_requeue`: ask for dead letters to run again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupDeadRequeueParams {
    /// The group.
    pub group: String,
    /// These offsets; empty: every dead letter of the group.
    pub offsets: Vec<i64>,
}

impl GroupDeadRequeueParams {
    /// Requeue `offsets` of `group` (empty: all).
    pub fn new(group: impl Into<String>, offsets: Vec<i64>) -> Self {
        GroupDeadRequeueParams {
            group: group.into(),
            offsets,
        }
    }
}

impl Validate for GroupDeadRequeueParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        validate_dead_offsets(&self.group, &self.offsets, limits, "requeue")
    }
}

/// Parameters of `group_dead_purge`: delete dead letters for good.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupDeadPurgeParams {
    /// The group.
    pub group: String,
    /// These offsets; empty: every dead letter of the group.
    pub offsets: Vec<i64>,
}

impl GroupDeadPurgeParams {
    /// Purge `offsets` of `group` (empty: all).
    pub fn new(group: impl Into<String>, offsets: Vec<i64>) -> Self {
        GroupDeadPurgeParams {
            group: group.into(),
            offsets,
        }
    }
}

impl Validate for GroupDeadPurgeParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        validate_dead_offsets(&self.group, &self.offsets, limits, "purge")
    }
}

/// A group name and at most a page of dead-letter offsets for one `call`.
fn validate_dead_offsets(group: &str, offsets: &[i64], limits: &Limits, call: &str) -> Result<()> {
    validate_group_name(group)?;
    if offsets.len() > limits.max_page as usize {
        return Err(Error::invalid(
            "offsets",
            format!("more than {} in one {call}", limits.max_page),
        ));
    }
    Ok(())
}

/// Parameters of `group_dead_take`: a worker takes the requeued dead
/// letters of the buckets it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupDeadTakeParams {
    /// The group.
    pub group: String,
    /// The worker.
    pub worker: String,
    /// Most to take (1..=`Limits::max_page`).
    pub limit: u32,
}

impl GroupDeadTakeParams {
    /// `worker` takes up to `limit` requeued dead letters of `group`.
    pub fn new(group: impl Into<String>, worker: impl Into<String>, limit: u32) -> Self {
        GroupDeadTakeParams {
            group: group.into(),
            worker: worker.into(),
            limit,
        }
    }
}

impl Validate for GroupDeadTakeParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        validate_worker(&self.worker)?;
        limits.check_page("take limit", self.limit)
    }
}

/// Parameters of `group_dead_resolve`: a requeued dead letter ran; delete
/// it. Fenced like a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupDeadResolveParams {
    /// The group.
    pub group: String,
    /// The event's bucket.
    pub bucket: u32,
    /// The worker holding it.
    pub worker: String,
    /// The epoch its lease was claimed under.
    pub epoch: i64,
    /// The event's offset.
    pub offset: i64,
}

impl GroupDeadResolveParams {
    /// `worker`, holding `bucket` of `group` under `epoch`, ran the
    /// requeued dead letter at `offset`.
    pub fn new(
        group: impl Into<String>,
        bucket: u32,
        worker: impl Into<String>,
        epoch: i64,
        offset: i64,
    ) -> Self {
        GroupDeadResolveParams {
            group: group.into(),
            bucket,
            worker: worker.into(),
            epoch,
            offset,
        }
    }
}

impl Validate for GroupDeadResolveParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        validate_worker(&self.worker)?;
        validate_bucket(self.bucket)?;
        if self.epoch < 1 {
            return Err(Error::invalid(
                "epoch",
                "a held lease's epoch is at least 1",
            ));
        }
        Ok(())
    }
}

/// Parameters of `group_handoffs`: a group's lease history.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupHandoffsParams {
    /// The group.
    pub group: String,
    /// Most recent handoffs to return, newest first (1..=`Limits::max_page`).
    pub limit: u32,
}

impl GroupHandoffsParams {
    /// Up to `limit` of `group`'s latest handoffs, and its totals.
    pub fn new(group: impl Into<String>, limit: u32) -> Self {
        GroupHandoffsParams {
            group: group.into(),
            limit,
        }
    }
}

impl Validate for GroupHandoffsParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        validate_group_name(&self.group)?;
        limits.check_page("handoffs limit", self.limit)
    }
}
