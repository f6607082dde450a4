//! The process registry: beats register and refresh a process, expiry
//! marks it dead, retention removes it, orders reach it at its next beat,
//! and bad input writes nothing.

use std::time::Duration;

use alkstore_core::process::{
    ProcessBeatParams, ProcessOrder, ProcessOrderParams, ProcessRemoveParams, MAX_PROCESS_ROLES,
    PROCESS_RETENTION,
};
use alkstore_core::{Clock, ErrorKind, ProcessEngine};

use crate::Harness;

/// A beat of `id` as a worker of `emails` and `reports`, 8 slots, alive 30 s.
fn beat(id: &str, running: u32) -> ProcessBeatParams {
    let mut p = ProcessBeatParams::new(id, "worker", Duration::from_secs(30));
    p.host = "host-a".into();
    p.pid = 4242;
    p.version = "1.2.3".into();
    p.roles = vec!["emails".into(), "reports".into()];
    p.concurrency = 8;
    p.running = running;
    p.started_at_ms = 1_000;
    p
}

/// A beat registers everything the process says about itself; the next
/// one refreshes the same row (heartbeat and expiry by the store's clock).
pub async fn a_beat_registers_a_process_and_the_next_refreshes_it<H: Harness>(h: &H) {
    let e = h.engine();
    assert!(e.process_list().await.expect("list").is_empty());
    let order = e.process_beat(beat("w-1", 3)).await.expect("beat");
    assert_eq!(order, ProcessOrder::Run);
    let first = h.clock().now_ms();
    let list = e.process_list().await.expect("list");
    assert_eq!(list.len(), 1, "{list:?}");
    let p = &list[0];
    assert_eq!(
        (
            p.id.as_str(),
            p.kind.as_str(),
            p.host.as_str(),
            p.pid,
            p.version.as_str()
        ),
        ("w-1", "worker", "host-a", 4242, "1.2.3")
    );
    assert_eq!(p.roles, vec!["emails".to_string(), "reports".to_string()]);
    assert_eq!((p.concurrency, p.running, p.started_at_ms), (8, 3, 1_000));
    assert_eq!(
        (p.heartbeat_at_ms, p.expires_at_ms),
        (first, first + 30_000)
    );
    assert!(p.alive);

    h.clock().advance(Duration::from_secs(10));
    e.process_beat(beat("w-1", 7)).await.expect("beat");
    e.process_beat(ProcessBeatParams::new(
        "s-1",
        "scheduler",
        Duration::from_secs(30),
    ))
    .await
    .expect("beat");
    let list = e.process_list().await.expect("list");
    let ids: Vec<&str> = list.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, vec!["s-1", "w-1"], "by kind, then id");
    let w = &list[1];
    assert_eq!(w.running, 7);
    assert_eq!(w.heartbeat_at_ms, first + 10_000);
    assert_eq!(w.expires_at_ms, first + 40_000);
}

/// A process that stops beating is listed as dead once its expiry passes,
/// and removed by a later beat (of anyone) once dead for the retention.
pub async fn a_silent_process_is_dead_then_pruned<H: Harness>(h: &H) {
    let e = h.engine();
    e.process_beat(beat("w-1", 0)).await.expect("beat");
    h.clock().advance(Duration::from_secs(29));
    assert!(e.process_list().await.expect("list")[0].alive);
    h.clock().advance(Duration::from_secs(2));
    let list = e.process_list().await.expect("list");
    assert_eq!(list.len(), 1);
    assert!(!list[0].alive, "past its expiry: {list:?}");
    // Dead, and not yet past the retention: still listed after a beat.
    e.process_beat(beat("w-2", 0)).await.expect("beat");
    assert_eq!(e.process_list().await.expect("list").len(), 2);
    h.clock().advance(PROCESS_RETENTION);
    e.process_beat(beat("w-2", 0)).await.expect("beat");
    let ids: Vec<String> = e
        .process_list()
        .await
        .expect("list")
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids, vec!["w-2".to_string()]);
}

