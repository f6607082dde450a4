//! The schedule area on PostgreSQL. A fire locks the due rows it takes
//! (`FOR UPDATE SKIP LOCKED`: concurrent schedulers split the due rows and
//! never wait on each other), advances each conditional on the boundary it
//! read, and inserts the boundaries' jobs, all in one transaction. "Now" is
//! the database's clock (`$1` overrides it in tests).

use alkstore_core::schedule::{
    fired_job, manual_job, next_on_pause, next_on_set, plan_fire, schedule_not_found, FireReport,
    Fired, ScheduleDriver, ScheduleFire, ScheduleFireParams, ScheduleFiresParams, ScheduleInfo,
    ScheduleNameParams, SchedulePauseParams, ScheduleSetParams, MAX_FIRES_KEPT,
};
use alkstore_core::{Checked, Enqueued, Error, Result};

use crate::conn::{fetch_one, fetch_opt, Exec, Row};
use crate::groups::sql::NOW_MS;
use crate::queues::enqueue::{enqueue_text, insert_jobs};
use crate::schema::{tables, QualifiedTable};
use crate::{db, PgEngine};

/// The columns [`info`] reads, in its order.
const COLS: &str = "name, spec, tz, queue, payload, priority, max_catch_up, paused, \
                    next_fire_at, last_boundary, updated_at";

/// The schedule statements, built once per engine with the quoted schema.
pub(crate) struct ScheduleSql {
    now: String,
    get_for_update: String,
    upsert: String,
    remove: String,
    set_paused: String,
    list: String,
    due: String,
    advance: String,
    next_due: String,
    record_fires: String,
    prune_fires: String,
    fires: String,
}

impl ScheduleSql {
    pub(crate) fn new(schema: &str) -> Self {
        let t = QualifiedTable::new(schema, tables::SCHEDULE);
        let fire = QualifiedTable::new(schema, tables::SCHEDULE_FIRE);
        ScheduleSql {
            now: format!("SELECT {NOW_MS}"),
            get_for_update: format!("SELECT {COLS} FROM {t} WHERE name = $1 FOR UPDATE"),
            upsert: format!(
                "INSERT INTO {t} (name, spec, tz, queue, payload, priority, max_catch_up, \
                   next_fire_at, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) \
                 ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, tz = excluded.tz, \
                   queue = excluded.queue, payload = excluded.payload, \
                   priority = excluded.priority, max_catch_up = excluded.max_catch_up, \
                   next_fire_at = excluded.next_fire_at, updated_at = excluded.updated_at \
                 RETURNING {COLS}"
            ),
            // Its history goes with it.
            remove: format!(
                "WITH fires AS (DELETE FROM {fire} WHERE name = $1) DELETE FROM {t} WHERE name = $1"
            ),
            set_paused: format!(
                "UPDATE {t} SET paused = $2, next_fire_at = $3, updated_at = $4 \
                 WHERE name = $1 RETURNING {COLS}"
            ),
            list: format!("SELECT {COLS} FROM {t} ORDER BY name"),
            // The columns `info` reads, then the store's time.
            due: format!(
                "SELECT {COLS}, {NOW_MS} FROM {t} WHERE NOT paused AND next_fire_at <= {NOW_MS} \
                 ORDER BY next_fire_at LIMIT $2 FOR UPDATE SKIP LOCKED"
            ),
            // Every due schedule's advance in one statement, each
            // conditional on the boundary read; returns the ones advanced.
            advance: format!(
                "UPDATE {t} s SET next_fire_at = a.next, \
                   last_boundary = COALESCE(a.last, s.last_boundary) \
                 FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[]) \
                   AS a(name, old, next, last) \
                 WHERE s.name = a.name AND s.next_fire_at = a.old \
                 RETURNING s.name"
            ),
            record_fires: format!(
                "INSERT INTO {fire} (name, boundary_ms, queue, job_id, fired_at, manual) \
                 SELECT a.name, a.boundary, a.queue, a.job, {NOW_MS}, $6 \
                 FROM unnest($2::text[], $3::bigint[], $4::text[], $5::bigint[]) \
                   AS a(name, boundary, queue, job)"
            ),
            // Run after the insert (a statement sees the rows of those
            // before it), so exactly the newest are kept.
            prune_fires: format!(
                "DELETE FROM {fire} f WHERE f.name = ANY($1) AND f.id NOT IN \
                   (SELECT g.id FROM {fire} g WHERE g.name = f.name \
                    ORDER BY g.fired_at DESC, g.id DESC LIMIT $2)"
            ),
            fires: format!(
                "SELECT name, boundary_ms, queue, job_id, fired_at, manual FROM {fire} \
                 WHERE name = $1 ORDER BY fired_at DESC, id DESC LIMIT $2"
            ),
            next_due: format!(
                "SELECT (SELECT MIN(next_fire_at) FROM {t} WHERE NOT paused), \
                   COALESCE($1::bigint, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)"
            ),
        }
    }
}

