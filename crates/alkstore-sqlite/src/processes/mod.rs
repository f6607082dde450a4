//! The process registry on SQLite: a beat is one upsert (and a delete of
//! rows dead past the retention) on the write connection, timed by the
//! engine's clock.

use alkstore_core::group::ttl_ms;
use alkstore_core::process::{
    ProcessBeatParams, ProcessDriver, ProcessInfo, ProcessOrder, ProcessOrderParams,
    ProcessRemoveParams, PROCESS_RETENTION,
};
use alkstore_core::{Checked, Result};
use rusqlite::params;

use crate::{db, SqliteEngine};

impl ProcessDriver for SqliteEngine {
    async fn process_beat(&self, params: Checked<ProcessBeatParams>) -> Result<ProcessOrder> {
        let p = params.into_inner();
        let roles = serde_json::to_string(&p.roles).unwrap_or_else(|_| "[]".into());
        self.inner
            .writer
            .write("process_beat", move |st| {
                let now = st.clock.now_ms();
                st.conn
                    .prepare_cached("DELETE FROM __alkstore_process WHERE expires_at < ?1")
                    .and_then(|mut s| s.execute([now - ttl_ms(PROCESS_RETENTION)]))
                    .map_err(db("process_beat"))?;
                let ord: String = st
                    .conn
                    .prepare_cached(
                        "INSERT INTO __alkstore_process (id, kind, host, pid, version, roles, \
                           concurrency, running, started_at, heartbeat_at, expires_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10 + ?11) \
                         ON CONFLICT (id) DO UPDATE SET \
                           ord = CASE WHEN started_at = excluded.started_at THEN ord \
                             ELSE 'run' END, kind = excluded.kind, \
                           host = excluded.host, pid = excluded.pid, version = excluded.version, \
                           roles = excluded.roles, concurrency = excluded.concurrency, \
                           running = excluded.running, started_at = excluded.started_at, \
                           heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at \
                         RETURNING ord",
                    )
                    .and_then(|mut s| {
                        s.query_row(
                            params![
                                p.id,
                                p.kind,
                                p.host,
                                p.pid,
                                p.version,
                                roles,
                                p.concurrency,
                                p.running,
                                p.started_at_ms,
                                now,
                                ttl_ms(p.ttl)
                            ],
                            |r| r.get(0),
                        )
                    })
                    .map_err(db("process_beat"))?;
                Ok(ProcessOrder::parse(&ord))
            })
            .await
    }

    async fn process_order(&self, params: Checked<ProcessOrderParams>) -> Result<bool> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("process_order", move |st| {
                let n = st
                    .conn
                    .prepare_cached("UPDATE __alkstore_process SET ord = ?2 WHERE id = ?1")
                    .and_then(|mut s| s.execute(params![p.id, p.order.as_str()]))
                    .map_err(db("process_order"))?;
                Ok(n > 0)
            })
            .await
    }

    async fn process_remove(&self, params: Checked<ProcessRemoveParams>) -> Result<bool> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("process_remove", move |st| {
                let n = st
                    .conn
                    .prepare_cached("DELETE FROM __alkstore_process WHERE id = ?1")
                    .and_then(|mut s| s.execute([p.id]))
                    .map_err(db("process_remove"))?;
                Ok(n > 0)
            })
            .await
    }

    async fn process_list(&self) -> Result<Vec<ProcessInfo>> {
        let now = self.inner.clock.now_ms();
        self.read("process_list", move |conn| {
            conn.prepare_cached(
                "SELECT id, kind, host, pid, version, roles, concurrency, running, started_at, \
                   heartbeat_at, expires_at, ord FROM __alkstore_process \
                 WHERE expires_at >= ?1 ORDER BY kind, id",
            )
            .and_then(|mut s| {
                s.query_map([now - ttl_ms(PROCESS_RETENTION)], |r| {
                    let roles: String = r.get(5)?;
                    let expires_at_ms: i64 = r.get(10)?;
                    let ord: String = r.get(11)?;
                    Ok(ProcessInfo {
                        id: r.get(0)?,
                        kind: r.get(1)?,
                        host: r.get(2)?,
                        pid: r.get(3)?,
                        version: r.get(4)?,
                        roles: serde_json::from_str(&roles).unwrap_or_default(),
                        concurrency: r.get(6)?,
                        running: r.get(7)?,
                        started_at_ms: r.get(8)?,
                        heartbeat_at_ms: r.get(9)?,
                        expires_at_ms,
                        alive: expires_at_ms > now,
                        order: ProcessOrder::parse(&ord),
                    })
                })?
                .collect()
            })
            .map_err(db("process_list"))
        })
        .await
    }
}
