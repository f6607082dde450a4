//! Enqueue inside the caller's own PostgreSQL transaction.

use alkstore_core::stream::{NewEvent, StreamPublishParams};
use alkstore_core::{Checked, Engine, Enqueued, Error, NewJob, Result};
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

    /// Publish `events` through the caller's client or open transaction:
    /// they commit or roll back with the caller's own writes, and a
    /// rollback drops them. Returns their offsets. Subscribers are woken by
    /// the event table's NOTIFY trigger at commit. Readers do not see the
    /// events, nor any published after them, until the transaction ends
    /// (that is what makes reads gap-safe), so keep it short.
    ///
    /// ```no_run
    /// # async fn demo(engine: &alkstore_postgres::PgEngine, client: &mut tokio_postgres::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_core::stream::NewEvent;
    /// let tx = client.transaction().await?;
    /// tx.execute("INSERT INTO orders (id) VALUES (1)", &[]).await?;
    /// engine.stream_publish_in(&tx, vec![NewEvent::new("orders", b"order 1 placed".to_vec())]).await?;
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    pub async fn stream_publish_in<C: GenericClient + Sync>(
        &self,
        client: &C,
        events: Vec<NewEvent>,
    ) -> Result<Vec<i64>> {
        let events = Checked::<StreamPublishParams>::new(events, self.limits())?.into_inner();
        let stmt = client
            .prepare(&self.inner.stream_sql.publish)
            .await
            .map_err(crate::db("stream_publish"))?;
        crate::streams::publish_with(client, &stmt, self.now_override(), &events.events).await
    }
}
