//! Job results on SQLite: saved with their announcement (a notification
//! row) in one write; read on a read connection.

use alkstore_core::results::{
    JobOutput, ResultDriver, ResultGetParams, ResultSaveParams, RESULTS_CHANNEL,
};
use alkstore_core::{Checked, Result};
use rusqlite::{params, OptionalExtension};

use crate::{db, SqliteEngine};

impl ResultDriver for SqliteEngine {
    async fn result_save(&self, params: Checked<ResultSaveParams>) -> Result<JobOutput> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("result_save", move |st| {
                let op = "result_save";
                let now = st.clock.now_ms();
                let expires = now.saturating_add(p.ttl_ms());
                st.conn
                    .prepare_cached("DELETE FROM __alkstore_job_result WHERE expires_at <= ?1")
                    .and_then(|mut s| s.execute([now]))
                    .map_err(db(op))?;
                st.conn
                    .prepare_cached(
                        "INSERT INTO __alkstore_job_result (job_id, value, saved_at, expires_at) \
                         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (job_id) DO UPDATE SET \
                           value = excluded.value, saved_at = excluded.saved_at, \
                           expires_at = excluded.expires_at",
                    )
                    .and_then(|mut s| s.execute(params![p.job_id, p.value, now, expires]))
                    .map_err(db(op))?;
                crate::notify::insert(&st.conn, RESULTS_CHANNEL, &p.job_id.to_string(), now)?;
                Ok(JobOutput {
                    job_id: p.job_id,
                    value: p.value,
                    saved_at_ms: now,
                    expires_at_ms: expires,
                })
            })
            .await
    }

    async fn result_get(&self, params: Checked<ResultGetParams>) -> Result<Option<JobOutput>> {
        let p = params.into_inner();
        let now = self.inner.clock.now_ms();
        self.read("result_get", move |conn| {
            conn.prepare_cached(
                "SELECT value, saved_at, expires_at FROM __alkstore_job_result \
                 WHERE job_id = ?1 AND expires_at > ?2",
            )
            .and_then(|mut s| {
                s.query_row(params![p.job_id, now], |r| {
                    Ok(JobOutput {
                        job_id: p.job_id,
                        value: r.get(0)?,
                        saved_at_ms: r.get(1)?,
                        expires_at_ms: r.get(2)?,
                    })
                })
                .optional()
            })
            .map_err(db("result_get"))
        })
        .await
    }
}
