//! Sending on a channel: what a notify delivers, and what it refuses.

use std::time::Duration;

use alkstore_core::notify::{NotifyParams, NotifyPollParams, MAX_NOTIFY_PAYLOAD};
use alkstore_core::{Engine, ErrorKind, NotifyEngine, Wake, Writes as _};

use crate::{writer, Harness, Where};

/// A notification, once its write commits, reaches the channel's
/// listeners with its payload, and no other channel's; a bad channel or
/// a payload over the limit is refused and sends nothing.
pub async fn a_notification_reaches_its_channel_once_committed<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let mut rx = e.wake_subscribe();
    e.notify_ready().await.expect("listening");
    let too_big = "x".repeat(MAX_NOTIFY_PAYLOAD + 1);
    for (channel, payload, kind) in [
        ("", "p", ErrorKind::InvalidInput),
        ("orders", too_big.as_str(), ErrorKind::InvalidInput),
    ] {
        let err = w
            .notify(NotifyParams::new(channel, payload))
            .await
            .expect_err("refused");
        assert_eq!(err.kind(), kind, "{err}");
    }
    w.notify(NotifyParams::new("orders", "42 paid"))
        .await
        .expect("notify");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    if e.capabilities().pushes_notifications {
        // Pushed: the first message on the channel is the one sent.
        let got = loop {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Ok(Wake::Message(n))) if n.channel == "orders" => break Some(n.payload.clone()),
                Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
                Ok(Err(_)) | Err(_) => break None,
            }
        };
        assert_eq!(got.as_deref(), Some("42 paid"));
    } else {
        // Kept for listeners to poll. This process's listeners are woken
        // by name when the store committed it; a commit of the
        // application's own connection reaches them through the engine's
        // watcher instead, as a bare "something changed".
        if at != Where::AppTx {
            let named = |w: &Wake| *w == Wake::Notify("orders".into());
            assert!(
                crate::queues::wake::hint_by(&mut rx, deadline, named).await,
                "the commit wakes the channel's listeners"
            );
        }
        let kept = e
            .notify_poll(NotifyPollParams::new("orders", 0, 100))
            .await
            .expect("poll");
        let payloads: Vec<&str> = kept.iter().map(|n| n.payload.as_str()).collect();
        assert_eq!(payloads, ["42 paid"], "what was refused sent nothing");
        let other = e
            .notify_poll(NotifyPollParams::new("other", 0, 100))
            .await
            .expect("poll");
        assert!(other.is_empty());
    }
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __channels_send {
    ($then:path, $args:tt) => {
        $then! { @places $args channels::send [
            a_notification_reaches_its_channel_once_committed,
        ] }
    };
}
