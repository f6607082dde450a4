//! Settling claimed jobs: ack, retry, fail and snooze (alone or as a
//! batch), and handing a claim back (release, unclaim). The engine's
//! transactions (`tx.rs`) and the application's (`within.rs`) settle
//! through [`ack_in`] and [`settle_all_in`].

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use alkstore_core::queue::{
    secs, truncate_error, JobAckParams, JobReleaseParams, JobSettleParams, JobUnclaimParams,
};
use alkstore_core::validate;
use alkstore_core::{
    backoff_delay_s, Checked, Error, JobRetryParams, Result, RetryOutcome, Settle, Settled,
    Settlement,
};

use super::sql::{self, Sql};
use super::throughput::{settles, tally_rows, Tally};
use crate::conn::{fetch_opt, Exec, Params};
use crate::{db, PgEngine};

impl PgEngine {
    /// Run the hand-back statement (release, snooze, unclaim): `Some(Some(t))`
    /// pending again due at `t`, `Some(None)` buried as cancelled, `None`
    /// when nothing was held.
    async fn hand_back(
        &self,
        op: &'static str,
        text: &str,
        id: i64,
        holder: Option<(&str, i64)>,
        delay_s: i64,
    ) -> Result<Option<Option<i64>>> {
        let now = self.now_override();
        let channel = crate::schema::notify_channel(self.schema());
        let (worker, token) = (holder.map(|h| h.0), holder.map(|h| h.1));
        let rows = self
            .query(op, text, &[&now, &id, &worker, &token, &delay_s, &channel])
            .await?;
        Ok(rows.first().map(|r| r.get::<_, Option<i64>>(0)))
    }
}

/// Retry a held job inside `tx` (backoff, or dead when out of attempts or
/// cancelled), for a settle batch's lone retry (`job_retry` is one) or one
/// of a batch that settles a claim twice. Also returns the database's time
/// when the claim was held.
async fn retry_in<E: Exec + ?Sized>(
    tx: &E,
    sql: &Sql,
    now: Option<i64>,
    p: JobRetryParams,
    tally: Option<&Tally>,
) -> Result<(RetryOutcome, Option<i64>)> {
    let op = "job_retry";
    let (id, token) = (p.claim.id, p.claim.token);
    let error = truncate_error(p.error);
    let row = fetch_opt(
        tx,
        op,
        &sql.retry_select,
        &[&now, &id, &p.claim.worker, &token],
    )
    .await?;
    let Some(row) = row else {
        return Ok((RetryOutcome::NotHeld, None));
    };
    let held = HeldForRetry {
        attempts: row.get(0)?,
        max_attempts: row.get(1)?,
        backoff_base_s: row.get(2)?,
        db_now: row.get(3)?,
        cancel_requested: row.get(4)?,
    };
    let outcome = held.outcome(id, p.delay);
    // Both check the claim again: on a bare client (`within`) the select's
    // row lock ended with it, and the job may have been rescued and
    // claimed anew since.
    let st = settles(sql, tally);
    let (worker, token) = (&p.claim.worker, &token);
    let rows = match outcome {
        RetryOutcome::Scheduled(run_at) => {
            tx.fetch(
                op,
                &st.retry_update,
                &[&now, &run_at, &error, &id, worker, token],
            )
            .await?
        }
        _ => {
            tx.fetch(op, &st.retry_bury, &[&now, &id, &error, worker, token])
                .await?
        }
    };
    if rows.is_empty() {
        return Ok((RetryOutcome::NotHeld, None));
    }
    tally_rows(tally, &rows, 0, false)?;
    Ok((outcome, Some(held.db_now)))
}

/// A held job's row as a retry reads it (`retry_select`, `retry_many_select`).
#[derive(Clone, Copy)]
struct HeldForRetry {
    attempts: i64,
    max_attempts: i64,
    backoff_base_s: i64,
    /// The database's time when the claim was found held.
    db_now: i64,
    cancel_requested: bool,
}

