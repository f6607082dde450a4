//! Notify/listen: what a listener gets, and what it does not.

use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore::channel::{Listener, NotifyParams};
use alkstore::ErrorKind;

use crate::RuntimeHarness;

async fn next(l: &mut Listener) -> String {
    tokio::time::timeout(Duration::from_secs(10), l.recv())
        .await
        .expect("a notification within 10 s")
        .expect("recv")
        .payload
}

async fn nothing_within(l: &mut Listener, ms: u64) {
    if let Ok(n) = tokio::time::timeout(Duration::from_millis(ms), l.recv()).await {
        panic!("unexpected notification: {n:?}");
    }
}

async fn send<H: RuntimeHarness>(h: &H, channel: &str, payload: &str) {
    h.store()
        .engine()
        .notify(NotifyParams::new(channel, payload))
        .await
        .expect("notify");
}

/// Listeners get what is sent on their channel while they listen, in
/// order, once each; nothing from other channels; nothing sent before they
/// started listening.
pub async fn listeners_get_their_channels_notifications_in_order<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    send(h, "orders", "before anyone listened").await;
    let mut orders = store.channel("orders").listen().await.expect("listen");
    let mut billing = store.channel("billing").listen().await.expect("listen");
    send(h, "orders", "a").await;
    send(h, "billing", "x").await;
    send(h, "orders", "b").await;
    assert_eq!(next(&mut orders).await, "a");
    assert_eq!(next(&mut orders).await, "b");
    assert_eq!(next(&mut billing).await, "x");
    let mut late = store.channel("orders").listen().await.expect("listen");
    send(h, "orders", "c").await;
    assert_eq!(next(&mut orders).await, "c");
    assert_eq!(
        next(&mut late).await,
        "c",
        "only what came after it listened"
    );
    nothing_within(&mut orders, 300).await;
    nothing_within(&mut billing, 10).await;
    let err = store.channel("").listen().await.expect_err("empty channel");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let too_big = "x".repeat(alkstore::channel::MAX_NOTIFY_PAYLOAD + 1);
    let err = store
        .engine()
        .notify(NotifyParams::new("orders", too_big))
        .await
        .expect_err("payload too big");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    nothing_within(&mut orders, 200).await;
}

/// A notification sent inside the application's transaction arrives when
/// that transaction commits, and never when it rolls back.
pub async fn a_notification_in_a_transaction_arrives_only_on_commit<H: RuntimeHarness>(h: &H) {
    let mut l = h
        .store()
        .channel("payments")
        .listen()
        .await
        .expect("listen");
    h.notify_in_transaction("payments", "rolled back", false)
        .await
        .expect("rollback");
    h.notify_in_transaction("payments", "committed", true)
        .await
        .expect("commit");
    assert_eq!(next(&mut l).await, "committed");
    nothing_within(&mut l, 300).await;
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_listeners {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::listeners [
            listeners_get_their_channels_notifications_in_order,
            a_notification_in_a_transaction_arrives_only_on_commit,
        ] }
    };
}
