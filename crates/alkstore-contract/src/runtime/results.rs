//! Job results through the worker: a handler's return value, waited for.

use std::time::Duration;

use alkstore::{JobCtx, JobError, Worker};

use crate::RuntimeHarness;

/// A waiter started before the job runs gets the handler's return value
/// when the save commits; a job with no result leaves a waiter empty-handed
/// at its timeout.
pub async fn a_handlers_return_value_is_waited_for<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let q = store.queue("resize");
    let id = q.enqueue(&"cat.png").await.expect("enqueue").id();
    let waiter = {
        let store = store.clone();
        tokio::spawn(async move { store.results().wait(id, Duration::from_secs(20)).await })
    };
    let nothing = store
        .results()
        .wait(i64::MAX, Duration::from_millis(300))
        .await;
    assert_eq!(
        nothing.expect("wait"),
        None,
        "no result: None at the timeout"
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(
        Worker::new(store.clone())
            .queue_returning("resize", |job: JobCtx<String>| async move {
                Ok::<_, JobError>(format!("resized {}", job.payload()))
            })
            .run_until(async {
                let _ = stop_rx.await;
            }),
    );
    let out = waiter
        .await
        .expect("waiter")
        .expect("wait")
        .expect("a result within 20 s");
    assert_eq!(
        out.value, b"\"resized cat.png\"",
        "the return value as JSON"
    );
    let again = store.results().get(id).await.expect("get").expect("kept");
    assert_eq!(again, out);
    let _ = stop_tx.send(());
    worker.await.expect("worker").expect("run");
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_results {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::results [
            a_handlers_return_value_is_waited_for,
        ] }
    };
}
