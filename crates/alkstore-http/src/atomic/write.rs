//! One op, parsed: the write it makes inside the request's transaction,
//! and the rows it counts against the request's limit. Separate from
//! `kinds`, which reads ops into these, so running them needs nothing of
//! how they were read.

use alkstore::{
    queue::{Claim, JobRetryParams, NewJob},
    Tx,
};
use alkstore_core::group::GroupCheckpointParams;
use alkstore_core::lock::LockFenceParams;
use alkstore_core::notify::NotifyParams;
use alkstore_core::queue::{JobFailParams, JobSnoozeParams};
use alkstore_core::schedule::ScheduleSetParams;
use alkstore_core::stream::{NewEvent, StreamOffsetCommitParams};
use alkstore_core::Writes as _;

use super::wire::{AtomicResult, CheckpointView, Snoozed};
use crate::queues::{Done, EnqueuedJob, EnqueuedJobs};
use crate::schedules::Removed;
use crate::streams::{OffsetView, Published};

/// One op, parsed: what to run in the transaction.
#[derive(Debug)]
pub(super) enum Write {
    Enqueue(NewJob),
    EnqueueBatch(Vec<NewJob>),
    Publish(Vec<NewEvent>),
    Ack(Claim),
    Retry(JobRetryParams),
    Fail(JobFailParams),
    Snooze(JobSnoozeParams),
    OffsetCommit(StreamOffsetCommitParams),
    GroupCheckpoint(GroupCheckpointParams),
    Notify(NotifyParams),
    LockFence(LockFenceParams),
    ScheduleSet(ScheduleSetParams),
    ScheduleRemove(String),
    SchedulePause(String),
    ScheduleResume(String),
}

impl Write {
    /// Rows it writes, against [`MAX_WRITES`](super::MAX_WRITES).
    pub(super) fn rows(&self) -> usize {
        match self {
            Write::EnqueueBatch(jobs) => jobs.len(),
            Write::Publish(events) => events.len(),
            _ => 1,
        }
    }

    /// Run it inside `tx`.
    pub(super) async fn run(self, tx: &mut Tx) -> alkstore::Result<AtomicResult> {
        Ok(match self {
            Write::Enqueue(job) => {
                let out = tx.job_enqueue(vec![job]).await?;
                let first = out
                    .into_iter()
                    .next()
                    .ok_or_else(|| alkstore::Error::database("enqueue", "no id returned"))?;
                AtomicResult::Enqueue(first.into())
            }
            Write::EnqueueBatch(jobs) => {
                let out = tx.job_enqueue(jobs).await?;
                AtomicResult::EnqueueBatch(EnqueuedJobs {
                    jobs: out.into_iter().map(EnqueuedJob::from).collect(),
                })
            }
            Write::Publish(events) => AtomicResult::Publish(Published {
                offsets: tx.stream_publish(events).await?,
            }),
            Write::Ack(claim) => {
                tx.job_ack(claim).await?;
                AtomicResult::Ack(Done { done: true })
            }
            Write::Retry(p) => AtomicResult::Retry(tx.job_retry(p).await?.into()),
            Write::Fail(p) => {
                tx.job_fail(p).await?;
                AtomicResult::Fail(Done { done: true })
            }
            Write::Snooze(p) => AtomicResult::Snooze(Snoozed {
                // A lost claim is `NotHeld` inside a transaction.
                run_at: tx.job_snooze(p).await?.ok_or_else(|| {
                    alkstore::Error::database("job_snooze", "no due time for a held claim")
                })?,
            }),
            Write::OffsetCommit(p) => AtomicResult::OffsetCommit(OffsetView {
                offset: Some(tx.stream_offset_commit(p).await?),
            }),
            Write::GroupCheckpoint(p) => AtomicResult::GroupCheckpoint(CheckpointView {
                checkpoint: tx.group_checkpoint(p).await?,
            }),
            Write::Notify(p) => {
                tx.channel(p.channel).notify(p.payload).await?;
                AtomicResult::Notify
            }
            Write::LockFence(p) => {
                tx.lock(p.name).fence(p.token).await?;
                AtomicResult::LockFence
            }
            Write::ScheduleSet(p) => AtomicResult::ScheduleSet(tx.schedule_set(p).await?.into()),
            Write::ScheduleRemove(name) => AtomicResult::ScheduleRemove(Removed {
                removed: tx.schedule_remove(name).await?,
            }),
            Write::SchedulePause(name) => {
                AtomicResult::SchedulePause(tx.schedule_pause(name).await?.into())
            }
            Write::ScheduleResume(name) => {
                AtomicResult::ScheduleResume(tx.schedule_resume(name).await?.into())
            }
        })
    }
}
