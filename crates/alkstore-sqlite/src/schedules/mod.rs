//! The schedule area on SQLite: every write on the write connection (one
//! writer: a fire's conditional advance can never lose a race, and is kept
//! conditional all the same), timed by the engine's clock.

use alkstore_core::schedule::{
    fired_job, manual_job, next_on_pause, next_on_set, plan_fire, schedule_not_found, FireReport,
    Fired, ScheduleDriver, ScheduleFire, ScheduleFireParams, ScheduleFiresParams, ScheduleInfo,
    ScheduleNameParams, ScheduleSetParams, MAX_FIRES_KEPT,
};
use alkstore_core::{Checked, Enqueued, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::queues::enqueue::insert_job;
use crate::writer::queue_state::JOB_ID_BLOCK;
use crate::{db, SqliteEngine};

/// The columns [`info`] reads, in its order.
const COLS: &str = "name, spec, tz, queue, payload, priority, max_catch_up, paused, \
                    next_fire_at, last_boundary, updated_at";

fn info(r: &rusqlite::Row<'_>) -> rusqlite::Result<ScheduleInfo> {
    Ok(ScheduleInfo {
        name: r.get(0)?,
        spec: r.get(1)?,
        tz: r.get(2)?,
        queue: r.get(3)?,
        payload: r.get(4)?,
        priority: r.get(5)?,
        max_catch_up: r.get(6)?,
        paused: r.get(7)?,
        next_fire_at_ms: r.get(8)?,
        last_boundary_ms: r.get(9)?,
        updated_at_ms: r.get(10)?,
    })
}

fn get(conn: &Connection, op: &'static str, name: &str) -> Result<Option<ScheduleInfo>> {
    conn.prepare_cached(&format!(
        "SELECT {COLS} FROM __alkstore_schedule WHERE name = ?1"
    ))
    .and_then(|mut s| s.query_row([name], info).optional())
    .map_err(db(op))
}

/// Register or change a schedule at `now_ms`. Shared by the writer and
/// transactions.
pub(crate) fn set_in(
    conn: &Connection,
    p: &ScheduleSetParams,
    now_ms: i64,
) -> Result<ScheduleInfo> {
    let op = "schedule_set";
    let spec = p.parsed()?;
    let old = get(conn, op, &p.name)?;
    let next = next_on_set(old.as_ref(), p, &spec, now_ms);
    conn.prepare_cached(&format!(
        "INSERT INTO __alkstore_schedule (name, spec, tz, queue, payload, priority, \
           max_catch_up, next_fire_at, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9) \
         ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, tz = excluded.tz, \
           queue = excluded.queue, payload = excluded.payload, \
           priority = excluded.priority, max_catch_up = excluded.max_catch_up, \
           next_fire_at = excluded.next_fire_at, updated_at = excluded.updated_at \
         RETURNING {COLS}"
    ))
    .and_then(|mut s| {
        s.query_row(
            params![
                p.name,
                p.spec,
                p.tz,
                p.queue,
                p.payload,
                p.priority,
                p.max_catch_up,
                next,
                now_ms
            ],
            info,
        )
    })
    .map_err(db(op))
}

/// Remove a schedule; `false` when there was none. Shared by the writer
/// and transactions.
pub(crate) fn remove_in(conn: &Connection, name: &str) -> Result<bool> {
    conn.prepare_cached("DELETE FROM __alkstore_schedule_fire WHERE name = ?1")
        .and_then(|mut s| s.execute([name]))
        .map_err(db("schedule_remove"))?;
    conn.prepare_cached("DELETE FROM __alkstore_schedule WHERE name = ?1")
        .and_then(|mut s| s.execute([name]))
        .map(|n| n > 0)
        .map_err(db("schedule_remove"))
}

/// Keep `fired` in its schedule's history, and only the newest
/// [`MAX_FIRES_KEPT`] of it.
fn record_fire(
    conn: &Connection,
    op: &'static str,
    fired: &Fired,
    at_ms: i64,
    manual: bool,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO __alkstore_schedule_fire (name, boundary_ms, queue, job_id, fired_at, manual) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut s| {
        s.execute(params![
            fired.schedule,
            fired.boundary_ms,
            fired.queue,
            fired.job_id,
            at_ms,
            manual
        ])
    })
    .map_err(db(op))?;
    conn.prepare_cached(
        "DELETE FROM __alkstore_schedule_fire WHERE name = ?1 AND rowid NOT IN \
           (SELECT rowid FROM __alkstore_schedule_fire WHERE name = ?1 \
            ORDER BY fired_at DESC, rowid DESC LIMIT ?2)",
    )
    .and_then(|mut s| s.execute(params![fired.schedule, MAX_FIRES_KEPT]))
    .map_err(db(op))?;
    Ok(())
}

/// Pause or resume a schedule at `now_ms`
/// ([`NotFound`](alkstore_core::Error::NotFound) when there is none).
/// Shared by the writer and transactions.
pub(crate) fn set_paused_in(
    conn: &Connection,
    name: &str,
    paused: bool,
    now_ms: i64,
) -> Result<ScheduleInfo> {
    let op = "schedule_set_paused";
    let old = get(conn, op, name)?.ok_or_else(|| schedule_not_found(name))?;
    if old.paused == paused {
        return Ok(old);
    }
    let next = next_on_pause(&old, paused, now_ms)?;
    conn.prepare_cached(&format!(
        "UPDATE __alkstore_schedule SET paused = ?2, next_fire_at = ?3, \
           updated_at = ?4 WHERE name = ?1 RETURNING {COLS}"
    ))
    .and_then(|mut s| s.query_row(params![name, paused, next, now_ms], info))
    .map_err(db(op))
}

