//! Job queue statements.

use std::collections::HashSet;

use alkstore_core::queue::validate_worker;
use alkstore_core::{
    backoff_delay_s, Claim, ClaimParams, DeadListParams, DeadSelect, Enqueued, Error, Job, JobInfo,
    JobListParams, NewJob, QueueEngine, QueueStats, Result, RetryOutcome, RetryParams, SweepReport,
};
use rusqlite::{params, Connection, OptionalExtension};

use crate::rows::{claimed, job_info, JOB_COLS, MOVE_COLS};
use crate::{db, SqliteEngine};

/// Insert one validated job at `now`. Shared by the engine and the outbox.
pub(crate) fn insert_job(conn: &Connection, job: &NewJob, now: i64) -> Result<Enqueued> {
    let op = "job_enqueue";
    let (run_at, expires_at) = job.times(now);
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO __alkstore_job (queue, payload, priority, run_at, max_attempts, created_at, \
               expires_at, visibility_timeout_s, backoff_base_s, dead_letter_retention_s, unique_key) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
             ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING",
        )
        .map_err(db(op))?;
    let inserted = stmt
        .execute(params![
            job.queue,
            job.payload,
            job.opts.priority,
            run_at,
            job.max_attempts(),
            now,
            expires_at,
            job.visibility_timeout_s(),
            job.backoff_base_s(),
            job.dead_letter_retention_s(),
            job.opts.unique_key,
        ])
        .map_err(db(op))?;
    if inserted == 1 {
        return Ok(Enqueued::Inserted(conn.last_insert_rowid()));
    }
    let id: i64 = conn
        .prepare_cached("SELECT id FROM __alkstore_job WHERE queue = ?1 AND unique_key = ?2")
        .and_then(|mut s| s.query_row(params![job.queue, job.opts.unique_key], |r| r.get(0)))
        .map_err(db(op))?;
    Ok(Enqueued::Duplicate(id))
}

/// Move the job rows selected by `where_sql` to the dead table.
fn move_to_dead(
    conn: &Connection,
    op: &'static str,
    where_sql: &str,
    reason: &str,
    error: Option<&str>,
    now: i64,
    args: &[&dyn rusqlite::ToSql],
) -> Result<u64> {
    // Parameters ?1..?n belong to `where_sql`; reason, error, now follow.
    let n = args.len();
    let insert = format!(
        "INSERT OR REPLACE INTO __alkstore_dead ({MOVE_COLS}, last_error, reason, died_at) \
         SELECT {MOVE_COLS}, COALESCE(?{e}, last_error), ?{r}, ?{t} FROM __alkstore_job WHERE {where_sql}",
        r = n + 1,
        e = n + 2,
        t = n + 3,
    );
    let mut all: Vec<&dyn rusqlite::ToSql> = args.to_vec();
    all.push(&reason);
    all.push(&error);
    all.push(&now);
    let moved = conn
        .prepare_cached(&insert)
        .and_then(|mut s| s.execute(all.as_slice()))
        .map_err(db(op))?;
    if moved > 0 {
        conn.prepare_cached(&format!("DELETE FROM __alkstore_job WHERE {where_sql}"))
            .and_then(|mut s| s.execute(args))
            .map_err(db(op))?;
    }
    Ok(moved as u64)
}

/// Per-queue maintenance before a claim, once per clock second: move pending
/// jobs past their expiry to dead, and hand expired claims back (pending
/// again, or dead when out of attempts). Expiries and claims are whole
/// seconds, so after this runs at second `now` no claimable row is expired.
///
/// Keeping the expiry test out of the claim statement itself matters: a
/// parameter compared with `expires_at` lets SQLite consult the partial
/// expiry index, which makes it re-prepare the claim on every call.
fn rescue_expired(conn: &Connection, queue: &str, now: i64) -> Result<u64> {
    let op = "job_claim";
    move_to_dead(
        conn,
        op,
        "queue = ?1 AND state = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?2",
        "expired",
        None,
        now,
        &[&queue, &now],
    )?;
    let exhausted = move_to_dead(
        conn,
        op,
        "queue = ?1 AND state = 'processing' AND claim_expires_at <= ?2 AND attempts >= max_attempts",
        "exhausted",
        Some("claim expired on the last attempt"),
        now,
        &[&queue, &now],
    )?;
    conn.prepare_cached(
        "UPDATE __alkstore_job SET state = 'pending', claim_expires_at = NULL \
         WHERE queue = ?1 AND state = 'processing' AND claim_expires_at <= ?2",
    )
    .and_then(|mut s| s.execute(params![queue, now]))
    .map_err(db(op))?;
    Ok(exhausted)
}

