//! The write operations, each declared here once: what it returns, whom it
//! wakes, what fences it. The fencing rule of a transaction (a lost
//! claim, lease or lock poisons it) is [`Op::fence`] and [`Op::lost`].

use super::{Hint, Op};
use crate::group::GroupCheckpointParams;
use crate::lock::LockFenceParams;
use crate::notify::NotifyParams;
use crate::queue::{JobAckParams, JobEnqueueParams, JobSettleParams};
use crate::schedule::{ScheduleInfo, ScheduleNameParams, SchedulePauseParams, ScheduleSetParams};
use crate::stream::{NewEvent, StreamOffsetCommitParams, StreamPublishParams};
use crate::{Enqueued, NewJob, RetryOutcome, Settled, Settlement};

impl Op for JobEnqueueParams {
    type Output = Vec<Enqueued>;
    const NAME: &'static str = "job_enqueue";
    fn idle(&self) -> Option<Self::Output> {
        self.jobs.is_empty().then(Vec::new)
    }
    fn hints(&self) -> Vec<Hint> {
        NewJob::distinct_queues(&self.jobs)
            .into_iter()
            .map(Hint::Queue)
            .collect()
    }
}

impl Op for JobAckParams {
    type Output = Vec<bool>;
    const NAME: &'static str = "job_ack";
    fn idle(&self) -> Option<Self::Output> {
        self.claims.is_empty().then(Vec::new)
    }
    fn fence(&self) -> Option<String> {
        Some(claims(self.claims.iter().map(|c| c.id)))
    }
    fn lost(out: &Vec<bool>) -> bool {
        out.iter().any(|held| !held)
    }
}

impl Op for JobSettleParams {
    type Output = Settlement;
    const NAME: &'static str = "job_settle";
    fn idle(&self) -> Option<Self::Output> {
        self.batch.is_empty().then(Settlement::default)
    }
    fn hints(&self) -> Vec<Hint> {
        // The jobs' queues are not known here: a retry or snooze due now
        // wakes this process's workers on every queue.
        vec![Hint::All]
    }
    fn wakes(out: &Settlement) -> bool {
        out.claimable_now
    }
    fn fence(&self) -> Option<String> {
        Some(claims(self.batch.iter().map(|s| s.claim().id)))
    }
    fn lost(out: &Settlement) -> bool {
        out.outcomes.iter().any(|o| {
            matches!(
                o,
                Settled::Retried(RetryOutcome::NotHeld)
                    | Settled::Failed(false)
                    | Settled::Snoozed(None)
            )
        })
    }
}

impl Op for StreamPublishParams {
    type Output = Vec<i64>;
    const NAME: &'static str = "stream_publish";
    fn idle(&self) -> Option<Self::Output> {
        self.events.is_empty().then(Vec::new)
    }
    fn hints(&self) -> Vec<Hint> {
        NewEvent::distinct_streams(&self.events)
            .into_iter()
            .map(Hint::Stream)
            .collect()
    }
}

impl Op for StreamOffsetCommitParams {
    type Output = i64;
    const NAME: &'static str = "stream_offset_commit";
    fn fence(&self) -> Option<String> {
        self.expected.map(|o| {
            format!(
                "offset {o} of consumer {} on stream {}",
                self.consumer, self.stream
            )
        })
    }
}

impl Op for NotifyParams {
    type Output = ();
    const NAME: &'static str = "notify";
    fn hints(&self) -> Vec<Hint> {
        vec![Hint::Channel(self.channel.clone())]
    }
}

impl Op for ScheduleSetParams {
    type Output = ScheduleInfo;
    const NAME: &'static str = "schedule_set";
}

impl Op for ScheduleNameParams {
    type Output = bool;
    const NAME: &'static str = "schedule_remove";
}

impl Op for SchedulePauseParams {
    type Output = ScheduleInfo;
    const NAME: &'static str = "schedule_set_paused";
}

impl Op for GroupCheckpointParams {
    type Output = i64;
    const NAME: &'static str = "group_checkpoint";
    fn fence(&self) -> Option<String> {
        Some(format!(
            "lease on bucket {} of group {} (epoch {})",
            self.bucket, self.group, self.epoch
        ))
    }
}

impl Op for LockFenceParams {
    type Output = ();
    const NAME: &'static str = "lock_fence";
    fn fence(&self) -> Option<String> {
        Some(format!("lock {} (token {})", self.name, self.token))
    }
}

/// "claim on job 7", "claims on jobs 7, 8".
fn claims(ids: impl Iterator<Item = i64>) -> String {
    let ids: Vec<String> = ids.map(|id| id.to_string()).collect();
    match ids.len() {
        1 => format!("claim on job {}", ids[0]),
        _ => format!("claims on jobs {}", ids.join(", ")),
    }
}
