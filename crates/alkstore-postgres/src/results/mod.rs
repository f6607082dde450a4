//! Job results on PostgreSQL: the save and its announcement (`pg_notify`
//! on the schema's message channel) in one transaction; times by the
//! database's clock (`$1` overrides it in tests).

use alkstore_core::results::{
    JobOutput, ResultDriver, ResultGetParams, ResultSaveParams, RESULTS_CHANNEL,
};
use alkstore_core::{Checked, Result};

use crate::groups::sql::NOW_MS;
use crate::schema::{tables, QualifiedTable};
use crate::{db, PgEngine};

/// The job-result statements, built once per engine with the quoted schema.
pub(crate) struct ResultSql {
    prune: String,
    save: String,
    get: String,
}

impl ResultSql {
    pub(crate) fn new(schema: &str) -> Self {
        let t = QualifiedTable::new(schema, tables::JOB_RESULT);
        ResultSql {
            prune: format!("DELETE FROM {t} WHERE expires_at <= {NOW_MS}"),
            save: format!(
                "INSERT INTO {t} (job_id, value, saved_at, expires_at) \
                 VALUES ($2, $3, {NOW_MS}, {NOW_MS} + $4) ON CONFLICT (job_id) DO UPDATE SET \
                   value = excluded.value, saved_at = excluded.saved_at, \
                   expires_at = excluded.expires_at \
                 RETURNING saved_at, expires_at"
            ),
            get: format!(
                "SELECT value, saved_at, expires_at FROM {t} \
                 WHERE job_id = $2 AND expires_at > {NOW_MS}"
            ),
        }
    }
}

impl ResultDriver for PgEngine {
    async fn result_save(&self, params: Checked<ResultSaveParams>) -> Result<JobOutput> {
        let p = params.into_inner();
        let op = "result_save";
        let sql = &self.inner.result_sql;
        let now = self.now_ms_override();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db(op))?;
        let on = self.on_tx(&tx);
        on.changed(op, &sql.prune, &[&now]).await?;
        let row = on
            .row(op, &sql.save, &[&now, &p.job_id, &p.value, &p.ttl_ms()])
            .await?;
        crate::notify::send_in(
            &on,
            &self.inner.opts.schema,
            RESULTS_CHANNEL,
            &p.job_id.to_string(),
        )
        .await?;
        tx.commit().await.map_err(db(op))?;
        Ok(JobOutput {
            job_id: p.job_id,
            value: p.value,
            saved_at_ms: row.get(0),
            expires_at_ms: row.get(1),
        })
    }

    async fn result_get(&self, params: Checked<ResultGetParams>) -> Result<Option<JobOutput>> {
        let p = params.into_inner();
        let rows = self
            .query(
                "result_get",
                &self.inner.result_sql.get,
                &[&self.now_ms_override(), &p.job_id],
            )
            .await?;
        Ok(rows.first().map(|r| JobOutput {
            job_id: p.job_id,
            value: r.get(0),
            saved_at_ms: r.get(1),
            expires_at_ms: r.get(2),
        }))
    }
}
