//! Consumer-group leases and checkpoints against a reference model:
//! random sequences of claims, renewals, releases, leaves and fenced
//! checkpoints by three workers on a group of four buckets, with
//! publishes and clock advances, run on the engine and on a plain-Rust
//! model, every answer compared (see `src/model.rs`).

use alkstore_core::Writes as _;
use std::fmt::Write as _;
use std::time::Duration;

use alkstore_core::group::{
    GroupCheckpointParams, GroupClaimParams, GroupEnsureParams, GroupLeaveParams,
    GroupReleaseParams, GroupRenewParams,
};
use alkstore_core::stream::NewEvent;
use alkstore_core::{Clock, ErrorKind, GroupEngine};
use proptest::prelude::*;

use crate::Harness;

const BUCKETS: u32 = 4;
const WORKERS: [&str; 3] = ["w0", "w1", "w2"];

/// One step of a group sequence.
#[derive(Debug, Clone)]
pub enum GroupOp {
    /// Publish `n` events to the group's stream.
    Publish {
        /// How many.
        n: usize,
    },
    /// A worker claims buckets.
    Claim {
        /// Which of the three workers.
        worker: usize,
        /// Most buckets to take.
        max: u32,
        /// Lease length in seconds.
        ttl_s: u64,
    },
    /// A worker renews every lease it holds.
    Renew {
        /// Which worker.
        worker: usize,
        /// Lease length in seconds.
        ttl_s: u64,
    },
    /// A worker gives buckets back.
    Release {
        /// Which worker.
        worker: usize,
        /// Which buckets: bit `b` set gives back bucket `b`.
        mask: u8,
    },
    /// A worker saves a bucket's checkpoint.
    Checkpoint {
        /// Which bucket.
        bucket: u32,
        /// Which worker.
        worker: usize,
        /// Under the epoch before the bucket's current one.
        stale: bool,
        /// At which offset: picked, modulo their count, among 0, every
        /// offset published, and the head + 1.
        at: usize,
    },
    /// A worker leaves the group.
    Leave {
        /// Which worker.
        worker: usize,
    },
    /// Move the clock on.
    Advance {
        /// By this many milliseconds.
        ms: u64,
    },
    /// Compare every bucket's status.
    Status,
}

fn op() -> impl Strategy<Value = GroupOp> {
    prop_oneof![
        2 => (1..3usize).prop_map(|n| GroupOp::Publish { n }),
        3 => (0..3usize, 1..4u32, 1..4u64)
            .prop_map(|(worker, max, ttl_s)| GroupOp::Claim { worker, max, ttl_s }),
        2 => (0..3usize, 1..4u64).prop_map(|(worker, ttl_s)| GroupOp::Renew { worker, ttl_s }),
        1 => (0..3usize, any::<u8>()).prop_map(|(worker, mask)| GroupOp::Release { worker, mask }),
        3 => (0..BUCKETS, 0..3usize, any::<bool>(), any::<usize>()).prop_map(
            |(bucket, worker, stale, at)| GroupOp::Checkpoint { bucket, worker, stale, at }
        ),
        1 => (0..3usize).prop_map(|worker| GroupOp::Leave { worker }),
        2 => prop_oneof![1..1_500u64, 2_000..5_000u64].prop_map(|ms| GroupOp::Advance { ms }),
        1 => Just(GroupOp::Status),
    ]
}

/// Sequences that once failed, shrunk: run first, every time.
fn regressions() -> Vec<Vec<GroupOp>> {
    vec![]
}

/// Random sequences of claims, renewals, releases, leaves and checkpoints
/// (current and stale epochs) with publishes and clock advances behave on
/// the engine as on the model: a claim takes the lowest unowned or lapsed
/// buckets and bumps each one's epoch; a worker holds a bucket until
/// another claims it after its lapse, so renewals, releases and
/// checkpoints of a lapsed lease nobody took still count; a checkpoint
/// moves only under the holder's current epoch, only forward, and never
/// past the stream's head.
pub async fn random_group_operations_match_the_model<H: Harness>(h: &H) {
    let strategy = proptest::collection::vec(op(), 1..50);
    crate::model::check(strategy, regressions(), |name, ops| async move {
        run_case(h, &name, &ops).await
    })
    .await;
}

/// A bucket as the model holds it.
#[derive(Debug, Clone, Copy, Default)]
struct MBucket {
    owner: Option<usize>,
    epoch: i64,
    expires_at_ms: i64,
    checkpoint: i64,
}

