//! The schedule area on PostgreSQL. A fire locks the due rows it takes
//! (`FOR UPDATE SKIP LOCKED`: concurrent schedulers split the due rows and
//! never wait on each other), advances each conditional on the boundary it
//! read, and inserts the boundaries' jobs, all in one transaction. "Now" is
//! the database's clock (`$1` overrides it in tests).

use alkstore_core::schedule::{
    due_boundaries, fired_job, FireReport, Fired, ScheduleDriver, ScheduleFireParams, ScheduleInfo,
    ScheduleNameParams, ScheduleSetParams, Spec,
};
use alkstore_core::{Checked, Enqueued, Error, Result};
use tokio_postgres::{GenericClient, Row};

use crate::groups::sql::NOW_MS;
use crate::queues::{enqueue_text, insert_jobs};
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
}

impl ScheduleSql {
    pub(crate) fn new(schema: &str) -> Self {
        let t = QualifiedTable::new(schema, tables::SCHEDULE);
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
            remove: format!("DELETE FROM {t} WHERE name = $1"),
            set_paused: format!(
                "UPDATE {t} SET paused = $2, next_fire_at = $3, updated_at = $4 \
                 WHERE name = $1 RETURNING {COLS}"
            ),
            list: format!("SELECT {COLS} FROM {t} ORDER BY name"),
            due: format!(
                "SELECT name, spec, tz, queue, payload, priority, max_catch_up, next_fire_at, \
                   {NOW_MS} FROM {t} WHERE NOT paused AND next_fire_at <= {NOW_MS} \
                 ORDER BY next_fire_at LIMIT $2 FOR UPDATE SKIP LOCKED"
            ),
            advance: format!(
                "UPDATE {t} SET next_fire_at = $3, last_boundary = COALESCE($4, last_boundary) \
                 WHERE name = $1 AND next_fire_at = $2"
            ),
            next_due: format!("SELECT MIN(next_fire_at) FROM {t} WHERE NOT paused"),
        }
    }
}

fn info(r: &Row) -> ScheduleInfo {
    let max_catch_up: i32 = r.get(6);
    ScheduleInfo {
        name: r.get(0),
        spec: r.get(1),
        tz: r.get(2),
        queue: r.get(3),
        payload: r.get(4),
        priority: r.get(5),
        max_catch_up: u32::try_from(max_catch_up).unwrap_or(1),
        paused: r.get(7),
        next_fire_at_ms: r.get(8),
        last_boundary_ms: r.get(9),
        updated_at_ms: r.get(10),
    }
}

fn not_found(name: &str) -> Error {
    Error::NotFound {
        what: format!("schedule {name:?}"),
        detail: "it was never registered, or was removed".into(),
    }
}

