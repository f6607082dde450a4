//! The group worker's one reader: it reads every owned bucket in one scan
//! of the stream and hands each event to its bucket's task, and hands out
//! requeued dead letters (or marks them requeued again when not run).

use std::sync::Arc;
use std::time::Duration;

use alkstore_core::group::{
    BucketEvent, GroupDeadRequeueParams, GroupDeadTakeParams, GroupReadParams,
};
use alkstore_core::{Engine, Error, GroupEngine};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::shared::{lock, Fed, Shared};
use crate::stream::FollowUps;
use crate::AnyEngine;

/// One page of `buckets` after `from`.
async fn read_page(
    engine: AnyEngine,
    group: String,
    buckets: Vec<u32>,
    from: i64,
    limit: u32,
) -> Result<Vec<BucketEvent>, Error> {
    engine
        .group_read(GroupReadParams::buckets(group, buckets, from, limit))
        .await
}

/// The worker's one reader: every owned bucket in one scan of the stream,
/// in offset order, each event handed to its bucket's handler; woken by
/// commits (the same hints as subscribers), with a safety poll.
pub(super) async fn fetch(s: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut hints = s.engine.wake_subscribe();
    let mut failures = 0u32;
    // Follow-up reads after the first read, any full page, a hint and a new
    // bucket.
    let mut follow_ups = FollowUps::started();
    // A page read ahead: its buckets, its start, the read.
    type Ahead = (Vec<u32>, i64, JoinHandle<Result<Vec<BucketEvent>, Error>>);
    let mut ahead: Option<Ahead> = None;
    loop {
        if *stop.borrow() {
            return;
        }
        let wanted: Vec<(u32, i64)> = lock(&s.fetch)
            .iter()
            .map(|(b, slot)| (*b, slot.after))
            .collect();
        if let Some(from) = wanted.iter().map(|(_, after)| *after).min() {
            let buckets: Vec<u32> = wanted.iter().map(|(b, _)| *b).collect();
            // The page read ahead while the last one was handed out, if it
            // is the one wanted now (same buckets, same start).
            let read = match ahead.take() {
                Some((b, f, task)) if b == buckets && f == from => match task.await {
                    Ok(read) => read,
                    Err(e) => Err(Error::database("group_read", e.to_string())),
                },
                other => {
                    if let Some((_, _, task)) = other {
                        task.abort();
                    }
                    read_page(
                        s.engine.clone(),
                        s.group.clone(),
                        buckets.clone(),
                        from,
                        s.opts.batch,
                    )
                    .await
                }
            };
            let page = match read {
                Ok(page) => {
                    failures = 0;
                    page
                }
                Err(e) => {
                    failures += 1;
                    tracing::warn!(group = %s.group, error = %e, "group read failed");
                    let backoff = Duration::from_millis(100) * failures.min(50);
                    tokio::select! {
                        _ = stop.changed() => {}
                        () = tokio::time::sleep(backoff) => {}
                    }
                    continue;
                }
            };
            let caught_up = page.len() < s.opts.batch as usize;
            let last = page.last().map(|e| e.event.offset);
            // A full page: start reading the next one while this one is
            // handed out (the database works while the handlers do).
            if let (false, Some(last)) = (caught_up, last) {
                let task = tokio::spawn(read_page(
                    s.engine.clone(),
                    s.group.clone(),
                    buckets.clone(),
                    last,
                    s.opts.batch,
                ));
                ahead = Some((buckets.clone(), last, task));
            }
            for BucketEvent { bucket, event } in page {
                let queue = {
                    let mut slots = lock(&s.fetch);
                    match slots.get_mut(&bucket) {
                        Some(slot) if event.offset > slot.after => {
                            slot.after = event.offset;
                            Some(slot.queue.clone())
                        }
                        _ => None,
                    }
                };
                if let Some(queue) = queue {
                    // A full queue waits for its handler; a dropped one was
                    // a bucket given up meanwhile.
                    tokio::select! {
                        _ = queue.send(Fed::Event(event)) => {}
                        _ = stop.changed() => return,
                    }
                }
            }
            // The scan covered every wanted bucket up to the page's last
            // event: none has another event before it.
            if let Some(last) = last {
                let mut slots = lock(&s.fetch);
                for (b, _) in &wanted {
                    if let Some(slot) = slots.get_mut(b) {
                        slot.after = slot.after.max(last);
                    }
                }
            }
            if !caught_up {
                follow_ups.start();
                continue;
            }
            let queues: Vec<mpsc::Sender<Fed>> = lock(&s.fetch)
                .values()
                .map(|slot| slot.queue.clone())
                .collect();
            for q in queues {
                let _ = q.try_send(Fed::CaughtUp);
            }
            redeliver(&s).await;
        }
        // Caught up (or nothing owned): wait for a commit to the stream, a
        // new bucket, the safety poll or the stop; sooner while follow-ups
        // run (see `FollowUps`).
        let wait = follow_ups.next_wait(s.opts.poll_interval);
        let poll = tokio::time::sleep(wait);
        tokio::pin!(poll);
        loop {
            tokio::select! {
                biased;
                _ = stop.changed() => return,
                () = s.added.notified() => {
                    follow_ups.start();
                    break;
                }
                hint = hints.recv() => match hint {
                    Ok(w) if w.concerns_stream(&s.stream) => {
                        follow_ups.start();
                        break;
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => {
                        hints = s.engine.wake_subscribe();
                        break;
                    }
                },
                () = &mut poll => break,
            }
        }
    }
}

/// Hand requeued dead letters of the owned buckets to their handlers
/// (taking them clears their mark, so no other worker runs them too).
async fn redeliver(s: &Shared) {
    let taken = s
        .engine
        .group_dead_take(GroupDeadTakeParams::new(
            s.group.clone(),
            &*s.worker,
            s.opts.batch,
        ))
        .await;
    let dead = match taken {
        Ok(dead) => dead,
        Err(e) => {
            tracing::warn!(group = %s.group, error = %e, "taking requeued dead letters failed");
            return;
        }
    };
    for d in dead {
        let queue = lock(&s.fetch).get(&d.bucket).map(|slot| slot.queue.clone());
        match queue {
            Some(q) => {
                let _ = q.send(Fed::Redeliver(d)).await;
            }
            // Taken just as its bucket went: marked again for its next holder.
            None => give_back(s, vec![d.offset]).await,
        }
    }
}

/// Mark requeued dead letters that were taken but not run as requeued
/// again (taking cleared the mark), so the bucket's next holder runs them
/// and an operator's requeue is not silently undone.
pub(super) async fn give_back(s: &Shared, offsets: Vec<i64>) {
    if offsets.is_empty() {
        // An empty list would mean every dead letter of the group.
        return;
    }
    let n = offsets.len();
    let back = s
        .engine
        .group_dead_requeue(GroupDeadRequeueParams::new(
            s.group.clone(),
            offsets.clone(),
        ))
        .await;
    if let Err(e) = back {
        tracing::warn!(group = %s.group, ?offsets, error = %e, "requeued dead letters taken but not run could not be marked again; requeue them again");
    } else {
        tracing::debug!(group = %s.group, n, "requeued dead letters not run here marked again");
    }
}
