//! The bodies and results of the ops only an atomic request has (snooze,
//! group checkpoint, notify, lock fence, the empty body), and the tagged
//! result of every op. The other ops reuse the single calls' bodies from
//! `queues`, `streams` and `schedules`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::queues::{Done, EnqueuedJob, EnqueuedJobs, RetryResponse};
use crate::schedules::{Removed, ScheduleView};
use crate::streams::{OffsetView, Published};

/// Snooze a claimed job: it runs again after the delay, without using an
/// attempt.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SnoozeRequest {
    /// The worker named in the claim.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub worker: String,
    /// The claim's token.
    pub token: i64,
    /// Run again after this many milliseconds (whole seconds: due times
    /// are kept in seconds).
    #[schema(maximum = 1_099_511_627_776_999_u64)]
    pub delay_ms: u64,
}

/// Move a consumer group bucket's checkpoint, fenced by the lease epoch:
/// refused unless the worker still holds the bucket under that epoch.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupCheckpointRequest {
    /// The group.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub group: String,
    /// The bucket, from 0.
    pub bucket: u32,
    /// The worker holding the bucket's lease.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub worker: String,
    /// The epoch the lease was claimed under.
    pub epoch: i64,
    /// The last offset handled in the bucket (checkpoints never move
    /// back: a lower one leaves it where it is).
    #[schema(minimum = 0)]
    pub offset: i64,
}

/// A notification, sent to listeners when the transaction commits.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NotifyRequest {
    /// The channel.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub channel: String,
    /// Text, at most 7,000 bytes, no NUL.
    #[serde(default)]
    #[schema(max_length = 7000, pattern = "^[^\\u0000]*$")]
    pub payload: String,
}

/// Fence the request's writes with a lock: refused unless the token is
/// still the holder's, and the lock cannot pass on before the transaction
/// ends.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LockFenceRequest {
    /// The lock.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub name: String,
    /// The fencing token its acquire returned.
    #[schema(minimum = 1)]
    pub token: i64,
}

/// An op whose single call takes no body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoBody {}

/// When a snoozed job runs again.
#[derive(Debug, Serialize, ToSchema)]
pub struct Snoozed {
    /// When it is due (unix seconds).
    pub run_at: i64,
}

/// A group bucket's checkpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckpointView {
    /// The checkpoint saved after the op (never lower than before).
    pub checkpoint: i64,
}

/// One op's result, tagged with its `op`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum AtomicResult {
    /// The job's id (or its duplicate's).
    Enqueue(EnqueuedJob),
    /// The jobs' ids, in request order.
    EnqueueBatch(EnqueuedJobs),
    /// The events' offsets, in request order.
    Publish(Published),
    /// Acked (always `done: true`: a claim no longer held fails the
    /// request).
    Ack(Done),
    /// What the retry did.
    Retry(RetryResponse),
    /// Dead now (always `done: true`).
    Fail(Done),
    /// When the job runs again.
    Snooze(Snoozed),
    /// The consumer's offset after the op.
    OffsetCommit(OffsetView),
    /// The bucket's checkpoint after the op.
    GroupCheckpoint(CheckpointView),
    /// Sent at commit.
    Notify,
    /// The lock is held under the token until the transaction ends.
    LockFence,
    /// The schedule as set.
    ScheduleSet(ScheduleView),
    /// Whether there was such a schedule.
    ScheduleRemove(Removed),
    /// The schedule, paused.
    SchedulePause(ScheduleView),
    /// The schedule, resumed.
    ScheduleResume(ScheduleView),
}
