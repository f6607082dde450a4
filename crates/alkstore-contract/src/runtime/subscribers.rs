//! Stream subscribers: replay from the saved offset, then live; the error
//! policy never skips an event.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore::stream::{EventCtx, OnError, StartAt, SubscriberOpts};
use alkstore::Subscriber;
use tokio::sync::Notify;

use super::support::HeldBack;
use crate::streams::settle;
use crate::RuntimeHarness;

/// Payloads handled so far, and a wake-up per handled event.
#[derive(Clone, Default)]
struct Seen {
    payloads: Arc<Mutex<Vec<String>>>,
    notify: Arc<Notify>,
}

impl Seen {
    fn push(&self, event: &EventCtx<Vec<u8>>) {
        self.payloads
            .lock()
            .expect("seen")
            .push(String::from_utf8_lossy(event.payload()).into_owned());
        self.notify.notify_one();
    }

    /// A handler that records every event and succeeds.
    fn handler(
        &self,
    ) -> impl Fn(EventCtx<Vec<u8>>) -> std::future::Ready<Result<(), std::io::Error>> + Clone + 'static
    {
        let seen = self.clone();
        move |event: EventCtx<Vec<u8>>| {
            seen.push(&event);
            std::future::ready(Ok(()))
        }
    }

    fn list(&self) -> Vec<String> {
        self.payloads.lock().expect("seen").clone()
    }

    /// Resolves once `n` events were handled (fails after 30 s).
    async fn until(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while self.payloads.lock().expect("seen").len() < n {
            tokio::select! {
                _ = self.notify.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {n} events"
            );
        }
    }
}

fn batch(prefix: &str, n: usize) -> Vec<(Option<String>, Vec<u8>)> {
    (0..n)
        .map(|i| (None, format!("{prefix}{i}").into_bytes()))
        .collect()
}

/// A subscriber replays what was published before it started, then
/// follows live publishes (woken, not polled: the safety poll is set to an
/// hour), saves its offset on shutdown, and a second run resumes after it.
pub async fn subscriber_replays_then_follows_live<H: RuntimeHarness>(h: &H) {
    let stream = h.store().stream("orders");
    stream
        .publish_batch_raw(batch("old-", 5))
        .await
        .expect("publish");
    let seen = Seen::default();
    let opts = SubscriberOpts {
        poll_interval: Duration::from_secs(3600),
        ..SubscriberOpts::default()
    };
    let handler = seen.handler();
    let run = Subscriber::new(h.store().clone(), stream.name(), "mailer")
        .opts(opts.clone())
        .handler_raw(handler.clone())
        .run_until({
            let (seen, stream) = (seen.clone(), stream.clone());
            async move {
                seen.until(5).await;
                // Live: published while the subscriber waits.
                let mut last = 0;
                for i in 0..3 {
                    last = stream
                        .publish_raw(Some("k"), format!("live-{i}").into_bytes())
                        .await
                        .expect("live publish");
                }
                seen.until(8).await;
                let _ = last;
            }
        });
    let report = run.await.expect("run");
    assert_eq!(report.handled, 8);
    assert_eq!(
        seen.list(),
        ["old-0", "old-1", "old-2", "old-3", "old-4", "live-0", "live-1", "live-2"]
    );
    let head = stream.stats().await.expect("stats").head;
    assert_eq!(
        stream.offset("mailer").await.expect("offset"),
        head,
        "saved on shutdown"
    );
    assert_eq!(report.committed, head);

    stream
        .publish_batch_raw(batch("next-", 2))
        .await
        .expect("publish");
    let again = Seen::default();
    let handler = again.handler();
    let waiter = again.clone();
    Subscriber::new(h.store().clone(), stream.name(), "mailer")
        .opts(opts)
        .handler_raw(handler)
        .run_until(async move { waiter.until(2).await })
        .await
        .expect("second run");
    assert_eq!(
        again.list(),
        ["next-0", "next-1"],
        "resumed after the saved offset"
    );
}

