//! Schedules in a transaction: register, remove, pause, resume.

use alkstore_core::schedule::{ScheduleInfo, ScheduleSetParams};
use alkstore_core::ScheduleEngine;
use alkstore_core::Writes as _;

use super::support::{assert_rows, begin_with_row, committed_row, End};
use crate::Harness;

/// The schedule `name`, if registered.
async fn schedule<E: ScheduleEngine + alkstore_core::AllOps>(
    e: &E,
    name: &str,
) -> Option<ScheduleInfo> {
    e.schedule_list()
        .await
        .expect("list")
        .into_iter()
        .find(|s| s.name == name)
}

fn every_minute(name: &str) -> ScheduleSetParams {
    ScheduleSetParams::new(name, "@every 1m", "tx-scheduled")
}

/// Register a schedule in a transaction: rolled back or dropped, there is
/// none; committed, it is registered as the call reported.
pub async fn schedule_set_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let name = "tx-schedule-set";
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key(name)).await;
        let set = tx.schedule_set(every_minute(name)).await.expect("set");
        end.finish::<H>(tx).await;
        if end.commits() {
            assert_eq!(schedule(e, name).await, Some(set));
        } else {
            assert_eq!(schedule(e, name).await, None, "{end:?} registers nothing");
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(name), "at the end").await;
}

/// Remove a schedule in a transaction: rolled back or dropped, it is still
/// there; committed, it is gone.
pub async fn schedule_remove_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let name = "tx-schedule-remove";
    e.schedule_set(every_minute(name)).await.expect("set");
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key(name)).await;
        assert!(
            tx.schedule_remove(name).await.expect("remove"),
            "it was there"
        );
        end.finish::<H>(tx).await;
        if end.commits() {
            assert_eq!(schedule(e, name).await, None, "removed");
        } else {
            assert!(schedule(e, name).await.is_some(), "{end:?}: still there");
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(name), "at the end").await;
}

/// Pause a schedule in a transaction: rolled back or dropped, it still
/// runs; committed, it is paused.
pub async fn schedule_pause_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let name = "tx-schedule-pause";
    e.schedule_set(every_minute(name)).await.expect("set");
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key(name)).await;
        assert!(tx.schedule_pause(name).await.expect("pause").paused);
        end.finish::<H>(tx).await;
        let paused = schedule(e, name).await.expect("there").paused;
        assert_eq!(paused, end.commits(), "paused after {end:?}");
        if !end.commits() {
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(name), "at the end").await;
}

/// Resume a paused schedule in a transaction: rolled back or dropped, it
/// stays paused; committed, it runs again.
pub async fn schedule_resume_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let name = "tx-schedule-resume";
    e.schedule_set(every_minute(name)).await.expect("set");
    e.schedule_pause(name).await.expect("pause");
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key(name)).await;
        assert!(!tx.schedule_resume(name).await.expect("resume").paused);
        end.finish::<H>(tx).await;
        let paused = schedule(e, name).await.expect("there").paused;
        assert_eq!(paused, !end.commits(), "paused after {end:?}");
        if !end.commits() {
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(name), "at the end").await;
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __tx_schedules {
    ($then:path, $args:tt) => {
        $then! { @rows $args tx::schedules [
            schedule_set_commits_with_the_business_row_or_not_at_all,
            schedule_remove_commits_with_the_business_row_or_not_at_all,
            schedule_pause_commits_with_the_business_row_or_not_at_all,
            schedule_resume_commits_with_the_business_row_or_not_at_all,
        ] }
    };
}