impl HeldForRetry {
    /// What retrying job `id` does: to dead when cancelled or out of
    /// attempts, else scheduled after `delay` (or the queue's backoff).
    fn outcome(&self, id: i64, delay: Option<Duration>) -> RetryOutcome {
        if self.cancel_requested {
            return RetryOutcome::Cancelled;
        }
        if self.attempts >= self.max_attempts {
            return RetryOutcome::Dead;
        }
        let delay = match delay {
            Some(d) => secs(d),
            None => backoff_delay_s(self.backoff_base_s, validate::attempts(self.attempts), id),
        };
        RetryOutcome::Scheduled(self.db_now + delay)
    }
}

/// One outcome of a settle batch, in its transaction; and whether it made
/// its job claimable now.
async fn settle_in<E: Exec + ?Sized>(
    tx: &E,
    sql: &Sql,
    now: Option<i64>,
    settle: Settle,
    tally: Option<&Tally>,
) -> Result<(Settled, bool)> {
    Ok(match settle {
        Settle::Retry(p) => {
            let (outcome, db_now) = retry_in(tx, sql, now, p, tally).await?;
            let due_now = matches!(outcome, RetryOutcome::Scheduled(t) if Some(t) <= db_now);
            (Settled::Retried(outcome), due_now)
        }
        Settle::Fail { claim, error } => (
            Settled::Failed(fail_in(tx, sql, now, &claim, error, tally).await?),
            false,
        ),
        Settle::Snooze { claim, delay } => {
            let due = snooze_in(tx, sql, now, &claim, delay).await?;
            // Due at the database's now plus the delay: now when zero.
            let due_now = due.is_some() && delay.is_zero();
            (Settled::Snoozed(due), due_now)
        }
    })
}

/// Settle a batch inside `tx` (the engine's own transaction for a batch,
/// or the application's): each outcome, and whether it made its job
/// claimable now. A claim no longer held is a not-held outcome, never an
/// error; the rows settled stay locked until `tx` ends, so no rescue or
/// claim takes them meanwhile (both skip locked rows). With a `tally`, the
/// retries and failures are counted there instead of in the throughput
/// table (see [`Tally`]).
pub(crate) async fn settle_all_in<E: Exec + ?Sized>(
    tx: &E,
    sql: &Sql,
    now: Option<i64>,
    batch: Vec<Settle>,
    tally: Option<&Tally>,
) -> Result<Vec<(Settled, bool)>> {
    let op = "job_settle";
    // Outcomes for different jobs are independent: run them at once,
    // so the connection pipelines their statements (a round trip per
    // step of the batch, not per statement: a retry is two). Each job's
    // own statements still run in order. Two outcomes for one job run
    // one after the other, as the second must see what the first did.
    let distinct = {
        let mut seen = HashSet::with_capacity(batch.len());
        batch.iter().all(|s| seen.insert(s.claim().id))
    };
    if !distinct {
        let mut settled = Vec::with_capacity(batch.len());
        for s in batch {
            settled.push(settle_in(tx, sql, now, s, tally).await?);
        }
        return Ok(settled);
    }
    // Two retries or more as a set (three statements for all of
    // them); a lone retry, the failures and the snoozes a statement
    // or two each, with scalar parameters. All pipelined.
    let as_set = batch
        .iter()
        .filter(|s| matches!(s, Settle::Retry(_)))
        .count()
        >= 2;
    tx.warm(op, &settle_statements(sql, &batch, as_set, tally))
        .await?;
    let (mut retries, mut retry_at, mut others, mut other_at) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, s) in batch.into_iter().enumerate() {
        match s {
            Settle::Retry(p) if as_set => {
                retries.push(p);
                retry_at.push(i);
            }
            other => {
                others.push(settle_in(tx, sql, now, other, tally));
                other_at.push(i);
            }
        }
    }
    let n = retry_at.len() + other_at.len();
    let (retried, others) = futures_util::future::join(
        retry_many_in(tx, sql, now, retries, tally),
        futures_util::future::join_all(others),
    )
    .await;
    let (retried, others) = first_cause(retried, others)?;
    let mut slots: Vec<Option<(Settled, bool)>> = (0..n).map(|_| None).collect();
    for (i, (outcome, due_now)) in retry_at.into_iter().zip(retried) {
        slots[i] = Some((Settled::Retried(outcome), due_now));
    }
    for (i, done) in other_at.into_iter().zip(others) {
        slots[i] = Some(done);
    }
    slots
        .into_iter()
        .map(|s| s.ok_or_else(|| Error::database(op, "a settle outcome went missing")))
        .collect()
}