/// A subscriber that starts while the stream's newest events are held back
/// (an older transaction still open: PostgreSQL) reads them soon after that
/// transaction ends, though nothing hints it then: the hold-up ends in a
/// rollback, and the events' own hints went out before it started. The
/// safety poll is set to an hour, so only the subscriber's own follow-up
/// reads can find them. (On SQLite the later publish waits for the held
/// transaction's write lock and commits after it, so the row holds
/// trivially; it is kept so both engines answer the same question.)
pub async fn subscriber_start_reads_events_held_back_when_it_began<H: RuntimeHarness>(h: &H) {
    let stream = h.store().stream("late");
    let held = HeldBack::begin(h, "late", {
        let stream = stream.clone();
        async move {
            stream
                .publish_batch_raw(batch("after-", 2))
                .await
                .expect("later publish")
        }
    })
    .await;
    let seen = Seen::default();
    let opts = SubscriberOpts {
        poll_interval: Duration::from_secs(3600),
        ..SubscriberOpts::default()
    };
    let run = Subscriber::new(h.store().clone(), stream.name(), "late-reader")
        .opts(opts)
        .handler_raw(seen.handler())
        .run_until({
            let seen = seen.clone();
            async move { seen.until(2).await }
        });
    let (report, _) = tokio::join!(run, held.release());
    let report = report.expect("run");
    assert_eq!(seen.list(), ["after-0", "after-1"]);
    assert_eq!(report.handled, 2);
}

/// A failing event is retried per the policy, then the subscriber stops
/// with the event's offset: nothing after it is handled and the saved
/// offset is the event before, so the next run starts with it again.
pub async fn subscriber_retries_then_stops_without_skipping<H: RuntimeHarness>(h: &H) {
    let stream = h.store().stream("payments");
    let offsets = stream
        .publish_batch_raw(vec![
            (None, b"ok-1".to_vec()),
            (None, b"poison".to_vec()),
            (None, b"ok-2".to_vec()),
        ])
        .await
        .expect("publish");
    let seen = Seen::default();
    let runs = Arc::new(Mutex::new(0u32));
    let handler = {
        let (seen, runs) = (seen.clone(), runs.clone());
        move |event: EventCtx<Vec<u8>>| {
            let (seen, runs) = (seen.clone(), runs.clone());
            async move {
                if event.payload() == b"poison" {
                    *runs.lock().expect("runs") += 1;
                    return Err(std::io::Error::other("cannot handle"));
                }
                seen.push(&event);
                Ok(())
            }
        }
    };
    let opts = SubscriberOpts {
        on_error: OnError::Retry {
            attempts: 3,
            backoff: Duration::from_millis(10),
        },
        ..SubscriberOpts::default()
    };
    let err = Subscriber::new(h.store().clone(), stream.name(), "ledger")
        .opts(opts)
        .handler_raw(handler)
        .run_until(std::future::pending())
        .await
        .expect_err("the poison event stops it");
    match err {
        alkstore::Error::HandlerFailed {
            offset, attempts, ..
        } => {
            assert_eq!(offset, offsets[1]);
            assert_eq!(attempts, 3);
        }
        other => panic!("expected a handler error, got {other:?}"),
    }
    assert_eq!(*runs.lock().expect("runs"), 3);
    assert_eq!(seen.list(), ["ok-1"], "nothing after the failing event");
    assert_eq!(
        stream.offset("ledger").await.expect("offset"),
        Some(offsets[0])
    );
}

/// A consumer without a saved offset may start at the head: history is
/// skipped, new events are handled.
pub async fn subscriber_can_start_at_the_head<H: RuntimeHarness>(h: &H) {
    let stream = h.store().stream("audit");
    stream
        .publish_batch_raw(batch("history-", 3))
        .await
        .expect("publish");
    settle(h.store().engine(), stream.name()).await;
    let seen = Seen::default();
    let handler = seen.handler();
    let opts = SubscriberOpts {
        start: StartAt::Head,
        poll_interval: Duration::from_millis(50),
        ..SubscriberOpts::default()
    };
    let publisher = {
        let (stream, seen) = (stream.clone(), seen.clone());
        async move {
            // Until the subscriber has started, its first read may see
            // nothing; publish until it handles one.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while seen.list().is_empty() {
                stream
                    .publish_raw(None, b"new".to_vec())
                    .await
                    .expect("publish");
                tokio::time::sleep(Duration::from_millis(100)).await;
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "never handled a new event"
                );
            }
        }
    };
    Subscriber::new(h.store().clone(), stream.name(), "tail")
        .opts(opts)
        .handler_raw(handler)
        .run_until(publisher)
        .await
        .expect("run");
    assert!(seen.list().iter().all(|p| p == "new"), "{:?}", seen.list());
}