impl ScheduleDriver for SqliteEngine {
    async fn schedule_list(&self) -> Result<Vec<ScheduleInfo>> {
        self.read("schedule_list", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {COLS} FROM __alkstore_schedule ORDER BY name"
            ))
            .and_then(|mut s| s.query_map([], info)?.collect())
            .map_err(db("schedule_list"))
        })
        .await
    }

    async fn schedule_fire_due(&self, params: Checked<ScheduleFireParams>) -> Result<FireReport> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("schedule_fire_due", move |st| {
                let op = "schedule_fire_due";
                let now = st.clock.now_ms();
                let due: Vec<ScheduleInfo> = st
                    .conn
                    .prepare_cached(&format!(
                        "SELECT {COLS} FROM __alkstore_schedule \
                         WHERE paused = 0 AND next_fire_at <= ?1 ORDER BY next_fire_at LIMIT ?2"
                    ))
                    .and_then(|mut s| s.query_map(params![now, p.limit], info)?.collect())
                    .map_err(db(op))?;
                let mut report = FireReport::default();
                for d in due {
                    let Some(plan) = plan_fire(&d, now) else {
                        continue;
                    };
                    let advanced = st
                        .conn
                        .prepare_cached(
                            "UPDATE __alkstore_schedule SET next_fire_at = ?3, \
                               last_boundary = COALESCE(?4, last_boundary) \
                             WHERE name = ?1 AND next_fire_at = ?2",
                        )
                        .and_then(|mut s| {
                            s.execute(params![
                                d.name,
                                plan.read,
                                plan.next,
                                plan.boundaries.last()
                            ])
                        })
                        .map_err(db(op))?;
                    if advanced == 0 {
                        continue;
                    }
                    report.skipped += plan.skipped;
                    for b in plan.boundaries {
                        let job = fired_job(&d.name, &d.queue, &d.payload, d.priority, b);
                        let at = now.div_euclid(1_000);
                        let (conn, ids) = (&st.conn, &mut st.job_ids);
                        let id = match insert_job(conn, &job, at, ids, JOB_ID_BLOCK)? {
                            Enqueued::Inserted(id) | Enqueued::Duplicate(id) => id,
                        };
                        let fired = Fired {
                            schedule: d.name.clone(),
                            boundary_ms: b,
                            queue: d.queue.clone(),
                            job_id: id,
                        };
                        record_fire(&st.conn, op, &fired, now, false)?;
                        report.fired.push(fired);
                    }
                }
                report.next_due_ms = st
                    .conn
                    .prepare_cached(
                        "SELECT MIN(next_fire_at) FROM __alkstore_schedule WHERE paused = 0",
                    )
                    .and_then(|mut s| s.query_row([], |r| r.get(0)))
                    .map_err(db(op))?;
                report.now_ms = st.clock.now_ms();
                Ok(report)
            })
            .await
    }

    async fn schedule_run_now(&self, params: Checked<ScheduleNameParams>) -> Result<Option<Fired>> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("schedule_run_now", move |st| {
                let op = "schedule_run_now";
                let Some(d) = get(&st.conn, op, &p.name)? else {
                    return Ok(None);
                };
                let now = st.clock.now_ms();
                let job = manual_job(&d.name, &d.queue, &d.payload, d.priority, now);
                let (conn, ids) = (&st.conn, &mut st.job_ids);
                let id = match insert_job(conn, &job, now.div_euclid(1_000), ids, JOB_ID_BLOCK)? {
                    Enqueued::Inserted(id) | Enqueued::Duplicate(id) => id,
                };
                let fired = Fired {
                    schedule: d.name,
                    boundary_ms: now,
                    queue: d.queue,
                    job_id: id,
                };
                record_fire(&st.conn, op, &fired, now, true)?;
                Ok(Some(fired))
            })
            .await
    }

    async fn schedule_fires(
        &self,
        params: Checked<ScheduleFiresParams>,
    ) -> Result<Vec<ScheduleFire>> {
        let p = params.into_inner();
        self.read("schedule_fires", move |conn| {
            conn.prepare_cached(
                "SELECT name, boundary_ms, queue, job_id, fired_at, manual \
                 FROM __alkstore_schedule_fire WHERE name = ?1 \
                 ORDER BY fired_at DESC, rowid DESC LIMIT ?2",
            )
            .and_then(|mut s| {
                s.query_map(params![p.name, p.limit], |r| {
                    Ok(ScheduleFire {
                        schedule: r.get(0)?,
                        boundary_ms: r.get(1)?,
                        queue: r.get(2)?,
                        job_id: r.get(3)?,
                        fired_at_ms: r.get(4)?,
                        manual: r.get(5)?,
                    })
                })?
                .collect()
            })
            .map_err(db("schedule_fires"))
        })
        .await
    }
}
