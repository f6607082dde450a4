//! The first outbox calls, kept as thin aliases of [`Within`](crate::Within)'s
//! (`engine.within(&tx).job_enqueue(…)` and the rest), which carry every
//! transactional call.

use alkstore_core::stream::NewEvent;
use alkstore_core::{Enqueued, Error, NewJob, Result};
use tokio_postgres::GenericClient;

use crate::PgEngine;

impl PgEngine {
    /// Alias of [`engine.within(client).job_enqueue(job)`](crate::Within::job_enqueue)
    /// for one job: enqueue it through the caller's open transaction, so it
    /// commits or rolls back with the caller's own writes.
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
        self.within(client)
            .job_enqueue(vec![job])
            .await?
            .pop()
            .ok_or_else(|| Error::database("job_enqueue", "the insert returned no id"))
    }

    /// Alias of [`engine.within(client).stream_publish(events)`](crate::Within::stream_publish):
    /// publish through the caller's open transaction; returns the offsets.
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
        self.within(client).stream_publish(events).await
    }

    /// Alias of [`engine.within(client).notify(channel, payload)`](crate::Within::notify):
    /// listeners get it only if the caller's transaction commits.
    ///
    /// ```no_run
    /// # async fn demo(engine: &alkstore_postgres::PgEngine, client: &mut tokio_postgres::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let tx = client.transaction().await?;
    /// tx.execute("UPDATE orders SET state = 'paid' WHERE id = 1", &[]).await?;
    /// engine.notify_in(&tx, "orders", "1 paid").await?;
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    pub async fn notify_in<C: GenericClient + Sync>(
        &self,
        client: &C,
        channel: &str,
        payload: &str,
    ) -> Result<()> {
        self.within(client).notify(channel, payload).await
    }
}