/// A consumer that starts at the head saves that starting point at once,
/// so a run that stops on a failing event resumes at that event, not at a
/// later head: the failing event is never skipped.
pub async fn a_head_start_is_saved_so_a_failure_resumes_there<H: RuntimeHarness>(h: &H) {
    let stream = h.store().stream("fulfil");
    stream
        .publish_batch_raw(batch("history-", 2))
        .await
        .expect("publish");
    settle(h.store().engine(), stream.name()).await;
    let head = stream.stats().await.expect("stats").head;
    let opts = SubscriberOpts {
        start: StartAt::Head,
        on_error: OnError::Stop,
        poll_interval: Duration::from_millis(50),
        ..SubscriberOpts::default()
    };
    let first = {
        let store = h.store().clone();
        let opts = opts.clone();
        tokio::spawn(async move {
            Subscriber::new(store, "fulfil", "picker")
                .opts(opts)
                .handler_raw(|event: EventCtx<Vec<u8>>| async move {
                    if event.payload() == b"bad" {
                        return Err(std::io::Error::other("cannot pick"));
                    }
                    Ok(())
                })
                .run_until(std::future::pending())
                .await
        })
    };
    // The starting point is saved before anything is read.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while stream.offset("picker").await.expect("offset") != head {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the head was never saved"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let bad = stream
        .publish_raw(None, b"bad".to_vec())
        .await
        .expect("publish");
    match first.await.expect("first run") {
        Err(alkstore::Error::HandlerFailed { offset, .. }) => assert_eq!(offset, bad),
        other => panic!("expected the failing event to stop the run, got {other:?}"),
    }
    assert_eq!(stream.offset("picker").await.expect("offset"), head);
    stream
        .publish_raw(None, b"later".to_vec())
        .await
        .expect("publish");
    let seen = Seen::default();
    let handler = seen.handler();
    let waiter = seen.clone();
    Subscriber::new(h.store().clone(), stream.name(), "picker")
        .opts(opts)
        .handler_raw(handler)
        .run_until(async move { waiter.until(2).await })
        .await
        .expect("second run");
    assert_eq!(seen.list(), ["bad", "later"], "resumed at the failed event");
}

/// What the typed rows publish.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Item {
    n: i64,
}

/// A typed handler gets each payload decoded; one that does not decode is
/// the handler's failure: it runs the error policy, and the subscriber
/// stops there with [`alkstore::Error::HandlerFailed`], its offset saved
/// just before it.
pub async fn subscriber_decodes_payloads_and_stops_at_one_that_does_not<H: RuntimeHarness>(h: &H) {
    let stream = h.store().stream("typed");
    let offsets = stream
        .publish_batch([(None, Item { n: 1 }), (Some("k".into()), Item { n: 2 })])
        .await
        .expect("publish");
    let bad = stream
        .publish_raw(None, b"not json".to_vec())
        .await
        .expect("publish");
    let got = Arc::new(Mutex::new(Vec::new()));
    let opts = SubscriberOpts {
        on_error: OnError::Retry {
            attempts: 2,
            backoff: Duration::from_millis(10),
        },
        ..SubscriberOpts::default()
    };
    let err = Subscriber::new(h.store().clone(), "typed", "reader")
        .opts(opts)
        .handler({
            let got = got.clone();
            move |e: EventCtx<Item>| {
                got.lock().expect("got").push((
                    e.offset(),
                    e.key().map(str::to_owned),
                    e.into_payload(),
                ));
                std::future::ready(Ok::<(), std::io::Error>(()))
            }
        })
        .run_until(std::future::pending())
        .await
        .expect_err("the undecodable event stops it");
    match err {
        alkstore::Error::HandlerFailed {
            offset,
            attempts,
            source,
            ..
        } => {
            assert_eq!((offset, attempts), (bad, 2));
            assert!(source.to_string().contains("does not decode"), "{source}");
        }
        other => panic!("expected a handler error, got {other:?}"),
    }
    assert_eq!(
        *got.lock().expect("got"),
        [
            (offsets[0], None, Item { n: 1 }),
            (offsets[1], Some("k".to_owned()), Item { n: 2 })
        ]
    );
    assert_eq!(
        stream.offset("reader").await.expect("offset"),
        Some(offsets[1])
    );
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_subscribers {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::subscribers [
            subscriber_replays_then_follows_live,
            subscriber_start_reads_events_held_back_when_it_began,
            subscriber_retries_then_stops_without_skipping,
            subscriber_can_start_at_the_head,
            a_head_start_is_saved_so_a_failure_resumes_there,
            subscriber_decodes_payloads_and_stops_at_one_that_does_not,
        ] }
    };
}