async fn run_case<H: Harness>(h: &H, case: &str, ops: &[GroupOp]) -> Result<(), String> {
    let e = h.engine();
    let clock = h.clock();
    let (group, stream) = (format!("{case}-g"), format!("{case}-s"));
    e.group_ensure(GroupEnsureParams::new(&group, &stream, BUCKETS))
        .await
        .map_err(|x| x.to_string())?;
    let mut buckets = [MBucket::default(); BUCKETS as usize];
    let mut published: Vec<i64> = Vec::new();
    let mut log = String::new();
    for (step, op) in ops.iter().enumerate() {
        let now = clock.now_ms();
        let _ = writeln!(log, "  {step}: {op:?} at {now} ms");
        let differ = |what: String| Err(format!("step {step}: {what}\n{log}"));
        let leases = |w: usize, b: &[MBucket]| -> Vec<(u32, i64, i64, i64)> {
            (0..BUCKETS)
                .filter(|&i| b[i as usize].owner == Some(w))
                .map(|i| {
                    let m = b[i as usize];
                    (i, m.epoch, m.checkpoint, m.expires_at_ms)
                })
                .collect()
        };
        match *op {
            GroupOp::Publish { n } => {
                let events: Vec<NewEvent> = (0..n)
                    .map(|_| NewEvent::new(stream.as_str(), b"g".to_vec()))
                    .collect();
                let offsets = e.stream_publish(events).await.map_err(|x| x.to_string())?;
                published.extend(offsets);
                // The head that bounds a checkpoint is the readable one
                // (see `streams::settle`).
                crate::streams::settle(e, &stream).await;
            }
            GroupOp::Claim { worker, max, ttl_s } => {
                let ttl = Duration::from_secs(ttl_s);
                let got: Vec<(u32, i64, i64, i64)> = e
                    .group_claim(GroupClaimParams::new(&group, WORKERS[worker], ttl, max))
                    .await
                    .map_err(|x| x.to_string())?
                    .into_iter()
                    .map(|l| (l.bucket, l.epoch, l.checkpoint, l.expires_at_ms))
                    .collect();
                let expires = now + i64::try_from(ttl.as_millis()).unwrap_or(0);
                let mut want = Vec::new();
                for (i, b) in buckets.iter_mut().enumerate() {
                    if want.len() == max as usize {
                        break;
                    }
                    if b.owner.is_none() || b.expires_at_ms <= now {
                        b.owner = Some(worker);
                        b.epoch += 1;
                        b.expires_at_ms = expires;
                        let i = u32::try_from(i).unwrap_or(0);
                        want.push((i, b.epoch, b.checkpoint, expires));
                    }
                }
                if got != want {
                    return differ(format!(
                        "claim (bucket, epoch, checkpoint, expires): engine {got:?}, model {want:?}"
                    ));
                }
            }
            GroupOp::Renew { worker, ttl_s } => {
                let ttl = Duration::from_secs(ttl_s);
                let got: Vec<(u32, i64, i64, i64)> = e
                    .group_renew(GroupRenewParams::new(&group, WORKERS[worker], ttl))
                    .await
                    .map_err(|x| x.to_string())?
                    .held
                    .into_iter()
                    .map(|l| (l.bucket, l.epoch, l.checkpoint, l.expires_at_ms))
                    .collect();
                let expires = now + i64::try_from(ttl.as_millis()).unwrap_or(0);
                for b in buckets.iter_mut().filter(|b| b.owner == Some(worker)) {
                    b.expires_at_ms = expires;
                }
                let want = leases(worker, &buckets);
                if got != want {
                    return differ(format!("renew: engine {got:?}, model {want:?}"));
                }
            }
            GroupOp::Release { worker, mask } => {
                let asked: Vec<u32> = (0..BUCKETS).filter(|b| mask & (1 << b) != 0).collect();
                let got = e
                    .group_release(GroupReleaseParams::new(
                        &group,
                        WORKERS[worker],
                        asked.clone(),
                    ))
                    .await
                    .map_err(|x| x.to_string())?;
                let mut want = 0u64;
                for b in asked {
                    let m = &mut buckets[b as usize];
                    if m.owner == Some(worker) {
                        m.owner = None;
                        want += 1;
                    }
                }
                if got != want {
                    return differ(format!("release: engine {got}, model {want}"));
                }
            }
            GroupOp::Leave { worker } => {
                let got = e
                    .group_leave(GroupLeaveParams::new(&group, WORKERS[worker]))
                    .await
                    .map_err(|x| x.to_string())?;
                let mut want = 0u64;
                for m in buckets.iter_mut().filter(|m| m.owner == Some(worker)) {
                    m.owner = None;
                    want += 1;
                }
                if got != want {
                    return differ(format!("leave: engine {got}, model {want}"));
                }
            }
            GroupOp::Checkpoint {
                bucket,
                worker,
                stale,
                at,
            } => {
                let head = published.last().copied().unwrap_or(0);
                let mut picks = vec![0, head + 1];
                picks.extend(&published);
                let at = picks[at % picks.len()];
                let m = &mut buckets[bucket as usize];
                let epoch = if stale { m.epoch - 1 } else { m.epoch };
                if epoch < 1 {
                    continue;
                }
                let got = e
                    .group_checkpoint(GroupCheckpointParams::new(
                        &group,
                        bucket,
                        WORKERS[worker],
                        epoch,
                        at,
                    ))
                    .await;
                let want: Result<i64, ErrorKind> = if m.owner != Some(worker) || stale {
                    Err(ErrorKind::NotHeld)
                } else if m.checkpoint >= at {
                    Ok(m.checkpoint)
                } else if at > head {
                    Err(ErrorKind::InvalidInput)
                } else {
                    m.checkpoint = at;
                    Ok(at)
                };
                let got = got.map_err(|x| x.kind());
                if got != want {
                    return differ(format!("checkpoint: engine {got:?}, model {want:?}"));
                }
            }
            GroupOp::Advance { ms } => clock.advance(Duration::from_millis(ms)),
            GroupOp::Status => {
                let got: Vec<(Option<String>, i64, i64, bool)> = e
                    .group_status(group.as_str())
                    .await
                    .map_err(|x| x.to_string())?
                    .buckets
                    .into_iter()
                    .map(|b| (b.owner, b.epoch, b.checkpoint, b.expired))
                    .collect();
                let want: Vec<(Option<String>, i64, i64, bool)> = buckets
                    .iter()
                    .map(|b| {
                        (
                            b.owner.map(|w| WORKERS[w].to_string()),
                            b.epoch,
                            b.checkpoint,
                            b.owner.is_some() && b.expires_at_ms <= now,
                        )
                    })
                    .collect();
                if got != want {
                    return differ(format!(
                        "status (owner, epoch, checkpoint, expired): engine {got:?}, model {want:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __groups_model {
    ($then:path, $args:tt) => {
        $then! { @rows $args groups::model [
            random_group_operations_match_the_model,
        ] }
    };
}
