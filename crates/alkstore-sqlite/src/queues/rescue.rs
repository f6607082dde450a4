//! Handing expired rows back: pending jobs past their expiry go to dead,
//! expired claims go back to pending (or to dead on their last attempt or
//! when cancelled). A claim does it for its queue when due (see
//! `RescueSchedule`); the sweep does it for every queue.

use alkstore_core::process::DEAD_PROCESS_RESCUE_WINDOW;
use alkstore_core::Result;
use rusqlite::{params, Connection};

use super::bury::{move_to_dead, EXHAUSTED_OR_CANCELLED};
use crate::db;
use crate::writer::WriterState;

/// What one pass over expired rows did.
#[derive(Default)]
pub(crate) struct Rescued {
    pub(crate) expired: u64,
    pub(crate) exhausted: u64,
    pub(crate) rescued: u64,
}

impl Rescued {
    /// Dead-lettered jobs are worth an operator's attention.
    fn log(&self, queue: &str) {
        if self.expired + self.exhausted > 0 {
            tracing::warn!(
                queue,
                expired = self.expired,
                exhausted_or_cancelled = self.exhausted,
                "jobs dead-lettered: pending past their expiry, or claims expired on the last attempt"
            );
        }
    }
}

/// Move pending jobs past their expiry to dead, and hand expired claims back
/// (pending again; dead when out of attempts or when their cancellation was
/// requested), for one queue or (`queue` `None`) every queue.
///
/// Keeping the expiry test out of the claim statement itself matters: a
/// parameter compared with `expires_at` lets SQLite consult the partial
/// expiry index, which makes it re-prepare the claim on every call.
pub(crate) fn rescue_expired(
    conn: &Connection,
    op: &'static str,
    queue: Option<&str>,
    now: i64,
) -> Result<Rescued> {
    let q = "(?1 IS NULL OR queue = ?1)";
    // The claims of a worker the registry declared dead (within the
    // window), made while it was alive, expire now: the steps below hand
    // them back. (A new process that took the same id and has not beaten
    // yet keeps its claims.)
    let window = i64::try_from(DEAD_PROCESS_RESCUE_WINDOW.as_secs()).unwrap_or(i64::MAX);
    conn.prepare_cached(&format!(
        "UPDATE __alkstore_job SET claim_expires_at = ?2 \
         WHERE {q} AND state = 'processing' AND claim_expires_at > ?2 \
           AND EXISTS (SELECT 1 FROM __alkstore_process p WHERE p.id = worker_id \
             AND p.expires_at < ?2 * 1000 AND p.expires_at >= (?2 - ?3) * 1000 \
             AND claimed_at * 1000 < p.expires_at)"
    ))
    .and_then(|mut s| s.execute(params![queue, now, window]))
    .map_err(db(op))?;
    let expired = move_to_dead(
        conn,
        op,
        &format!("{q} AND state = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?2"),
        "'expired'",
        None,
        now,
        &[&queue, &now],
    )?;
    let exhausted = move_to_dead(
        conn,
        op,
        &format!(
            "{q} AND state = 'processing' AND claim_expires_at <= ?2 \
             AND (attempts >= max_attempts OR cancel_requested)"
        ),
        EXHAUSTED_OR_CANCELLED,
        Some("claim expired on the last attempt"),
        now,
        &[&queue, &now],
    )?;
    let rescued = conn
        .prepare_cached(&format!(
            "UPDATE __alkstore_job SET state = 'pending', claim_expires_at = NULL \
             WHERE {q} AND state = 'processing' AND claim_expires_at <= ?2"
        ))
        .and_then(|mut s| s.execute(params![queue, now]))
        .map_err(db(op))? as u64;
    Ok(Rescued {
        expired,
        exhausted,
        rescued,
    })
}

/// Hand `queue`'s expired rows back first when its rescue is due at `now`,
/// logging the jobs it dead-lettered; a failed rescue is due again at the
/// next claim.
pub(super) fn rescue_if_due(st: &mut WriterState, queue: &str, now: i64) -> Result<()> {
    if st.rescues.due(queue, Some(now)) {
        let r = rescue_expired(&st.conn, "job_claim", Some(queue), now);
        match r {
            Ok(r) => r.log(queue),
            Err(e) => {
                st.rescues.forget(queue);
                return Err(e);
            }
        }
    }
    Ok(())
}
