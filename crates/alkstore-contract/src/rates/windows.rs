//! Fixed windows: never more than the limit per window, under any
//! concurrency; a new window starts the count again.

use std::time::Duration;

use alkstore_core::rate::RateAcquireParams;
use alkstore_core::{Clock, ErrorKind, RateEngine};

use crate::Harness;

const HOUR: Duration = Duration::from_secs(3_600);

/// 8 tasks × 100 tries against 50 per hour admit exactly 50; refusals say
/// when the window resets; the next window admits again; other names have
/// their own budget.
pub async fn exactly_the_limit_is_admitted_under_8_concurrent_tasks<H: Harness>(h: &H) {
    let e = h.engine();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let e = e.clone();
        tasks.push(tokio::spawn(async move {
            let mut admitted = Vec::new();
            for _ in 0..100 {
                let d = e
                    .rate_acquire(RateAcquireParams::new("smtp", 50, HOUR))
                    .await
                    .expect("acquire");
                if d.admitted {
                    admitted.push(d.remaining);
                } else {
                    assert_eq!(d.remaining, 0);
                }
            }
            admitted
        }));
    }
    let mut remaining = Vec::new();
    for t in tasks {
        remaining.extend(t.await.expect("task"));
    }
    remaining.sort_unstable();
    assert_eq!(
        remaining,
        (0..50).collect::<Vec<u32>>(),
        "each admission counted once"
    );
    let now = h.clock().now_ms();
    let window_end = (now / 3_600_000 + 1) * 3_600_000;
    let refused = e
        .rate_acquire(RateAcquireParams::new("smtp", 50, HOUR))
        .await
        .expect("acquire");
    assert_eq!((refused.admitted, refused.reset_at_ms), (false, window_end));
    let other = e
        .rate_acquire(RateAcquireParams::new("sms", 2, HOUR))
        .await
        .expect("acquire");
    assert_eq!(
        (other.admitted, other.remaining),
        (true, 1),
        "its own budget"
    );
    h.clock().set_ms(window_end);
    let next = e
        .rate_acquire(RateAcquireParams::new("smtp", 50, HOUR))
        .await
        .expect("acquire");
    assert_eq!((next.admitted, next.remaining), (true, 49), "a new window");
    assert_eq!(next.reset_at_ms, window_end + 3_600_000);
    // A caller whose clock reading is from the window before (it read the
    // time, then waited for the row) is refused and resets nothing.
    h.clock().set_ms(window_end - 1);
    let late = e
        .rate_acquire(RateAcquireParams::new("smtp", 50, HOUR))
        .await
        .expect("acquire");
    assert!(!late.admitted, "an older window than the row's");
    h.clock().set_ms(window_end);
    let after = e
        .rate_acquire(RateAcquireParams::new("smtp", 50, HOUR))
        .await
        .expect("acquire");
    assert_eq!(
        (after.admitted, after.remaining),
        (true, 48),
        "the count went on"
    );
}

/// An empty name, a limit of 0, a window of 0 or over a day are
/// `InvalidInput` and count nothing.
pub async fn bad_rate_limit_input_is_refused_and_counts_nothing<H: Harness>(h: &H) {
    let e = h.engine();
    for params in [
        RateAcquireParams::new("", 1, HOUR),
        RateAcquireParams::new("x", 0, HOUR),
        RateAcquireParams::new("x", 1, Duration::ZERO),
        RateAcquireParams::new("x", 1, Duration::from_secs(86_401)),
    ] {
        let err = e.rate_acquire(params.clone()).await.expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{params:?}: {err}");
    }
    let first = e
        .rate_acquire(RateAcquireParams::new("x", 1, HOUR))
        .await
        .expect("acquire");
    assert!(first.admitted, "nothing was counted before");
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __rates_windows {
    ($then:path, $args:tt) => {
        $then! { @rows $args rates::windows [
            exactly_the_limit_is_admitted_under_8_concurrent_tasks,
            bad_rate_limit_input_is_refused_and_counts_nothing,
        ] }
    };
}