/// A settle batch's retries, of distinct jobs, in three statements: lock
/// and read the held rows, then schedule some and bury the rest (both
/// pipelined). Each comes out as its single `retry_in` would have it, with
/// whether it is due now.
async fn retry_many_in<E: Exec + ?Sized>(
    tx: &E,
    sql: &Sql,
    now: Option<i64>,
    retries: Vec<JobRetryParams>,
    tally: Option<&Tally>,
) -> Result<Vec<(RetryOutcome, bool)>> {
    let op = "job_retry";
    if retries.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = retries.iter().map(|p| p.claim.id).collect();
    let held = sql::held_claims(retries.iter().map(|p| &p.claim));
    let rows = tx
        .fetch(op, &sql.retry_many_select, &[&now, &ids, &held])
        .await?;
    let mut found: HashMap<i64, HeldForRetry> = HashMap::with_capacity(rows.len());
    for r in &rows {
        let held = HeldForRetry {
            attempts: r.get(1)?,
            max_attempts: r.get(2)?,
            backoff_base_s: r.get(3)?,
            db_now: r.get(4)?,
            cancel_requested: r.get(5)?,
        };
        found.insert(r.get(0)?, held);
    }
    let (mut back_ids, mut back_due, mut back_errors, mut back_held) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut dead_ids, mut dead_errors, mut dead_held) = (Vec::new(), Vec::new(), Vec::new());
    let mut outcomes = Vec::with_capacity(retries.len());
    for (p, claim) in retries.into_iter().zip(held) {
        let id = p.claim.id;
        let Some(found) = found.get(&id) else {
            outcomes.push((id, RetryOutcome::NotHeld, false));
            continue;
        };
        let error = truncate_error(p.error);
        let outcome = found.outcome(id, p.delay);
        match outcome {
            RetryOutcome::Scheduled(run_at) => {
                back_ids.push(id);
                back_due.push(run_at);
                back_errors.push(error);
                back_held.push(claim);
            }
            _ => {
                dead_ids.push(id);
                dead_errors.push(error);
                dead_held.push(claim);
            }
        }
        outcomes.push((
            id,
            outcome,
            matches!(outcome, RetryOutcome::Scheduled(t) if t <= found.db_now),
        ));
    }
    // Both pipelined; a statement with no rows to write is not sent. Both
    // check the claims again (see `retry_in`).
    let st = settles(sql, tally);
    let (back, dead): (&Params<'_>, &Params<'_>) = (
        &[&now, &back_ids, &back_due, &back_errors, &back_held],
        &[&now, &dead_ids, &dead_errors, &dead_held],
    );
    let schedule = fetch_if(tx, !back_ids.is_empty(), &st.retry_many_update, back);
    let bury = fetch_if(tx, !dead_ids.is_empty(), &st.retry_many_bury, dead);
    let (back, dead) = futures_util::future::try_join(schedule, bury).await?;
    let mut done = HashSet::with_capacity(back.len() + dead.len());
    for r in back.iter().chain(&dead) {
        done.insert(r.get::<i64>(0)?);
    }
    tally_rows(tally, &back, 1, false)?;
    tally_rows(tally, &dead, 1, false)?;
    Ok(outcomes
        .into_iter()
        .map(|(id, outcome, due_now)| {
            if done.contains(&id) {
                (outcome, due_now)
            } else {
                (RetryOutcome::NotHeld, false)
            }
        })
        .collect())
}

/// The results of a settle batch's pipelined statements, or the error that
/// ended the transaction: once one statement fails, PostgreSQL answers the
/// statements after it with 25P02 ("current transaction is aborted"), which
/// says nothing of the cause.
fn first_cause<A, B>(a: Result<A>, mut b: Vec<Result<B>>) -> Result<(A, Vec<B>)> {
    let aborted = |e: &Error| e.to_string().contains("SQLSTATE 25P02");
    if !matches!(&a, Err(e) if !aborted(e)) {
        if let Some(i) = b.iter().position(|r| matches!(r, Err(e) if !aborted(e))) {
            b.swap_remove(i)?;
        }
    }
    let a = a?;
    Ok((a, b.into_iter().collect::<Result<_>>()?))
}