/// The predicate of a valid claim: ?1 id, ?2 worker, ?3 attempt, ?4 now.
const HELD: &str =
    "id = ?1 AND state = 'processing' AND worker_id = ?2 AND attempts = ?3 AND claim_expires_at > ?4";

fn validate_claim(claim: &Claim) -> Result<()> {
    validate_worker(&claim.worker)
}

impl QueueEngine for SqliteEngine {
    async fn job_enqueue(&self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>> {
        NewJob::validate_batch(&jobs, self.limits())?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let queues = NewJob::distinct_queues(&jobs);
        let out = self
            .inner
            .writer
            .write("job_enqueue", move |st| {
                let now = st.clock.now();
                jobs.iter().map(|j| insert_job(&st.conn, j, now)).collect()
            })
            .await?;
        for q in &queues {
            self.hub().queue(q);
        }
        Ok(out)
    }

    async fn job_claim(&self, p: ClaimParams) -> Result<Vec<Job>> {
        p.validate(self.limits())?;
        self.inner
            .writer
            .write("job_claim", move |st| {
                let now = st.clock.now();
                if st.last_rescue.get(&p.queue) != Some(&now) {
                    st.last_rescue.remove(&p.queue);
                    rescue_expired(&st.conn, &p.queue, now)?;
                    if st.last_rescue.len() >= crate::writer::MAX_RESCUE_MARKS {
                        st.last_rescue.clear();
                    }
                    st.last_rescue.insert(p.queue.clone(), now);
                }
                // `LIMIT (SELECT ?4)`, not `LIMIT ?4`: SQLite re-prepares a
                // statement on every call when a bound LIMIT feeds its planner.
                let mut stmt = st
                    .conn
                    .prepare_cached(
                        "UPDATE __alkstore_job SET state = 'processing', attempts = attempts + 1, \
                           worker_id = ?1, claimed_at = ?2, claim_expires_at = ?2 + visibility_timeout_s \
                         WHERE id IN (SELECT id FROM __alkstore_job \
                           WHERE queue = ?3 AND state = 'pending' AND run_at <= ?2 \
                           ORDER BY priority DESC, run_at, id LIMIT (SELECT ?4)) \
                         RETURNING id, payload, priority, attempts, max_attempts, claim_expires_at, \
                           run_at, created_at, unique_key, claimed_at",
                    )
                    .map_err(db("job_claim"))?;
                let rows = stmt
                    .query_map(params![p.worker, now, p.queue, p.limit], |r| {
                        claimed(r, &p.queue, &p.worker)
                    })
                    .and_then(|rows| rows.collect::<rusqlite::Result<Vec<Job>>>());
                let mut jobs = match rows {
                    Ok(jobs) => jobs,
                    Err(e) => {
                        st.last_rescue.remove(&p.queue);
                        return Err(Error::database("job_claim", e));
                    }
                };
                jobs.sort_by(Job::claim_order);
                Ok(jobs)
            })
            .await
    }

    async fn job_ack(&self, claims: Vec<Claim>) -> Result<Vec<bool>> {
        for c in &claims {
            validate_claim(c)?;
        }
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        self.inner
            .writer
            .write("job_ack", move |st| {
                let now = st.clock.now();
                let mut stmt = st
                    .conn
                    .prepare_cached(&format!("DELETE FROM __alkstore_job WHERE {HELD}"))
                    .map_err(db("job_ack"))?;
                claims
                    .iter()
                    .map(|c| {
                        stmt.execute(params![c.id, c.worker, c.attempt, now])
                            .map(|n| n == 1)
                            .map_err(db("job_ack"))
                    })
                    .collect()
            })
            .await
    }

    async fn job_retry(&self, p: RetryParams) -> Result<RetryOutcome> {
        validate_claim(&p.claim)?;
        let outcome = self
            .inner
            .writer
            .write("job_retry", move |st| {
                let op = "job_retry";
                let now = st.clock.now();
                let c = &p.claim;
                let row: Option<(u32, u32, i64)> = st
                    .conn
                    .prepare_cached(&format!(
                        "SELECT attempts, max_attempts, backoff_base_s FROM __alkstore_job WHERE {HELD}"
                    ))
                    .and_then(|mut s| {
                        s.query_row(params![c.id, c.worker, c.attempt, now], |r| {
                            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                        })
                        .optional()
                    })
                    .map_err(db(op))?;
                let Some((attempts, max_attempts, base)) = row else {
                    return Ok(RetryOutcome::NotHeld);
                };
                if attempts >= max_attempts {
                    move_to_dead(
                        &st.conn,
                        op,
                        "id = ?1",
                        "exhausted",
                        Some(&p.error),
                        now,
                        &[&c.id],
                    )?;
                    return Ok(RetryOutcome::Dead);
                }
                let delay = match p.delay {
                    Some(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 4),
                    None => backoff_delay_s(base, attempts, c.id),
                };
                let run_at = now + delay;
                st.conn
                    .prepare_cached(
                        "UPDATE __alkstore_job SET state = 'pending', run_at = ?2, claim_expires_at = NULL, \
                         last_error = ?3 WHERE id = ?1",
                    )
                    .and_then(|mut s| s.execute(params![c.id, run_at, p.error]))
                    .map_err(db(op))?;
                Ok(RetryOutcome::Scheduled(run_at))
            })
            .await?;
        // A retry due at once (no backoff) is claimable now: say so.
        if matches!(outcome, RetryOutcome::Scheduled(t) if t <= self.now()) {
            self.hub().all();
        }
        Ok(outcome)
    }

    async fn job_fail(&self, claim: Claim, error: String) -> Result<bool> {
        validate_claim(&claim)?;
        self.inner
            .writer
            .write("job_fail", move |st| {
                let now = st.clock.now();
                let moved = move_to_dead(
                    &st.conn,
                    "job_fail",
                    HELD,
                    "failed",
                    Some(&error),
                    now,
                    &[&claim.id, &claim.worker, &claim.attempt, &now],
                )?;
                Ok(moved == 1)
            })
            .await
    }

    async fn job_heartbeat(&self, claim: Claim) -> Result<Option<i64>> {
        validate_claim(&claim)?;
        self.inner
            .writer
            .write("job_heartbeat", move |st| {
                let now = st.clock.now();
                st.conn
                    .prepare_cached(&format!(
                        "UPDATE __alkstore_job SET claim_expires_at = ?4 + visibility_timeout_s \
                         WHERE {HELD} RETURNING claim_expires_at"
                    ))
                    .and_then(|mut s| {
                        s.query_row(params![claim.id, claim.worker, claim.attempt, now], |r| {
                            r.get(0)
                        })
                        .optional()
                    })
                    .map_err(db("job_heartbeat"))
            })
            .await
    }

    async fn job_release(&self, claim: Claim) -> Result<bool> {
        validate_claim(&claim)?;
        let released = self
            .inner
            .writer
            .write("job_release", move |st| {
                let now = st.clock.now();
                st.conn
                    .prepare_cached(&format!(
                        "UPDATE __alkstore_job SET state = 'pending', attempts = attempts - 1, \
                         claim_expires_at = NULL WHERE {HELD}"
                    ))
                    .and_then(|mut s| {
                        s.execute(params![claim.id, claim.worker, claim.attempt, now])
                    })
                    .map(|n| n == 1)
                    .map_err(db("job_release"))
            })
            .await?;
        if released {
            self.hub().all();
        }
        Ok(released)
    }

    fn wake_subscribe(&self) -> tokio::sync::broadcast::Receiver<alkstore_core::Wake> {
        self.wake_hints()
    }

    async fn job_cancel(&self, id: i64) -> Result<bool> {
        self.inner
            .writer
            .write("job_cancel", move |st| {
                st.conn
                    .prepare_cached("DELETE FROM __alkstore_job WHERE id = ?1")
                    .and_then(|mut s| s.execute([id]))
                    .map(|n| n == 1)
                    .map_err(db("job_cancel"))
            })
            .await
    }

    async fn job_get(&self, id: i64) -> Result<Option<JobInfo>> {
        self.read("job_get", move |conn| {
            let live = conn
                .prepare_cached(&format!(
                    "SELECT {JOB_COLS}, state FROM __alkstore_job WHERE id = ?1"
                ))
                .and_then(|mut s| s.query_row([id], |r| job_info(r, false)).optional())
                .map_err(db("job_get"))?;
            if live.is_some() {
                return Ok(live);
            }
            conn.prepare_cached(&format!(
                "SELECT {JOB_COLS}, reason, died_at FROM __alkstore_dead WHERE id = ?1"
            ))
            .and_then(|mut s| s.query_row([id], |r| job_info(r, true)).optional())
            .map_err(db("job_get"))
        })
        .await
    }

    async fn queue_stats(&self, queue: String) -> Result<QueueStats> {
        alkstore_core::queue::validate_queue_name(&queue)?;
        let now = self.now();
        self.read("queue_stats", move |conn| {
            let op = "queue_stats";
            let (ready, scheduled, processing, oldest): (i64, i64, i64, Option<i64>) = conn
                .prepare_cached(
                    "SELECT COALESCE(SUM(state = 'pending' AND run_at <= ?2), 0), \
                            COALESCE(SUM(state = 'pending' AND run_at > ?2), 0), \
                            COALESCE(SUM(state = 'processing'), 0), \
                            MIN(CASE WHEN state = 'pending' AND run_at <= ?2 THEN run_at END) \
                     FROM __alkstore_job WHERE queue = ?1",
                )
                .and_then(|mut s| {
                    s.query_row(params![queue, now], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                    })
                })
                .map_err(db(op))?;
            let dead: i64 = conn
                .prepare_cached("SELECT COUNT(*) FROM __alkstore_dead WHERE queue = ?1")
                .and_then(|mut s| s.query_row([&queue], |r| r.get(0)))
                .map_err(db(op))?;
            Ok(QueueStats {
                queue,
                ready: ready as u64,
                scheduled: scheduled as u64,
                processing: processing as u64,
                dead: dead as u64,
                oldest_ready_age_s: oldest.map(|t| (now - t).max(0)),
            })
        })
        .await
    }

