//! Notify/listen on PostgreSQL: `pg_notify` on the schema's message
//! channel; every engine's LISTEN connection turns the messages into
//! `Wake::Message`s for its listeners. Nothing is kept.

use alkstore_core::notify::{encode_message, Notification, NotifyDriver, NotifyPollParams};
use alkstore_core::{Checked, Error, Result};

use crate::conn::Exec;
use crate::schema::message_channel;
use crate::PgEngine;

/// Send a validated notification on `e` (in its transaction, if it is
/// one: PostgreSQL delivers it at commit, and drops it at rollback).
pub(crate) async fn send_in<E: Exec + ?Sized>(
    e: &E,
    schema: &str,
    channel: &str,
    payload: &str,
) -> Result<()> {
    e.exec(
        "notify",
        "SELECT pg_notify($1, $2)",
        &[&message_channel(schema), &encode_message(channel, payload)],
    )
    .await?;
    Ok(())
}

impl NotifyDriver for PgEngine {
    async fn notify_poll(&self, _params: Checked<NotifyPollParams>) -> Result<Vec<Notification>> {
        Ok(Vec::new())
    }

    async fn notify_ready(&self) -> Result<()> {
        if !self.can_listen() {
            return Err(Error::connect(
                self.inner.target.clone(),
                "nothing can LISTEN through a transaction-mode pooler: \
                 give the store URL a listen_url (straight to the server) to listen",
            ));
        }
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