/// Run the retry statement `text` with `params` when `needed`; its rows.
async fn fetch_if<E: Exec + ?Sized>(
    tx: &E,
    needed: bool,
    text: &str,
    params: &Params<'_>,
) -> Result<Vec<crate::conn::Row>> {
    if !needed {
        return Ok(Vec::new());
    }
    tx.fetch("job_retry", text, params).await
}

/// The statements `batch` uses when its jobs are distinct, once each, to
/// prepare before its outcomes run at once.
fn settle_statements<'s>(
    sql: &'s Sql,
    batch: &[Settle],
    retries_as_set: bool,
    tally: Option<&Tally>,
) -> Vec<&'s str> {
    let st = settles(sql, tally);
    let mut texts: Vec<&str> = Vec::new();
    for s in batch {
        let needs: [&str; 3] = match s {
            Settle::Retry(_) if retries_as_set => [
                &sql.retry_many_select,
                &st.retry_many_update,
                &st.retry_many_bury,
            ],
            Settle::Retry(_) => [&sql.retry_select, &st.retry_update, &st.retry_bury],
            Settle::Fail { .. } => [&st.fail, "", ""],
            Settle::Snooze { .. } => [&sql.hand_back, "", ""],
        };
        for text in needs {
            if !text.is_empty() && !texts.contains(&text) {
                texts.push(text);
            }
        }
    }
    texts
}

/// Move a held job to dead as `failed` on `e` (a connection or a
/// transaction); false when the claim is not held.
async fn fail_in<E: Exec + ?Sized>(
    e: &E,
    sql: &Sql,
    now: Option<i64>,
    claim: &alkstore_core::Claim,
    error: String,
    tally: Option<&Tally>,
) -> Result<bool> {
    let error = truncate_error(error);
    let rows = e
        .fetch(
            "job_fail",
            &settles(sql, tally).fail,
            &[&now, &claim.id, &claim.worker, &claim.token, &error],
        )
        .await?;
    tally_rows(tally, &rows, 1, false)?;
    Ok(rows.len() == 1)
}

/// Snooze a held job on `e`: its new due time, or `None` when the claim
/// is not held (or the job was cancelled and is now dead).
async fn snooze_in<E: Exec + ?Sized>(
    e: &E,
    sql: &Sql,
    now: Option<i64>,
    claim: &alkstore_core::Claim,
    delay: Duration,
) -> Result<Option<i64>> {
    let row = fetch_opt(
        e,
        "job_snooze",
        &sql.hand_back,
        &[
            &now,
            &claim.id,
            &Some(claim.worker.clone()),
            &Some(claim.token),
            &secs(delay),
            &sql.channel,
        ],
    )
    .await?;
    match row {
        Some(r) => r.get::<Option<i64>>(0),
        None => Ok(None),
    }
}

