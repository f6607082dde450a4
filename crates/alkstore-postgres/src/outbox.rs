//! Enqueue inside the caller's own PostgreSQL transaction.

use alkstore_core::{Engine, Enqueued, Error, NewJob, Result};
use tokio_postgres::GenericClient;

use crate::queues::{enqueue_text, insert_jobs, is_keyed};
use crate::PgEngine;

impl PgEngine {
    /// Enqueue `job` through the caller's client or open transaction, so it
    /// commits or rolls back with the caller's own writes (transactional
    /// outbox). Validated against this store's limits, into this store's
    /// schema; times come from the database clock. Workers are woken by the
    /// job table's NOTIFY trigger at commit. Use this crate's re-exported
    /// [`tokio_postgres`] so both sides use the same
    /// driver.
    ///
    /// ```no_run
    /// # async fn demo(engine: &alkstore_postgres::PgEngine, client: &mut tokio_postgres::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_core::NewJob;
    /// let tx = client.transaction().await?;
    /// tx.execute("INSERT INTO orders (id) VALUES (1)", &[]).await?;
    /// engine.job_enqueue_in(&tx, NewJob::new("emails", b"order 1".to_vec())).await?;
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    pub async fn job_enqueue_in<C: GenericClient + Sync>(
        &self,
        client: &C,
        job: NewJob,
    ) -> Result<Enqueued> {
        job.validate(self.limits())?;
        let sql = &self.inner.sql;
        let jobs = vec![job];
        let text = enqueue_text(sql, is_keyed(&jobs));
        let mut out = insert_jobs(client, text, sql, jobs, self.now_override()).await?;
        out.pop()
            .ok_or_else(|| Error::database("job_enqueue", "the insert returned no id"))
    }
}
