//! LISTEN on a dedicated connection (never a pooled one), turning
//! notifications into wake hints. Reconnects with backoff after errors or a
//! server restart, and hints "everything" after each (re)connect, since
//! notifications sent while disconnected are lost.

use std::sync::{Arc, Weak};
use std::time::Duration;

use alkstore_core::notify::{decode_message, Notification};
use alkstore_core::WakeHub;
use futures_util::StreamExt;
use tokio_postgres::AsyncMessage;

use crate::schema::{message_channel, notify_channel, quote_identifier, stream_channel};
use crate::tls::Connector;

/// Listen with the engine's connection settings (its TLS included).
// Without the `tls` feature the connector is `NoTls`, which is `Copy`.
#[cfg_attr(not(feature = "tls"), allow(clippy::clone_on_copy))]
pub(crate) fn spawn(
    mut config: tokio_postgres::Config,
    connector: Connector,
    schema: String,
    hub: Weak<WakeHub>,
    listening: Arc<tokio::sync::watch::Sender<bool>>,
) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("no tokio runtime: LISTEN wake-ups disabled, relying on polls");
        return;
    };
    config.connect_timeout(Duration::from_secs(5));
    config.keepalives_idle(Duration::from_secs(30));
    handle.spawn(async move {
        let channels = Channels {
            queues: notify_channel(&schema),
            streams: stream_channel(&schema),
            messages: message_channel(&schema),
        };
        // The LISTEN connection lost: 100 ms, doubling to 2 s.
        let mut backoff =
            alkstore_core::Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        loop {
            if hub.upgrade().is_none() {
                return;
            }
            let outcome =
                listen_once(&config, connector.clone(), &channels, &hub, &listening).await;
            listening.send_replace(false);
            match outcome {
                Ok(()) => backoff.reset(),
                Err(e) => {
                    tracing::warn!(error = %e, "LISTEN connection lost; reconnecting");
                }
            }
            tokio::time::sleep(backoff.next()).await;
        }
    });
}

/// The schema's three channels: queue hints carry a queue name, stream
/// hints a stream name, messages an encoded notification.
struct Channels {
    queues: String,
    streams: String,
    messages: String,
}

async fn listen_once(
    config: &tokio_postgres::Config,
    connector: Connector,
    channels: &Channels,
    hub: &Weak<WakeHub>,
    listening: &tokio::sync::watch::Sender<bool>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(connector).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<AsyncMessage>();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(m) => {
                    if tx.send(m).is_err() {
                        return Ok(());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    });
    client
        .batch_execute(&format!(
            "LISTEN {}; LISTEN {}; LISTEN {}",
            quote_identifier(&channels.queues),
            quote_identifier(&channels.streams),
            quote_identifier(&channels.messages)
        ))
        .await?;
    listening.send_replace(true);
    if let Some(h) = hub.upgrade() {
        h.all();
    }
    // Also wake every few seconds to notice that the engine is gone, so an
    // idle listener does not outlive it.
    let mut alive = tokio::time::interval(Duration::from_secs(5));
    loop {
        tokio::select! {
            msg = rx.recv() => {
                let Some(msg) = msg else { break };
                let Some(h) = hub.upgrade() else { break };
                if let AsyncMessage::Notification(n) = msg {
                    if n.channel() == channels.streams {
                        h.stream(n.payload());
                    } else if n.channel() == channels.messages {
                        if let Some((channel, payload)) = decode_message(n.payload()) {
                            h.message(Notification {
                                channel: channel.to_string(),
                                payload: payload.to_string(),
                                id: 0,
                            });
                        }
                    } else {
                        h.queue(n.payload());
                    }
                }
            }
            _ = alive.tick() => {
                if hub.upgrade().is_none() {
                    break;
                }
            }
        }
    }
    drop(client);
    match driver.await {
        Ok(r) => r,
        Err(_) => Ok(()),
    }
}