fn info(r: &Row) -> Result<ScheduleInfo> {
    let max_catch_up: i32 = r.get(6)?;
    Ok(ScheduleInfo {
        name: r.get(0)?,
        spec: r.get(1)?,
        tz: r.get(2)?,
        queue: r.get(3)?,
        payload: r.get(4)?,
        priority: r.get(5)?,
        max_catch_up: u32::try_from(max_catch_up).unwrap_or(1),
        paused: r.get(7)?,
        next_fire_at_ms: r.get(8)?,
        last_boundary_ms: r.get(9)?,
        updated_at_ms: r.get(10)?,
    })
}

fn catch_up_param(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The store's time (unix ms) on `e`: `now_ms` (the injected clock), or
/// the database's at this statement.
async fn schedule_now<E: Exec + ?Sized>(
    e: &E,
    sql: &ScheduleSql,
    now_ms: Option<i64>,
    op: &'static str,
) -> Result<i64> {
    fetch_one(e, op, &sql.now, &[&now_ms]).await?.get(0)
}

/// Keep `fired` in their schedules' histories on `e` (a transaction), and
/// only each one's newest [`MAX_FIRES_KEPT`].
async fn record_fires<E: Exec + ?Sized>(
    e: &E,
    sql: &ScheduleSql,
    now_ms: Option<i64>,
    fired: &[Fired],
    manual: bool,
) -> Result<()> {
    if fired.is_empty() {
        return Ok(());
    }
    let op = "schedule_fires";
    let names: Vec<&str> = fired.iter().map(|f| f.schedule.as_str()).collect();
    let boundaries: Vec<i64> = fired.iter().map(|f| f.boundary_ms).collect();
    let queues: Vec<&str> = fired.iter().map(|f| f.queue.as_str()).collect();
    let jobs: Vec<i64> = fired.iter().map(|f| f.job_id).collect();
    e.exec(
        op,
        &sql.record_fires,
        &[&now_ms, &names, &boundaries, &queues, &jobs, &manual],
    )
    .await?;
    let mut distinct = names;
    distinct.sort_unstable();
    distinct.dedup();
    e.exec(
        op,
        &sql.prune_fires,
        &[&distinct, &i64::from(MAX_FIRES_KEPT)],
    )
    .await?;
    Ok(())
}

/// Register or change a schedule on `e`, which must be a transaction (the
/// schedule's row is read `FOR UPDATE`, then written).
pub(crate) async fn schedule_set_in<E: Exec + ?Sized>(
    e: &E,
    sql: &ScheduleSql,
    now_ms: Option<i64>,
    p: &ScheduleSetParams,
) -> Result<ScheduleInfo> {
    let op = "schedule_set";
    let spec = p.parsed()?;
    let now = schedule_now(e, sql, now_ms, op).await?;
    let old = match fetch_opt(e, op, &sql.get_for_update, &[&p.name]).await? {
        Some(r) => Some(info(&r)?),
        None => None,
    };
    let next = next_on_set(old.as_ref(), p, &spec, now);
    let row = fetch_one(
        e,
        op,
        &sql.upsert,
        &[
            &p.name,
            &p.spec,
            &p.tz,
            &p.queue,
            &p.payload,
            &p.priority,
            &catch_up_param(p.max_catch_up),
            &next,
            &now,
        ],
    )
    .await?;
    info(&row)
}

/// Remove a schedule on `e`; false when there was none.
pub(crate) async fn schedule_remove_in<E: Exec + ?Sized>(
    e: &E,
    sql: &ScheduleSql,
    p: &ScheduleNameParams,
) -> Result<bool> {
    let n = e.exec("schedule_remove", &sql.remove, &[&p.name]).await?;
    Ok(n > 0)
}

/// Pause or resume a schedule on `e`, which must be a transaction (read
/// `FOR UPDATE`, then written). [`NotFound`](Error::NotFound) when there
/// is none.
pub(crate) async fn schedule_set_paused_in<E: Exec + ?Sized>(
    e: &E,
    sql: &ScheduleSql,
    now_ms: Option<i64>,
    p: &SchedulePauseParams,
) -> Result<ScheduleInfo> {
    let op = "schedule_set_paused";
    let paused = p.to.is_paused();
    let now = schedule_now(e, sql, now_ms, op).await?;
    let old = match fetch_opt(e, op, &sql.get_for_update, &[&p.name]).await? {
        Some(r) => info(&r)?,
        None => return Err(schedule_not_found(&p.name)),
    };
    if old.paused == paused {
        return Ok(old);
    }
    let next = next_on_pause(&old, paused, now)?;
    let row = fetch_one(e, op, &sql.set_paused, &[&p.name, &paused, &next, &now]).await?;
    info(&row)
}

/// The autocommit `schedule_set`: read and write in one transaction.
pub(crate) async fn schedule_set(engine: &PgEngine, p: &ScheduleSetParams) -> Result<ScheduleInfo> {
    let op = "schedule_set";
    let mut client = engine.client().await?;
    let tx = client.transaction().await.map_err(db(op))?;
    let sql = &engine.inner.schedule_sql;
    let out = schedule_set_in(&engine.on_tx(&tx), sql, engine.now_ms_override(), p).await?;
    tx.commit().await.map_err(db(op))?;
    Ok(out)
}

/// The autocommit `schedule_pause` and `schedule_resume`.
pub(crate) async fn schedule_set_paused(
    engine: &PgEngine,
    p: &SchedulePauseParams,
) -> Result<ScheduleInfo> {
    let op = "schedule_set_paused";
    let sql = &engine.inner.schedule_sql;
    let mut client = engine.client().await?;
    let tx = client.transaction().await.map_err(db(op))?;
    let out = schedule_set_paused_in(&engine.on_tx(&tx), sql, engine.now_ms_override(), p).await?;
    tx.commit().await.map_err(db(op))?;
    Ok(out)
}

impl ScheduleDriver for PgEngine {
    async fn schedule_list(&self) -> Result<Vec<ScheduleInfo>> {
        let client = self.client().await?;
        let rows = self
            .on(&client)
            .fetch("schedule_list", &self.inner.schedule_sql.list, &[])
            .await?;
        rows.iter().map(info).collect()
    }

    async fn schedule_fire_due(&self, params: Checked<ScheduleFireParams>) -> Result<FireReport> {
        let p = params.into_inner();
        let op = "schedule_fire_due";
        let sql = &self.inner.schedule_sql;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db(op))?;
        let on = self.on_tx(&tx);
        let due = on
            .fetch(
                op,
                &sql.due,
                &[&self.now_ms_override(), &i64::from(p.limit)],
            )
            .await?;
        let mut report = FireReport::default();
        // Work out every due schedule's boundaries, then advance them all in
        // one statement and insert all their jobs in another.
        let mut plans = Vec::with_capacity(due.len());
        let (mut names, mut olds, mut nexts, mut lasts) = (vec![], vec![], vec![], vec![]);
        for r in &due {
            let (s, now): (ScheduleInfo, i64) = (info(r)?, r.get(11)?);
            let Some(plan) = plan_fire(&s, now) else {
                continue;
            };
            names.push(s.name.clone());
            olds.push(plan.read);
            nexts.push(plan.next);
            lasts.push(plan.boundaries.last().copied());
            plans.push((s, plan));
        }
        if !plans.is_empty() {
            let advanced: std::collections::HashSet<String> = on
                .fetch(op, &sql.advance, &[&names, &olds, &nexts, &lasts])
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect::<Result<_>>()?;
            plans.retain(|(s, _)| advanced.contains(&s.name));
            let jobs: Vec<_> = plans
                .iter()
                .flat_map(|(s, plan)| {
                    plan.boundaries
                        .iter()
                        .map(|b| fired_job(&s.name, &s.queue, &s.payload, s.priority, *b))
                })
                .collect();
            let enqueue = enqueue_text(&self.inner.sql, true);
            let mut ids = insert_jobs(
                &on,
                enqueue,
                &self.inner.sql,
                jobs,
                self.now_override(),
                crate::announce::Wakes::AtCommit,
            )
            .await?
            .into_iter();
            for (s, plan) in plans {
                report.skipped += plan.skipped;
                for b in plan.boundaries {
                    let Some(Enqueued::Inserted(job_id) | Enqueued::Duplicate(job_id)) = ids.next()
                    else {
                        return Err(Error::database(op, "fewer job ids than fired boundaries"));
                    };
                    report.fired.push(Fired {
                        schedule: s.name.clone(),
                        boundary_ms: b,
                        queue: s.queue.clone(),
                        job_id,
                    });
                }
            }
        }
        record_fires(&on, sql, self.now_ms_override(), &report.fired, false).await?;
        tx.commit().await.map_err(db(op))?;
        let next_due = self
            .on(&client)
            .row(op, &sql.next_due, &[&self.now_ms_override()])
            .await?;
        report.next_due_ms = next_due.get(0);
        report.now_ms = next_due.get(1);
        Ok(report)
    }

    async fn schedule_run_now(&self, params: Checked<ScheduleNameParams>) -> Result<Option<Fired>> {
        let p = params.into_inner();
        let op = "schedule_run_now";
        let sql = &self.inner.schedule_sql;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db(op))?;
        let on = self.on_tx(&tx);
        let Some(row) = fetch_opt(&on, op, &sql.get_for_update, &[&p.name]).await? else {
            return Ok(None);
        };
        let d = info(&row)?;
        let now = schedule_now(&on, sql, self.now_ms_override(), op).await?;
        let job = manual_job(&d.name, &d.queue, &d.payload, d.priority, now);
        // No unique key: the plain statement.
        let enqueue = enqueue_text(&self.inner.sql, false);
        let ids = insert_jobs(
            &on,
            enqueue,
            &self.inner.sql,
            vec![job],
            self.now_override(),
            crate::announce::Wakes::AtCommit,
        )
        .await?;
        let Some(Enqueued::Inserted(job_id) | Enqueued::Duplicate(job_id)) = ids.first().cloned()
        else {
            return Err(Error::database(op, "no job id"));
        };
        let fired = Fired {
            schedule: d.name,
            boundary_ms: now,
            queue: d.queue,
            job_id,
        };
        record_fires(
            &on,
            sql,
            self.now_ms_override(),
            std::slice::from_ref(&fired),
            true,
        )
        .await?;
        tx.commit().await.map_err(db(op))?;
        Ok(Some(fired))
    }

    async fn schedule_fires(
        &self,
        params: Checked<ScheduleFiresParams>,
    ) -> Result<Vec<ScheduleFire>> {
        let p = params.into_inner();
        let rows = self
            .query(
                "schedule_fires",
                &self.inner.schedule_sql.fires,
                &[&p.name, &i64::from(p.limit)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| ScheduleFire {
                schedule: r.get(0),
                boundary_ms: r.get(1),
                queue: r.get(2),
                job_id: r.get(3),
                fired_at_ms: r.get(4),
                manual: r.get(5),
            })
            .collect())
    }
}
