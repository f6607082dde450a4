//! Settling claimed jobs: ack, retry, fail and snooze (alone or as a
//! batch), and handing a claim back (release, unclaim). The writer and
//! the application's transactions (`tx.rs`, `outbox.rs`) settle through
//! [`ack_in`] and [`settle_in`].

use std::sync::Arc;
use std::time::Duration;

use alkstore_core::queue::{
    secs, truncate_error, JobAckParams, JobReleaseParams, JobSettleParams, JobUnclaimParams,
};
use alkstore_core::{
    backoff_delay_s, Checked, Claim, JobRetryParams, Result, RetryOutcome, Settle, Settled,
    Settlement,
};
use rusqlite::{params, Connection, OptionalExtension, ToSql};

use super::bury::{errors_appended, move_to_dead, EXHAUSTED_OR_CANCELLED, FAILED_OR_CANCELLED};
use super::rows::MOVE_COLS;
use super::throughput::Finished;
use crate::writer::queue_state::QueueOfJob;
use crate::{db, SqliteEngine};

/// The predicate of a valid claim: ?1 id, ?2 worker, ?3 token, ?4 now.
pub(super) const HELD: &str =
    "id = ?1 AND state = 'processing' AND worker_id = ?2 AND claim_count = ?3 \
     AND claim_expires_at > ?4";

