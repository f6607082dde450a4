//! Notify/listen on PostgreSQL: `pg_notify` on the schema's message
//! channel; every engine's LISTEN connection turns the messages into
//! `Wake::Message`s for its listeners. Nothing is kept.

use alkstore_core::notify::{
    encode_message, Notification, NotifyDriver, NotifyParams, NotifyPollParams,
};
use alkstore_core::{Checked, Error, Result};
use tokio_postgres::GenericClient;

use crate::schema::message_channel;
use crate::{db, PgEngine};

/// Send a validated notification on `client` (in its transaction, if it is
/// one: PostgreSQL delivers it at commit). Shared by the engine and the
/// outbox.
pub(crate) async fn send<C: GenericClient + Sync>(
    client: &C,
    schema: &str,
    channel: &str,
    payload: &str,
) -> Result<()> {
    client
        .execute(
            "SELECT pg_notify($1, $2)",
            &[&message_channel(schema), &encode_message(channel, payload)],
        )
        .await
        .map_err(db("notify"))?;
    Ok(())
}

impl PgEngine {
    /// Send a notification through the caller's client or open transaction:
    /// listeners get it only if that transaction commits. Validated like
    /// [`NotifyEngine::notify`](alkstore_core::NotifyEngine::notify).
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
        alkstore_core::notify::validate_notify(channel, payload)?;
        send(client, &self.inner.opts.schema, channel, payload).await
    }
}

impl NotifyDriver for PgEngine {
    async fn notify(&self, params: Checked<NotifyParams>) -> Result<()> {
        let p = params.into_inner();
        let client = self.client().await?;
        send(&**client, &self.inner.opts.schema, &p.channel, &p.payload).await
    }

    async fn notify_poll(&self, _params: Checked<NotifyPollParams>) -> Result<Vec<Notification>> {
        Ok(Vec::new())
    }

    async fn notify_ready(&self) -> Result<()> {
        // Starts the LISTEN connection if nobody had subscribed yet.
        let _hints = self.wake_hints();
        let mut up = self.inner.listening.subscribe();
        let came_up = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            up.wait_for(|on| *on).await.is_ok()
        })
        .await;
        if came_up == Ok(true) {
            Ok(())
        } else {
            Err(Error::connect(
                self.inner.target.clone(),
                "the LISTEN connection did not come up within 10 s",
            ))
        }
    }

    async fn notify_head(&self) -> Result<i64> {
        Ok(0)
    }
}
