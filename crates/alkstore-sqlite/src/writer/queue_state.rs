//! What the writer keeps between groups for the queue area: the block of
//! ids it reserved for new jobs ([`JobIds`]) and the queue of each job it
//! claimed ([`QueueOfJob`]). A leaf module: the writer's state holds them,
//! and the queue statements use them, without either importing the other.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::Connection;

/// Ids reserved for new jobs by one connection: `next..=last`. The writer
/// keeps its block across commits, and drops it when a group finds at its
/// start that another connection has committed since the last group's
/// start (its jobs' ids are above ours: a new block keeps ids rising in
/// commit order across processes; no other connection commits between a
/// group's start and its reservation) or when a rollback may have undone
/// the reservation (`WriterState::forget_rolled_back`).
#[derive(Debug)]
pub(crate) struct JobIds {
    next: i64,
    last: i64,
}

/// Ids the writer reserves at a time: one write of `__alkstore_meta` per
/// this many enqueued jobs (migration 013 says why).
pub(crate) const JOB_ID_BLOCK: i64 = 1024;

impl JobIds {
    /// The id the next job inserted on `conn` gets, reserving `block` ids
    /// first when `ids` holds none left. The reservation raises
    /// 'job_id_high' past every id in the job, dead and done tables too, so
    /// a lost or hand-edited counter never hands out an id in use. Call
    /// [`JobIds::taken`] once it is used.
    pub(crate) fn next(
        ids: &mut Option<JobIds>,
        conn: &Connection,
        block: i64,
    ) -> rusqlite::Result<i64> {
        if let Some(held) = ids {
            if held.next <= held.last {
                return Ok(held.next);
            }
        }
        let last: i64 = conn
            .prepare_cached(
                "INSERT INTO __alkstore_meta (key, value) \
                 SELECT 'job_id_high', max(COALESCE((SELECT max(id) FROM __alkstore_job), 0), \
                   COALESCE((SELECT max(id) FROM __alkstore_dead), 0), \
                   COALESCE((SELECT max(id) FROM __alkstore_done), 0)) + ?1 WHERE true \
                 ON CONFLICT (key) DO UPDATE SET value = max(value + ?1, excluded.value) \
                 RETURNING value",
            )?
            .query_row([block], |r| r.get(0))?;
        let next = last - block + 1;
        *ids = Some(JobIds { next, last });
        Ok(next)
    }

    /// The id [`JobIds::next`] gave was used.
    pub(crate) fn taken(ids: &mut Option<JobIds>) {
        if let Some(held) = ids {
            held.next += 1;
        }
    }
}

/// The queue of each job this writer claimed, until its ack: the ack then
/// deletes with a plain statement and counts it for that queue, where a
/// job claimed elsewhere needs `RETURNING queue` (which costs SQLite an
/// ephemeral table per row: a fifth of the ack path). A job's queue never
/// changes and ids are never reused (see [`JobIds`]), so an entry is never
/// wrong, only possibly stale (a claim that lapsed and was finished
/// elsewhere, or never acked): bounded by clearing the map when it grows
/// past its cap (about 2 MB).
#[derive(Default)]
pub(crate) struct QueueOfJob {
    by_id: HashMap<i64, Arc<str>>,
}

impl QueueOfJob {
    /// More claims than a worker holds at once: past it, start over (the
    /// acks of what was forgotten take the `RETURNING` path).
    const CAP: usize = 1 << 16;

    pub(crate) fn claimed(&mut self, queue: &Arc<str>, ids: impl ExactSizeIterator<Item = i64>) {
        if self.by_id.len() + ids.len() > Self::CAP {
            self.by_id.clear();
        }
        for id in ids {
            self.by_id.insert(id, queue.clone());
        }
    }

    pub(crate) fn take(&mut self, id: i64) -> Option<Arc<str>> {
        self.by_id.remove(&id)
    }
}
