//! The process registry on PostgreSQL: a beat is one statement (the upsert,
//! and a delete of rows dead past the retention), by the database's clock
//! (`$1` overrides it in tests with an injected clock).

use alkstore_core::group::ttl_ms;
use alkstore_core::process::{
    ProcessBeatParams, ProcessDriver, ProcessInfo, ProcessOrder, ProcessOrderParams,
    ProcessRemoveParams, PROCESS_RETENTION,
};
use alkstore_core::{Checked, Result};

use crate::groups::sql::NOW_MS;
use crate::schema::{tables, QualifiedTable};
use crate::PgEngine;

/// The process statements, built once per engine with the quoted schema.
pub(crate) struct ProcessSql {
    beat: String,
    order: String,
    remove: String,
    list: String,
}

impl ProcessSql {
    pub(crate) fn new(schema: &str) -> Self {
        let process = QualifiedTable::new(schema, tables::PROCESS);
        ProcessSql {
            beat: format!(
                "WITH gone AS (DELETE FROM {process} WHERE expires_at < {NOW_MS} - $12 \
                   AND id <> $2) \
                 INSERT INTO {process} AS p (id, kind, host, pid, version, roles, concurrency, \
                   running, started_at, heartbeat_at, expires_at) \
                 VALUES ($2, $3, $4, $5, $6, $7, $8, $9, $10, {NOW_MS}, {NOW_MS} + $11) \
                 ON CONFLICT (id) DO UPDATE SET \
                   ord = CASE WHEN p.started_at = excluded.started_at THEN p.ord ELSE 'run' END, \
                   kind = excluded.kind, host = excluded.host, \
                   pid = excluded.pid, version = excluded.version, roles = excluded.roles, \
                   concurrency = excluded.concurrency, running = excluded.running, \
                   started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, \
                   expires_at = excluded.expires_at \
                 RETURNING ord"
            ),
            order: format!("UPDATE {process} SET ord = $2 WHERE id = $1 RETURNING 1"),
            remove: format!("DELETE FROM {process} WHERE id = $1 RETURNING 1"),
            list: format!(
                "SELECT id, kind, host, pid, version, roles, concurrency, running, started_at, \
                   heartbeat_at, expires_at, ord, expires_at > {NOW_MS} \
                 FROM {process} WHERE expires_at >= {NOW_MS} - $2 ORDER BY kind, id"
            ),
        }
    }
}

impl ProcessDriver for PgEngine {
    async fn process_beat(&self, params: Checked<ProcessBeatParams>) -> Result<ProcessOrder> {
        let p = params.into_inner();
        let rows = self
            // A beat lost to a server crash is made again a heartbeat
            // later: it may commit without waiting for its WAL flush.
            .query_relaxed(
                "process_beat",
                &self.inner.process_sql.beat,
                &[
                    &self.now_ms_override(),
                    &p.id,
                    &p.kind,
                    &p.host,
                    &i64::from(p.pid),
                    &p.version,
                    &p.roles,
                    &i64::from(p.concurrency),
                    &i64::from(p.running),
                    &p.started_at_ms,
                    &ttl_ms(p.ttl),
                    &ttl_ms(PROCESS_RETENTION),
                ],
            )
            .await?;
        Ok(rows
            .first()
            .map_or(ProcessOrder::Run, |r| ProcessOrder::parse(r.get(0))))
    }

    async fn process_order(&self, params: Checked<ProcessOrderParams>) -> Result<bool> {
        let p = params.into_inner();
        let rows = self
            .query(
                "process_order",
                &self.inner.process_sql.order,
                &[&p.id, &p.order.as_str()],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn process_remove(&self, params: Checked<ProcessRemoveParams>) -> Result<bool> {
        let p = params.into_inner();
        let rows = self
            .query("process_remove", &self.inner.process_sql.remove, &[&p.id])
            .await?;
        Ok(!rows.is_empty())
    }

    async fn process_list(&self) -> Result<Vec<ProcessInfo>> {
        let rows = self
            .query(
                "process_list",
                &self.inner.process_sql.list,
                &[&self.now_ms_override(), &ttl_ms(PROCESS_RETENTION)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| ProcessInfo {
                id: r.get(0),
                kind: r.get(1),
                host: r.get(2),
                pid: u32::try_from(r.get::<_, i64>(3)).unwrap_or(0),
                version: r.get(4),
                roles: r.get(5),
                concurrency: u32::try_from(r.get::<_, i64>(6)).unwrap_or(0),
                running: u32::try_from(r.get::<_, i64>(7)).unwrap_or(0),
                started_at_ms: r.get(8),
                heartbeat_at_ms: r.get(9),
                expires_at_ms: r.get(10),
                order: ProcessOrder::parse(r.get(11)),
                alive: r.get(12),
            })
            .collect())
    }
}
