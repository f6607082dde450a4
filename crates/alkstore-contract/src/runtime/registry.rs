//! The process registry from the runtime's side: a running worker and a
//! group member register themselves, report what they run, obey an
//! operator's quiet and stop orders, and remove their rows at exit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore::group::{GroupEvent, GroupOpts, GroupRunner};
use alkstore::process::{ProcessInfo, ProcessOrder};
use alkstore::{JobCtx, Worker, WorkerOpts};
use tokio::sync::Notify;

use crate::RuntimeHarness;

/// Wait (up to 20 s) until process `id` is listed and `f` holds for it.
async fn listed(
    store: &alkstore::Store,
    id: &str,
    what: &str,
    f: impl Fn(&ProcessInfo) -> bool,
) -> ProcessInfo {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = store.processes().await.expect("processes");
        if let Some(p) = list.iter().find(|p| p.id == id && f(p)) {
            return p.clone();
        }
        assert!(Instant::now() < deadline, "{what}: {list:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A worker lists its queues, slots and running jobs; told to go quiet it
/// claims nothing more (its running job finishes) and stays registered;
/// told to stop it shuts down and its row is gone.
pub async fn a_worker_is_registered_and_obeys_quiet_then_stop<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let a = store.queue("reg-a");
    a.enqueue(&1u32).await.expect("enqueue");
    let started = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(Notify::new());
    let (s, r) = (started.clone(), release.clone());
    let worker = Worker::new(store.clone())
        .worker_id("w-registered")
        .opts(WorkerOpts {
            process_heartbeat: Duration::from_millis(50),
            ..WorkerOpts::default()
        })
        .queue("reg-a", move |_job: JobCtx<u32>| {
            let (s, r) = (s.clone(), r.clone());
            async move {
                s.fetch_add(1, Ordering::SeqCst);
                r.notified().await;
                Ok(())
            }
        })
        .concurrency("reg-a", 3)
        .queue("reg-b", |_job: JobCtx<u32>| async { Ok(()) })
        .concurrency("reg-b", 2);
    let run = tokio::spawn(worker.run_until(std::future::pending()));

    let p = listed(store, "w-registered", "the worker runs its job", |p| {
        p.running == 1
    })
    .await;
    assert_eq!(p.kind, "worker");
    assert_eq!(p.roles, vec!["reg-a".to_string(), "reg-b".to_string()]);
    assert_eq!((p.concurrency, p.pid), (5, std::process::id()));
    assert!(p.alive && p.order == ProcessOrder::Run, "{p:?}");

    assert!(store.process("w-registered").quiet().await.expect("quiet"));
    assert!(!store.process("nobody").quiet().await.expect("quiet"));
    // Quiet: once a beat has read the order, a job enqueued is not
    // claimed, and the running one finishes. A beat stamped after this
    // read of the row ran after the order, so it returned it.
    let seen = listed(store, "w-registered", "the order", |p| {
        p.order == ProcessOrder::Quiet
    })
    .await
    .heartbeat_at_ms;
    listed(store, "w-registered", "a beat after the order", |p| {
        p.heartbeat_at_ms > seen
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let later = a.enqueue(&2u32).await.expect("enqueue").id();
    release.notify_one();
    listed(store, "w-registered", "quiet, nothing running", |p| {
        p.order == ProcessOrder::Quiet && p.running == 0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        started.load(Ordering::SeqCst),
        1,
        "nothing claimed once quiet"
    );
    let info = super::support::job(store, later).await;
    assert_eq!(info.attempts, 0, "{info:?}");
    assert!(!run.is_finished(), "quiet is not stop");

    assert!(store.process("w-registered").stop().await.expect("stop"));
    let report = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("stopped on the order")
        .expect("join")
        .expect("run");
    assert_eq!(report.completed, 1, "{report:?}");
    let ids: Vec<String> = store
        .processes()
        .await
        .expect("processes")
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert!(
        !ids.contains(&"w-registered".to_string()),
        "removed at exit: {ids:?}"
    );
}

/// A group member is listed with its group and stream, its bucket count
/// and the buckets it holds; a stop order ends its run and gives its
/// buckets back.
pub async fn a_group_member_is_registered_and_obeys_stop<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let runner = GroupRunner::new(store.clone(), "reg-group", "reg-stream")
        .buckets(4)
        .worker_id("member-1")
        .opts(GroupOpts {
            heartbeat: Duration::from_millis(100),
            ..GroupOpts::default()
        })
        .handler_raw(|_e: GroupEvent<Vec<u8>>| async { Ok::<(), std::io::Error>(()) });
    let run = tokio::spawn(runner.run_until(std::future::pending()));
    let p = listed(store, "member-1", "the member holds every bucket", |p| {
        p.running == 4
    })
    .await;
    assert_eq!(p.kind, "group");
    assert_eq!(p.roles, vec!["reg-group/reg-stream".to_string()]);
    assert_eq!(p.concurrency, 4);
    assert!(store.process("member-1").stop().await.expect("stop"));
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("stopped on the order")
        .expect("join")
        .expect("run");
    let status = store.group("reg-group").status().await.expect("status");
    assert!(
        status.buckets.iter().all(|b| b.owner.is_none()),
        "buckets given back: {status:?}"
    );
    assert!(store
        .processes()
        .await
        .expect("processes")
        .iter()
        .all(|p| p.id != "member-1"));
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_registry {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::registry [
            a_worker_is_registered_and_obeys_quiet_then_stop,
            a_group_member_is_registered_and_obeys_stop,
        ] }
    };
}