fn catch_up_param(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl PgEngine {
    /// The store's time (unix ms) inside `client`'s transaction.
    async fn schedule_now(&self, client: &impl GenericClient, op: &'static str) -> Result<i64> {
        let row = client
            .query_one(&self.inner.schedule_sql.now, &[&self.now_ms_override()])
            .await
            .map_err(db(op))?;
        Ok(row.get(0))
    }
}

impl ScheduleDriver for PgEngine {
    async fn schedule_set(&self, params: Checked<ScheduleSetParams>) -> Result<ScheduleInfo> {
        let p = params.into_inner();
        let op = "schedule_set";
        let spec = p.parsed()?;
        let sql = &self.inner.schedule_sql;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db(op))?;
        let now = self.schedule_now(&*tx, op).await?;
        let old = tx
            .query_opt(&sql.get_for_update, &[&p.name])
            .await
            .map_err(db(op))?
            .map(|r| info(&r));
        // Same spec and zone: keep the pending boundary.
        let next = match old {
            Some(o) if o.spec == p.spec && o.tz == p.tz => o.next_fire_at_ms,
            _ => spec.next_after(now),
        };
        let row = tx
            .query_one(
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
            .await
            .map_err(db(op))?;
        tx.commit().await.map_err(db(op))?;
        Ok(info(&row))
    }

    async fn schedule_remove(&self, params: Checked<ScheduleNameParams>) -> Result<bool> {
        let p = params.into_inner();
        let client = self.client().await?;
        let n = client
            .execute(&self.inner.schedule_sql.remove, &[&p.name])
            .await
            .map_err(db("schedule_remove"))?;
        Ok(n > 0)
    }

    async fn schedule_set_paused(
        &self,
        params: Checked<ScheduleNameParams>,
        paused: bool,
    ) -> Result<ScheduleInfo> {
        let p = params.into_inner();
        let op = "schedule_set_paused";
        let sql = &self.inner.schedule_sql;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db(op))?;
        let now = self.schedule_now(&*tx, op).await?;
        let old = tx
            .query_opt(&sql.get_for_update, &[&p.name])
            .await
            .map_err(db(op))?
            .map(|r| info(&r))
            .ok_or_else(|| not_found(&p.name))?;
        if old.paused == paused {
            return Ok(old);
        }
        // Resuming skips what passed while paused.
        let next = if paused {
            old.next_fire_at_ms
        } else {
            Spec::parse(&old.spec, old.tz.as_deref())?.next_after(now)
        };
        let row = tx
            .query_one(&sql.set_paused, &[&p.name, &paused, &next, &now])
            .await
            .map_err(db(op))?;
        tx.commit().await.map_err(db(op))?;
        Ok(info(&row))
    }

    async fn schedule_list(&self) -> Result<Vec<ScheduleInfo>> {
        let rows = self
            .query("schedule_list", &self.inner.schedule_sql.list, &[])
            .await?;
        Ok(rows.iter().map(info).collect())
    }

    async fn schedule_fire_due(&self, params: Checked<ScheduleFireParams>) -> Result<FireReport> {
        let p = params.into_inner();
        let op = "schedule_fire_due";
        let sql = &self.inner.schedule_sql;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db(op))?;
        let due = tx
            .query(&sql.due, &[&self.now_ms_override(), &i64::from(p.limit)])
            .await
            .map_err(db(op))?;
        let mut report = FireReport::default();
        let enqueue = enqueue_text(&self.inner.sql, true);
        for r in &due {
            let (name, spec, tz, queue): (String, String, Option<String>, String) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            let (payload, priority, max_catch_up, next_fire_at, now): (
                Vec<u8>,
                i32,
                i32,
                i64,
                i64,
            ) = (r.get(4), r.get(5), r.get(6), r.get(7), r.get(8));
            let spec = Spec::parse(&spec, tz.as_deref())?;
            let (boundaries, skipped, next) = due_boundaries(
                &spec,
                next_fire_at,
                now,
                u32::try_from(max_catch_up).unwrap_or(1),
            );
            let advanced = tx
                .execute(
                    &sql.advance,
                    &[&name, &next_fire_at, &next, &boundaries.last()],
                )
                .await
                .map_err(db(op))?;
            if advanced == 0 {
                continue;
            }
            report.skipped += skipped;
            let jobs = boundaries
                .iter()
                .map(|b| fired_job(&name, &queue, &payload, priority, *b))
                .collect();
            let ids =
                insert_jobs(&*tx, enqueue, &self.inner.sql, jobs, self.now_override()).await?;
            for (b, id) in boundaries.iter().zip(ids) {
                let (Enqueued::Inserted(job_id) | Enqueued::Duplicate(job_id)) = id;
                report.fired.push(Fired {
                    schedule: name.clone(),
                    boundary_ms: *b,
                    queue: queue.clone(),
                    job_id,
                });
            }
        }
        tx.commit().await.map_err(db(op))?;
        let next_due = client.query_one(&sql.next_due, &[]).await.map_err(db(op))?;
        report.next_due_ms = next_due.get(0);
        Ok(report)
    }
}
