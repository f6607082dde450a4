//! Opening a store again: committed work is all there, a store written by
//! a newer alkstore is refused, and an existing-only open creates nothing.

use alkstore_core::schedule::ScheduleSetParams;
use alkstore_core::stream::{NewEvent, StreamOffsetCommitParams, StreamOffsetGetParams};
use alkstore_core::Writes as _;
use alkstore_core::{
    Error, ErrorKind, JobClaimParams, NewJob, QueueAdmin, QueueEngine, Result, ScheduleEngine,
    StreamEngine,
};

use crate::Harness;

/// A job, an event, a consumer's offset and a schedule committed through
/// one engine are all there, unchanged, through another opened on the
/// same store; opening runs the migrations again and they change nothing.
pub async fn committed_work_is_all_there_after_reopening<H: Harness>(h: &H) {
    let e = h.engine();
    let id = e
        .job_enqueue(NewJob::new("q", b"durable".to_vec()))
        .await
        .expect("enqueue")[0]
        .id();
    let offsets = e
        .stream_publish(NewEvent::new("s", b"kept".to_vec()))
        .await
        .expect("publish");
    // Readable first (on PostgreSQL another test's open transaction may
    // hold it back), so the head bounds the commit below.
    crate::streams::settle(e, "s").await;
    e.stream_offset_commit(StreamOffsetCommitParams::new("s", "c", offsets[0]))
        .await
        .expect("commit offset");
    e.schedule_set(ScheduleSetParams::new("tick", "@every 1h", "q"))
        .await
        .expect("schedule");

    let again = h.reopen(true).await.expect("reopen");
    let info = again.job_get(id).await.expect("get").expect("still there");
    assert_eq!(info.payload, b"durable");
    let claimed = again
        .job_claim(JobClaimParams::new("q", "w", 10))
        .await
        .expect("claim");
    assert_eq!(claimed.iter().map(|j| j.id).collect::<Vec<_>>(), [id]);
    let events = again
        .stream_read(alkstore_core::stream::StreamReadParams::new("s", 0, 10))
        .await
        .expect("read");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].payload, b"kept");
    assert_eq!(
        again
            .stream_offset_get(StreamOffsetGetParams::new("s", "c"))
            .await
            .expect("offset"),
        Some(offsets[0])
    );
    let schedules = again.schedule_list().await.expect("schedules");
    assert_eq!(
        schedules
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["tick"]
    );
    // The first engine goes on working beside the second.
    e.job_enqueue(NewJob::new("q", b"second".to_vec()))
        .await
        .expect("enqueue on the first");
    assert_eq!(again.queue_stats("q").await.expect("stats").ready, 1);
}

/// A store whose schema version is newer than this alkstore knows is
/// refused with `SchemaTooNew`, whether the open may create or not, and
/// the refusal writes nothing: the version stays as found.
pub async fn a_store_from_a_newer_version_is_refused<H: Harness>(h: &H) {
    h.set_schema_version(999).await.expect("bump the version");
    for create in [true, false] {
        let err = refused(h.reopen(create).await, "too new");
        assert_eq!(
            err.kind(),
            ErrorKind::SchemaTooNew,
            "create={create}: {err}"
        );
    }
    let err = refused(h.reopen(true).await, "still too new");
    assert_eq!(err.kind(), ErrorKind::SchemaTooNew, "{err}");
}

/// An existing-only open (`create: false`, for read-only tools) of a
/// place that holds no store is `NoStore` and creates nothing there; once
/// a normal open has created the store, an existing-only open works.
pub async fn an_existing_only_open_creates_nothing<H: Harness>(h: &H) {
    let err = refused(h.open_absent(false).await, "no store there");
    assert_eq!(err.kind(), ErrorKind::NoStore, "{err}");
    assert!(
        !h.absent_created().await,
        "an existing-only open created it"
    );
    let err = refused(h.open_absent(false).await, "still no store");
    assert_eq!(err.kind(), ErrorKind::NoStore, "{err}");
    let created = h.open_absent(true).await.expect("a normal open creates it");
    assert!(h.absent_created().await, "the normal open created it");
    let queues = created.queue_list().await.expect("list");
    assert!(queues.is_empty(), "{queues:?}");
    drop(created);
    let existing = h.open_absent(false).await.expect("an existing store opens");
    assert!(existing.queue_list().await.expect("list").is_empty());
}

/// The error of an open that must fail (an engine is not `Debug`).
fn refused<E>(opened: Result<E>, why: &str) -> Error {
    match opened {
        Ok(_) => panic!("the open succeeded, but must not: {why}"),
        Err(e) => e,
    }
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __open_reopen {
    ($then:path, $args:tt) => {
        $then! { @rows $args open::reopen [
            committed_work_is_all_there_after_reopening,
            a_store_from_a_newer_version_is_refused,
            an_existing_only_open_creates_nothing,
        ] }
    };
}
