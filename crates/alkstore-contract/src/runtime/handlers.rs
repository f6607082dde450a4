//! Handlers: typed and raw queues run side by side.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use alkstore::{queue::EnqueueOpts, JobCtx, Worker};
use tokio::sync::Notify;

use super::support::reached;
use crate::RuntimeHarness;

#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
struct Email {
    to: String,
}

/// A worker serving a typed queue (serde payloads) and a raw one (bytes)
/// runs every job of both exactly once and leaves both queues empty.
pub async fn processes_two_queues_typed_and_raw<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let emails = store.queue("emails");
    let raw = store.queue("raw");
    emails
        .enqueue_batch((0..200).map(|i| Email {
            to: format!("u{i}@x"),
        }))
        .await
        .expect("enqueue");
    for i in 0..100u8 {
        raw.enqueue_bytes(vec![i, 0xff], EnqueueOpts::default())
            .await
            .expect("enqueue");
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (s, c, n) = (seen.clone(), count.clone(), notify.clone());
    let (c2, n2) = (count.clone(), notify.clone());
    let report = Worker::new(store.clone())
        .queue("emails", move |job: JobCtx<Email>| {
            let (s, c, n) = (s.clone(), c.clone(), n.clone());
            async move {
                s.lock().expect("lock").push(job.payload().to.clone());
                c.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                Ok(())
            }
        })
        .queue_raw("raw", move |job: JobCtx<Vec<u8>>| {
            let (c, n) = (c2.clone(), n2.clone());
            async move {
                assert_eq!(job.payload()[1], 0xff);
                c.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                Ok(())
            }
        })
        .concurrency("emails", 16)
        .run_until(reached(count.clone(), 300, notify.clone()))
        .await
        .expect("run");
    assert_eq!(report.completed, 300, "{report:?}");
    assert_eq!(report.claimed, 300);
    let mut got = seen.lock().expect("lock").clone();
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 200, "every typed job ran once");
    for q in ["emails", "raw"] {
        let s = store.queue(q).stats().await.expect("stats");
        assert_eq!((s.ready, s.processing, s.dead), (0, 0, 0), "{q}");
    }
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_handlers {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::handlers [
            processes_two_queues_typed_and_raw,
        ] }
    };
}