    async fn job_list(&self, p: JobListParams) -> Result<Vec<JobInfo>> {
        p.validate()?;
        self.read("job_list", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {JOB_COLS}, state FROM __alkstore_job \
                 WHERE (?1 IS NULL OR queue = ?1) AND (?2 IS NULL OR state = ?2) AND id > ?3 \
                 ORDER BY id LIMIT (SELECT ?4)"
            ))
            .and_then(|mut s| {
                s.query_map(
                    params![
                        p.queue,
                        p.state.map(|s| s.as_str()),
                        p.after_id.unwrap_or(i64::MIN),
                        p.limit
                    ],
                    |r| job_info(r, false),
                )?
                .collect()
            })
            .map_err(db("job_list"))
        })
        .await
    }

    async fn queue_list(&self) -> Result<Vec<String>> {
        self.read("queue_list", |conn| {
            conn.prepare_cached(
                "SELECT DISTINCT queue FROM __alkstore_job UNION SELECT DISTINCT queue FROM __alkstore_dead ORDER BY 1",
            )
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(db("queue_list"))
        })
        .await
    }

    async fn queue_sweep(&self) -> Result<SweepReport> {
        self.inner
            .writer
            .write("queue_sweep", |st| {
                let op = "queue_sweep";
                let now = st.clock.now();
                let expired = move_to_dead(
                    &st.conn,
                    op,
                    "state = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?1",
                    "expired",
                    None,
                    now,
                    &[&now],
                )?;
                let exhausted = move_to_dead(
                    &st.conn,
                    op,
                    "state = 'processing' AND claim_expires_at <= ?1 AND attempts >= max_attempts",
                    "exhausted",
                    Some("claim expired on the last attempt"),
                    now,
                    &[&now],
                )?;
                let dead_pruned = st
                    .conn
                    .prepare_cached(
                        "DELETE FROM __alkstore_dead WHERE dead_letter_retention_s IS NOT NULL \
                         AND died_at + dead_letter_retention_s <= ?1",
                    )
                    .and_then(|mut s| s.execute([now]))
                    .map_err(db(op))? as u64;
                Ok(SweepReport {
                    expired,
                    exhausted,
                    dead_pruned,
                })
            })
            .await
    }

    async fn dead_list(&self, p: DeadListParams) -> Result<Vec<JobInfo>> {
        p.validate()?;
        self.read("dead_list", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {JOB_COLS}, reason, died_at FROM __alkstore_dead \
                 WHERE (?1 IS NULL OR queue = ?1) AND id > ?2 ORDER BY id LIMIT (SELECT ?3)"
            ))
            .and_then(|mut s| {
                s.query_map(
                    params![p.queue, p.after_id.unwrap_or(i64::MIN), p.limit],
                    |r| job_info(r, true),
                )?
                .collect()
            })
            .map_err(db("dead_list"))
        })
        .await
    }

    async fn dead_requeue(&self, sel: DeadSelect) -> Result<u64> {
        sel.validate()?;
        self.inner
            .writer
            .write("dead_requeue", move |st| {
                let op = "dead_requeue";
                let now = st.clock.now();
                let ids = selected_dead_ids(&st.conn, &sel)?;
                let mut insert = st
                    .conn
                    .prepare_cached(
                        "INSERT INTO __alkstore_job (id, queue, payload, priority, run_at, attempts, \
                           max_attempts, created_at, visibility_timeout_s, backoff_base_s, \
                           dead_letter_retention_s, unique_key, last_error) \
                         SELECT id, queue, payload, priority, ?2, 0, max_attempts, created_at, \
                           visibility_timeout_s, backoff_base_s, dead_letter_retention_s, unique_key, last_error \
                         FROM __alkstore_dead WHERE id = ?1 \
                         ON CONFLICT DO NOTHING",
                    )
                    .map_err(db(op))?;
                let mut delete = st
                    .conn
                    .prepare_cached("DELETE FROM __alkstore_dead WHERE id = ?1")
                    .map_err(db(op))?;
                let mut n = 0;
                for id in ids {
                    if insert.execute(params![id, now]).map_err(db(op))? == 1 {
                        delete.execute([id]).map_err(db(op))?;
                        n += 1;
                    }
                }
                Ok(n)
            })
            .await
            .inspect(|n| {
                if *n > 0 {
                    self.hub().all();
                }
            })
    }

    async fn dead_purge(&self, sel: DeadSelect) -> Result<u64> {
        sel.validate()?;
        self.inner
            .writer
            .write("dead_purge", move |st| {
                let ids = selected_dead_ids(&st.conn, &sel)?;
                let mut delete = st
                    .conn
                    .prepare_cached("DELETE FROM __alkstore_dead WHERE id = ?1")
                    .map_err(db("dead_purge"))?;
                let mut n = 0;
                for id in ids {
                    n += delete.execute([id]).map_err(db("dead_purge"))? as u64;
                }
                Ok(n)
            })
            .await
    }
}

fn selected_dead_ids(conn: &Connection, sel: &DeadSelect) -> Result<Vec<i64>> {
    let op = "dead_select";
    let in_queue: Vec<i64> = conn
        .prepare_cached(
            "SELECT id FROM __alkstore_dead WHERE (?1 IS NULL OR queue = ?1) ORDER BY id",
        )
        .and_then(|mut s| s.query_map([&sel.queue], |r| r.get(0))?.collect())
        .map_err(db(op))?;
    Ok(match &sel.ids {
        None => in_queue,
        Some(ids) => {
            let wanted: HashSet<i64> = ids.iter().copied().collect();
            in_queue
                .into_iter()
                .filter(|id| wanted.contains(id))
                .collect()
        }
    })
}