/// Complete the jobs `claims` hold on `e` (the relaxed connection of an
/// autocommit ack, or a transaction): one flag per claim, true when it was
/// still held and its job is now done (deleted, or copied to `done` when
/// its queue keeps completed jobs). A deleted row stays locked until `e`'s
/// transaction ends, so nobody claims or rescues it meanwhile. With a
/// `tally`, the jobs are counted there instead of in the throughput table
/// (see [`Tally`]).
pub(crate) async fn ack_in<E: Exec + ?Sized>(
    e: &E,
    sql: &Sql,
    now: Option<i64>,
    claims: &[alkstore_core::Claim],
    tally: Option<&Tally>,
) -> Result<Vec<bool>> {
    let op = "job_ack";
    let st = settles(sql, tally);
    let mut flags = vec![false; claims.len()];
    // The statement looks each row's claim up by its id, so one
    // statement takes each id once; a batch that names an id twice (two
    // claims of one job) takes several rounds.
    let mut pending: Vec<usize> = (0..claims.len()).collect();
    while !pending.is_empty() {
        let mut seen = HashSet::new();
        let (round, rest): (Vec<usize>, Vec<usize>) = pending
            .into_iter()
            .partition(|&i| seen.insert(claims[i].id));
        // The plain delete first; what it left is either kept by its
        // queue (copied to `done`) or no longer held.
        let mut todo = round;
        // One claim: the scalar statement (see `Sql::ack_one`) stands in
        // for the plain delete.
        let one = todo.len() == 1;
        if let [i] = todo[..] {
            let c = &claims[i];
            let rows = e
                .fetch(op, &st.ack_one, &[&now, &c.id, &c.worker, &c.token])
                .await?;
            tally_rows(tally, &rows, 1, true)?;
            if !rows.is_empty() {
                flags[i] = true;
                todo.clear();
            }
        }
        for text in [&st.ack, &st.ack_kept].into_iter().skip(usize::from(one)) {
            if todo.is_empty() {
                break;
            }
            let ids: Vec<i64> = todo.iter().map(|&i| claims[i].id).collect();
            let held = sql::held_claims(todo.iter().map(|&i| &claims[i]));
            let rows = e.fetch(op, text, &[&now, &ids, &held]).await?;
            tally_rows(tally, &rows, 1, true)?;
            let acked: HashSet<i64> = rows.iter().map(|r| r.get(0)).collect::<Result<_>>()?;
            todo.retain(|&i| {
                flags[i] = acked.contains(&claims[i].id);
                !flags[i]
            });
        }
        pending = rest;
    }
    Ok(flags)
}

/// The driver's `job_ack`: complete the held jobs on a relaxed
/// connection.
pub(crate) async fn job_ack(engine: &PgEngine, params: Checked<JobAckParams>) -> Result<Vec<bool>> {
    let JobAckParams { claims, .. } = params.into_inner();
    let client = engine.relaxed_client().await?;
    ack_in(
        &engine.on(&client),
        &engine.inner.sql,
        engine.now_override(),
        &claims,
        None,
    )
    .await
}

/// The driver's `job_settle`: a failure or snooze alone in one statement,
/// any other batch in one transaction.
pub(crate) async fn job_settle(
    engine: &PgEngine,
    params: Checked<JobSettleParams>,
) -> Result<Settlement> {
    let JobSettleParams { mut batch, .. } = params.into_inner();
    let op = "job_settle";
    let sql = &engine.inner.sql;
    let now = engine.now_override();
    let mut client = engine.client().await?;
    // A failure or snooze alone is one statement: no transaction needed.
    let settled = if batch.len() == 1 && !matches!(batch[0], Settle::Retry(_)) {
        vec![settle_in(&engine.on(&client), sql, now, batch.remove(0), None).await?]
    } else {
        // One transaction, one WAL flush for the whole batch.
        let tx = client.transaction().await.map_err(db(op))?;
        let settled = settle_all_in(&engine.on_tx(&tx), sql, now, batch, None).await?;
        tx.commit().await.map_err(db(op))?;
        settled
    };
    let claimable_now = settled.iter().any(|(_, now)| *now);
    Ok(Settlement {
        outcomes: settled.into_iter().map(|(outcome, _)| outcome).collect(),
        claimable_now,
    })
}

/// The driver's `job_release`: hand a held claim back, due now.
pub(super) async fn job_release(
    engine: &PgEngine,
    params: Checked<JobReleaseParams>,
) -> Result<bool> {
    let JobReleaseParams { claim, .. } = params.into_inner();
    let out = engine
        .hand_back(
            "job_release",
            &engine.inner.sql.hand_back,
            claim.id,
            Some((&claim.worker, claim.token)),
            0,
        )
        .await?;
    Ok(out.is_some())
}

/// The driver's `job_unclaim`: hand job `id`'s claim back, whoever holds it.
pub(super) async fn job_unclaim(
    engine: &PgEngine,
    params: Checked<JobUnclaimParams>,
) -> Result<bool> {
    let JobUnclaimParams { id, .. } = params.into_inner();
    let out = engine
        .hand_back("job_unclaim", &engine.inner.sql.unclaim, id, None, 0)
        .await?;
    Ok(out.is_some())
}

#[cfg(test)]
mod tests;

/// A retry on a bare client (`within` outside a transaction): its select
/// and its write are separate autocommits, and a job rescued and claimed
/// anew between them must keep its new claim.
#[cfg(test)]
mod retry_on_a_bare_client;