/// An order waits in the store until the process's next beat returns it;
/// a clean exit removes the row.
pub async fn orders_reach_a_process_at_its_next_beat<H: Harness>(h: &H) {
    let e = h.engine();
    assert_eq!(
        e.process_beat(beat("w-1", 0)).await.expect("beat"),
        ProcessOrder::Run
    );
    assert!(!e
        .process_order(ProcessOrderParams::new("nobody", ProcessOrder::Stop))
        .await
        .expect("order"));
    assert!(e
        .process_order(ProcessOrderParams::new("w-1", ProcessOrder::Quiet))
        .await
        .expect("order"));
    assert_eq!(
        e.process_list().await.expect("list")[0].order,
        ProcessOrder::Quiet
    );
    // It stays until changed: every beat returns it.
    for _ in 0..2 {
        assert_eq!(
            e.process_beat(beat("w-1", 0)).await.expect("beat"),
            ProcessOrder::Quiet
        );
    }
    e.process_order(ProcessOrderParams::new("w-1", ProcessOrder::Stop))
        .await
        .expect("order");
    assert_eq!(
        e.process_beat(beat("w-1", 0)).await.expect("beat"),
        ProcessOrder::Stop
    );
    // A later run under the same id (another start time) is not bound by
    // the last run's order.
    let mut restarted = beat("w-1", 0);
    restarted.started_at_ms = 2_000;
    assert_eq!(
        e.process_beat(restarted).await.expect("beat"),
        ProcessOrder::Run
    );
    assert!(e
        .process_remove(ProcessRemoveParams::new("w-1"))
        .await
        .expect("remove"));
    assert!(e.process_list().await.expect("list").is_empty());
    assert!(!e
        .process_remove(ProcessRemoveParams::new("w-1"))
        .await
        .expect("remove"));
    // A process registering again after its removal starts with no order.
    assert_eq!(
        e.process_beat(beat("w-1", 0)).await.expect("beat"),
        ProcessOrder::Run
    );
}

/// Empty or over-long ids and kinds, too many roles, an empty role, a TTL
/// of zero or above an hour are `InvalidInput`, and nothing is written.
pub async fn bad_process_input_is_refused_and_writes_nothing<H: Harness>(h: &H) {
    let e = h.engine();
    let long = "x".repeat(201);
    let mut cases = vec![
        ProcessBeatParams::new("", "worker", Duration::from_secs(1)),
        ProcessBeatParams::new(long.as_str(), "worker", Duration::from_secs(1)),
        ProcessBeatParams::new("a", "", Duration::from_secs(1)),
        ProcessBeatParams::new("a", "worker", Duration::ZERO),
        ProcessBeatParams::new("a", "worker", Duration::from_secs(3_601)),
    ];
    let mut many = beat("a", 0);
    many.roles = (0..=MAX_PROCESS_ROLES).map(|i| format!("q{i}")).collect();
    cases.push(many);
    let mut empty_role = beat("a", 0);
    empty_role.roles = vec![String::new()];
    cases.push(empty_role);
    let mut nul = beat("a", 0);
    nul.host = "a\0b".into();
    cases.push(nul);
    for (i, p) in cases.into_iter().enumerate() {
        let err = e.process_beat(p).await.expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "case {i}: {err}");
    }
    let err = e
        .process_order(ProcessOrderParams::new("", ProcessOrder::Stop))
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = e
        .process_remove(ProcessRemoveParams::new(""))
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(e.process_list().await.expect("list").is_empty());
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __processes_registry {
    ($then:path, $args:tt) => {
        $then! { @rows $args processes::registry [
            a_beat_registers_a_process_and_the_next_refreshes_it,
            a_silent_process_is_dead_then_pruned,
            orders_reach_a_process_at_its_next_beat,
            bad_process_input_is_refused_and_writes_nothing,
        ] }
    };
}