/// Retry a held job at `now` (backoff, or dead when out of attempts or
/// cancelled); shared by `job_retry` and `job_settle`.
fn retry_in(
    conn: &Connection,
    p: JobRetryParams,
    now: i64,
    finished: &mut Finished,
) -> Result<RetryOutcome> {
    let op = "job_retry";
    let c = &p.claim;
    let error = truncate_error(p.error);
    let row: Option<(u32, u32, i64, bool, String)> = conn
        .prepare_cached(&format!(
            "SELECT attempts, max_attempts, backoff_base_s, cancel_requested, queue \
             FROM __alkstore_job WHERE {HELD}"
        ))
        .and_then(|mut s| {
            s.query_row(params![c.id, c.worker, c.token, now], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()
        })
        .map_err(db(op))?;
    let Some((attempts, max_attempts, base, cancel_requested, queue)) = row else {
        return Ok(RetryOutcome::NotHeld);
    };
    finished.add(&queue, 0, 1);
    if cancel_requested || attempts >= max_attempts {
        move_to_dead(
            conn,
            op,
            "id = ?1",
            EXHAUSTED_OR_CANCELLED,
            Some(&error),
            now,
            &[&c.id],
        )?;
        return Ok(if cancel_requested {
            RetryOutcome::Cancelled
        } else {
            RetryOutcome::Dead
        });
    }
    let delay = match p.delay {
        Some(d) => secs(d),
        None => backoff_delay_s(base, attempts, c.id),
    };
    let run_at = now + delay;
    conn.prepare_cached(&format!(
        "UPDATE __alkstore_job SET state = 'pending', run_at = ?2, claim_expires_at = NULL, \
         last_error = ?3, errors = {} WHERE id = ?1",
        errors_appended("?4", "?3")
    ))
    .and_then(|mut s| s.execute(params![c.id, run_at, error, now]))
    .map_err(db(op))?;
    Ok(RetryOutcome::Scheduled(run_at))
}

/// Move a held job to dead as `failed` (or `cancelled`); false when not held.
fn fail_in(
    conn: &Connection,
    claim: &Claim,
    error: String,
    now: i64,
    finished: &mut Finished,
) -> Result<bool> {
    let error = truncate_error(error);
    let queue: Option<String> = conn
        .prepare_cached(&format!("SELECT queue FROM __alkstore_job WHERE {HELD}"))
        .and_then(|mut s| {
            s.query_row(params![claim.id, claim.worker, claim.token, now], |r| {
                r.get(0)
            })
            .optional()
        })
        .map_err(db("job_fail"))?;
    let Some(queue) = queue else {
        return Ok(false);
    };
    finished.add(&queue, 0, 1);
    let moved = move_to_dead(
        conn,
        "job_fail",
        HELD,
        FAILED_OR_CANCELLED,
        Some(&error),
        now,
        &[&claim.id, &claim.worker, &claim.token, &now],
    )?;
    Ok(moved == 1)
}

/// Put a held job back, due after `delay`, without using an attempt.
fn snooze_in(conn: &Connection, claim: &Claim, delay: Duration, now: i64) -> Result<Option<i64>> {
    let run_at = now + secs(delay);
    let args: [&dyn ToSql; 4] = [&claim.id, &claim.worker, &claim.token, &now];
    let done = hand_back(conn, "job_snooze", HELD, &args, run_at, now)?;
    Ok((done == HandedBack::Pending).then_some(run_at))
}

/// What [`hand_back`] did.
#[derive(PartialEq)]
enum HandedBack {
    /// Pending again.
    Pending,
    /// Its cancellation was requested: moved to dead as `cancelled`.
    Cancelled,
    /// The claim (or processing row) was not there.
    NotHeld,
}

/// Hand a held job back to pending (due at `run_at`) without using an
/// attempt; a job whose cancellation was requested goes to dead instead.
/// `held` selects the row with ?1..?4 as in [`HELD`] (or ?1 alone).
fn hand_back(
    conn: &Connection,
    op: &'static str,
    held: &str,
    args: &[&dyn ToSql],
    run_at: i64,
    now: i64,
) -> Result<HandedBack> {
    let cancelled = move_to_dead(
        conn,
        op,
        &format!("{held} AND cancel_requested"),
        "'cancelled'",
        None,
        now,
        args,
    )?;
    if cancelled > 0 {
        return Ok(HandedBack::Cancelled);
    }
    let n = args.len();
    let mut all: Vec<&dyn ToSql> = args.to_vec();
    all.push(&run_at);
    conn.prepare_cached(&format!(
        "UPDATE __alkstore_job SET state = 'pending', attempts = attempts - 1, run_at = ?{}, \
         claim_expires_at = NULL WHERE {held}",
        n + 1
    ))
    .and_then(|mut s| s.execute(all.as_slice()))
    .map(|n| {
        if n == 1 {
            HandedBack::Pending
        } else {
            HandedBack::NotHeld
        }
    })
    .map_err(db(op))
}

/// Complete the jobs `claims` still hold at `now` (the [`HELD`]
/// predicate): one `true` per claim held, its job deleted (or kept in
/// `done` when its queue keeps completed jobs) and counted in the
/// throughput table. `queue_of` names the queue of jobs this connection
/// claimed (a transaction passes an empty one). Shared by the writer and
/// transactions.
pub(crate) fn ack_in(
    conn: &Connection,
    claims: &[Claim],
    now: i64,
    queue_of: &mut QueueOfJob,
) -> Result<Vec<bool>> {
    let op = "job_ack";
    // The common ack is one plain delete. Only when it finds nothing (the
    // queue keeps completed jobs, or the claim is gone) does the row get
    // copied to `done` first.
    let delete_sql =
        format!("DELETE FROM __alkstore_job WHERE {HELD} AND keep_completed_s IS NULL");
    let mut delete = conn.prepare_cached(&delete_sql).map_err(db(op))?;
    let mut acked = Vec::with_capacity(claims.len());
    let mut finished = Finished::default();
    for c in claims {
        let args = params![c.id, c.worker, c.token, now];
        let gone: Option<Arc<str>> = match queue_of.take(c.id) {
            Some(queue) => {
                let n = delete.execute(args).map_err(db(op))?;
                (n == 1).then_some(queue)
            }
            None => conn
                .prepare_cached(&format!("{delete_sql} RETURNING queue"))
                .and_then(|mut s| s.query_row(args, |r| r.get::<_, String>(0)).optional())
                .map_err(db(op))?
                .map(Arc::from),
        };
        if let Some(queue) = gone {
            finished.add(&queue, 1, 0);
            acked.push(true);
            continue;
        }
        let kept = conn
            .prepare_cached(&format!(
                "INSERT OR REPLACE INTO __alkstore_done ({MOVE_COLS}, last_error, errors, completed_at) \
                 SELECT {MOVE_COLS}, last_error, errors, ?4 FROM __alkstore_job WHERE {HELD}"
            ))
            .and_then(|mut s| s.execute(args))
            .map_err(db(op))?;
        if kept == 1 {
            let queue: String = conn
                .prepare_cached(&format!(
                    "DELETE FROM __alkstore_job WHERE {HELD} RETURNING queue"
                ))
                .and_then(|mut s| s.query_row(args, |r| r.get(0)))
                .map_err(db(op))?;
            finished.add(&queue, 1, 0);
        }
        acked.push(kept == 1);
    }
    drop(delete);
    finished.record(conn, op, now)?;
    Ok(acked)
}

/// Retry, fail or snooze the jobs the batch's claims still hold at `now`,
/// in order (a claim no longer held: `NotHeld`, `Failed(false)`,
/// `Snoozed(None)`), retries and failures counted in the throughput
/// table. Shared by the writer and transactions.
pub(crate) fn settle_in(conn: &Connection, batch: Vec<Settle>, now: i64) -> Result<Vec<Settled>> {
    let mut finished = Finished::default();
    let outcomes = batch
        .into_iter()
        .map(|s| match s {
            Settle::Retry(p) => retry_in(conn, p, now, &mut finished).map(Settled::Retried),
            Settle::Fail { claim, error } => {
                fail_in(conn, &claim, error, now, &mut finished).map(Settled::Failed)
            }
            Settle::Snooze { claim, delay } => {
                snooze_in(conn, &claim, delay, now).map(Settled::Snoozed)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    finished.record(conn, "job_settle", now)?;
    Ok(outcomes)
}

/// The driver's `job_ack`: complete the held jobs.
pub(crate) async fn job_ack(
    engine: &SqliteEngine,
    params: Checked<JobAckParams>,
) -> Result<Vec<bool>> {
    let JobAckParams { claims, .. } = params.into_inner();
    engine
        .inner
        .writer
        .write_rows("job_ack", claims.len(), move |st| {
            let now = st.clock.now();
            let acked = ack_in(&st.conn, &claims, now, &mut st.queue_of)?;
            // The claims go back to be freed where they were made (see
            // `ClaimedRows`).
            Ok((acked, claims))
        })
        .await
        .map(|(acked, _claims)| acked)
}

/// The driver's `job_settle`: the batch's outcomes, and whether one made
/// its job claimable now.
pub(crate) async fn job_settle(
    engine: &SqliteEngine,
    params: Checked<JobSettleParams>,
) -> Result<Settlement> {
    let JobSettleParams { batch, .. } = params.into_inner();
    engine
        .inner
        .writer
        .write_rows("job_settle", batch.len(), move |st| {
            let now = st.clock.now();
            let outcomes = settle_in(&st.conn, batch, now)?;
            let claimable_now = outcomes.iter().any(|o| match o {
                Settled::Retried(RetryOutcome::Scheduled(t)) | Settled::Snoozed(Some(t)) => {
                    *t <= now
                }
                _ => false,
            });
            Ok(Settlement {
                outcomes,
                claimable_now,
            })
        })
        .await
}

/// The driver's `job_release`: hand a held claim back, due now.
pub(super) async fn job_release(
    engine: &SqliteEngine,
    params: Checked<JobReleaseParams>,
) -> Result<bool> {
    let JobReleaseParams { claim, .. } = params.into_inner();
    engine
        .inner
        .writer
        .write("job_release", move |st| {
            let now = st.clock.now();
            let args: [&dyn ToSql; 4] = [&claim.id, &claim.worker, &claim.token, &now];
            hand_back(&st.conn, "job_release", HELD, &args, now, now)
                .map(|h| h != HandedBack::NotHeld)
        })
        .await
}

/// The driver's `job_unclaim`: hand job `id`'s claim back, whoever holds it.
pub(super) async fn job_unclaim(
    engine: &SqliteEngine,
    params: Checked<JobUnclaimParams>,
) -> Result<bool> {
    let JobUnclaimParams { id, .. } = params.into_inner();
    engine
        .inner
        .writer
        .write("job_unclaim", move |st| {
            let now = st.clock.now();
            let held = "id = ?1 AND state = 'processing'";
            hand_back(&st.conn, "job_unclaim", held, &[&id], now, now)
                .map(|h| h != HandedBack::NotHeld)
        })
        .await
}
