//! Registering, changing, pausing, resuming and removing schedules; bad
//! specs refused with a message that says what is wrong.

use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore_core::schedule::{ScheduleFireParams, ScheduleSetParams};
use alkstore_core::{Clock, ErrorKind, ScheduleEngine};

use crate::{writer, Harness, Where};

const MIN: i64 = 60_000;

/// A new schedule's next boundary is the first after now; re-registering
/// the same spec keeps it (even after time passed); a new spec moves it;
/// a paused schedule fires nothing, and resuming skips what passed while
/// paused; removing it is `true` once; pausing an unknown one is
/// `NotFound`.
pub async fn schedules_register_change_pause_resume_and_remove<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let now = h.clock().now_ms();
    let first = now.div_euclid(MIN) * MIN + MIN;
    let s = w
        .schedule_set(ScheduleSetParams::new("tick", "@every 1m", "jobs").payload(b"p".to_vec()))
        .await
        .expect("set");
    assert_eq!(
        (
            s.next_fire_at_ms,
            s.paused,
            s.max_catch_up,
            s.payload.as_slice()
        ),
        (Some(first), false, 1, b"p".as_slice())
    );
    h.clock().advance(Duration::from_secs(30));
    let again = w
        .schedule_set(ScheduleSetParams::new("tick", "@every 1m", "jobs").priority(5))
        .await
        .expect("set again");
    assert_eq!(
        again.next_fire_at_ms,
        Some(first),
        "same spec keeps its boundary"
    );
    assert_eq!(again.priority, 5);
    let hourly = w
        .schedule_set(ScheduleSetParams::new("tick", "0 * * * *", "jobs"))
        .await
        .expect("change");
    let now = h.clock().now_ms();
    assert_eq!(
        hourly.next_fire_at_ms,
        Some(now.div_euclid(60 * MIN) * 60 * MIN + 60 * MIN)
    );
    let paused = w.schedule_pause("tick").await.expect("pause");
    assert!(paused.paused);
    h.clock().advance(Duration::from_secs(3 * 3600));
    let fired = e
        .schedule_fire_due(ScheduleFireParams::default())
        .await
        .expect("fire");
    assert!(fired.fired.is_empty(), "paused: {fired:?}");
    let resumed = w.schedule_resume("tick").await.expect("resume");
    let now = h.clock().now_ms();
    assert!(!resumed.paused);
    assert_eq!(
        resumed.next_fire_at_ms,
        Some(now.div_euclid(60 * MIN) * 60 * MIN + 60 * MIN),
        "the hours passed while paused are skipped"
    );
    let list = e.schedule_list().await.expect("list");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0], resumed);
    assert!(w.schedule_remove("tick").await.expect("remove"));
    assert!(!w.schedule_remove("tick").await.expect("remove again"));
    let err = w.schedule_pause("tick").await.expect_err("gone");
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    let err = w.schedule_resume("nope").await.expect_err("unknown");
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(e.schedule_list().await.expect("list").is_empty());
}

/// Invalid specs, unknown zones, empty names and queues, a catch-up of 0
/// and a fire limit of 0 are `InvalidInput` whose message names the
/// problem (a cron field out of range: which field, and what it takes); no
/// schedule appears.
pub async fn bad_schedule_input_is_refused_and_writes_nothing<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let cases = [
        (ScheduleSetParams::new("s", "@every 0s", "q"), "positive"),
        (
            ScheduleSetParams::new("s", "@every 5x", "q"),
            "unknown unit",
        ),
        (
            ScheduleSetParams::new("s", "* * * * * * *", "q"),
            "7 fields",
        ),
        (
            ScheduleSetParams::new("s", "61 * * * *", "q"),
            "the minute field (field 1) is \"61\"",
        ),
        (
            ScheduleSetParams::new("s", "61 * * * *", "q"),
            "the minute takes 0-59",
        ),
        (
            ScheduleSetParams::new("s", "0 0 31 13 *", "q"),
            "the month takes 1-12",
        ),
        (
            ScheduleSetParams::new("s", "60 0 * * * *", "q"),
            "the second takes 0-59",
        ),
        (
            ScheduleSetParams::new("s", "0 0 * * 8", "q"),
            "the day of week takes 0-7",
        ),
        (
            ScheduleSetParams::new("s", "0 9 * * *", "q").tz("Mars/Olympus"),
            "IANA",
        ),
        (
            ScheduleSetParams::new("", "@every 1s", "q"),
            "schedule name",
        ),
        (ScheduleSetParams::new("s", "@every 1s", ""), "queue name"),
        (
            ScheduleSetParams::new("s", "@every 1s", "q").max_catch_up(0),
            "max_catch_up",
        ),
    ];
    for (params, says) in cases {
        let err = w.schedule_set(params.clone()).await.expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{params:?}: {err}");
        assert!(err.to_string().contains(says), "{params:?}: {err}");
    }
    let err = w.schedule_pause("").await.expect_err("empty name");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let err = e
        .schedule_fire_due(ScheduleFireParams::new(0))
        .await
        .expect_err("limit 0");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(e.schedule_list().await.expect("list").is_empty());
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __schedules_registry {
    ($then:path, $args:tt) => {
        $then! { @places $args schedules::registry [
            schedules_register_change_pause_resume_and_remove,
            bad_schedule_input_is_refused_and_writes_nothing,
        ] }
    };
}
