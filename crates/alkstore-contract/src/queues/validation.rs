//! Bad input: typed errors that change nothing, NUL bytes, one delay limit.

use alkstore_core::queue::JobSnoozeParams;
use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore_core::stream::NewEvent;
use alkstore_core::{
    Claim, DeadListParams, EnqueueOpts, ErrorKind, JobClaimParams, JobRetryParams, NewJob,
    QueueAdmin, QueueEngine, QueueOpts, RetryOutcome,
};

use super::support::{claim, enqueue_at, enqueue_one, job, kind, live_count, secs};
use crate::{Harness, Where};

/// Every kind of bad input gets a typed error and changes nothing.
pub async fn bad_input_is_rejected_and_writes_nothing<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    assert_eq!(
        kind(w.job_enqueue(vec![job("", "x")]).await),
        ErrorKind::InvalidInput
    );
    let zero = job("bad", "x").with_opts(EnqueueOpts::default().max_attempts(0));
    assert_eq!(
        kind(w.job_enqueue(vec![zero]).await),
        ErrorKind::InvalidInput
    );
    let zero_q = job("bad", "x").with_queue_opts(QueueOpts {
        max_attempts: 0,
        ..QueueOpts::default()
    });
    assert_eq!(
        kind(w.job_enqueue(vec![zero_q]).await),
        ErrorKind::InvalidInput
    );
    let no_vis = job("bad", "x").with_queue_opts(QueueOpts {
        visibility_timeout: Duration::ZERO,
        ..QueueOpts::default()
    });
    assert_eq!(
        kind(w.job_enqueue(vec![no_vis]).await),
        ErrorKind::InvalidInput
    );
    let big = NewJob::new("bad", vec![7u8; (1 << 20) + 1]);
    assert_eq!(
        kind(w.job_enqueue(vec![big]).await),
        ErrorKind::PayloadTooLarge
    );
    let empty_key = job("bad", "x").with_opts(EnqueueOpts::default().unique_key(""));
    assert_eq!(
        kind(w.job_enqueue(vec![empty_key]).await),
        ErrorKind::InvalidInput
    );
    assert_eq!(live_count(e, "bad").await, 0);

    enqueue_one(e, job("bad", "real")).await;
    for p in [
        JobClaimParams::new("bad", "w", 0),
        JobClaimParams::new("bad", "w", 1_000_000),
        JobClaimParams::new("", "w", 1),
        JobClaimParams::new("bad", "", 1),
    ] {
        assert_eq!(kind(e.job_claim(p).await), ErrorKind::InvalidInput);
    }
    let s = e.queue_stats("bad").await.expect("stats");
    assert_eq!(
        (s.ready, s.processing),
        (1, 0),
        "a rejected claim claims nothing"
    );
    let bad_claim = Claim {
        id: 1,
        worker: String::new(),
        token: 1,
    };
    assert_eq!(
        kind(w.job_ack(vec![bad_claim]).await),
        ErrorKind::InvalidInput
    );
    let list = DeadListParams::new(0);
    assert_eq!(kind(e.dead_list(list).await), ErrorKind::InvalidInput);
    assert_eq!(
        kind(e.queue_stats(String::new()).await),
        ErrorKind::InvalidInput
    );
}

/// NUL bytes in a queue name, unique key or worker name are refused as
/// invalid input on every engine (PostgreSQL cannot store them in text).
pub async fn nul_bytes_are_rejected<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    let bad_queue = job("q\0x", "p");
    let bad_key = job("nul", "p").with_opts(EnqueueOpts::default().unique_key("k\0"));
    for j in [bad_queue, bad_key] {
        assert_eq!(kind(w.job_enqueue(vec![j]).await), ErrorKind::InvalidInput);
    }
    assert_eq!(live_count(e, "nul").await, 0);
    enqueue_one(e, job("nul", "p")).await;
    assert_eq!(
        kind(e.job_claim(JobClaimParams::new("nul", "w\0", 1)).await),
        ErrorKind::InvalidInput
    );
    assert_eq!(kind(e.queue_stats("nul\0").await), ErrorKind::InvalidInput);
    let j = claim(e, "nul", "w", 1).await.remove(0);
    let forged = Claim {
        worker: "w\0".into(),
        ..j.claim()
    };
    assert_eq!(kind(w.job_ack(vec![forged]).await), ErrorKind::InvalidInput);
    assert_eq!(w.job_ack(vec![j.claim()]).await.expect("ack"), vec![true]);
}

/// Names are limited in bytes of UTF-8, not characters: 100 × "é" (200
/// bytes) is a name, 150 × "é" (150 characters, 300 bytes) is not, for a
/// queue, a unique key, a worker and a stream alike. Any other character
/// (spaces, `/`, `%`, control characters) is kept as given.
pub async fn names_are_limited_to_200_bytes<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    let fits = "é".repeat(100);
    let long = "é".repeat(150);
    assert_eq!((fits.len(), long.chars().count()), (200, 150));
    let over = format!("{}x", "é".repeat(100));
    for name in [long.as_str(), over.as_str()] {
        let err = w
            .job_enqueue(vec![job(name, "x")])
            .await
            .expect_err("more than 200 bytes");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains("200"), "names the limit: {err}");
        let keyed = job("bytes", "x").with_opts(EnqueueOpts::default().unique_key(name));
        assert_eq!(
            kind(w.job_enqueue(vec![keyed]).await),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            kind(e.job_claim(JobClaimParams::new("bytes", name, 1)).await),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            kind(w.stream_publish(NewEvent::new(name, b"x".to_vec())).await),
            ErrorKind::InvalidInput
        );
    }
    assert_eq!(live_count(e, "bytes").await, 0, "nothing was written");

    let odd = "a b/c%2F\u{1}\té";
    for name in [fits.as_str(), odd] {
        let keyed = job(name, "x").with_opts(EnqueueOpts::default().unique_key(name));
        enqueue_at(h, at, keyed).await;
        let got = claim(e, name, &fits, 1).await;
        assert_eq!(got.len(), 1, "{name:?}");
        assert_eq!(got[0].queue, name);
        assert_eq!(
            w.job_ack(vec![got[0].claim()]).await.expect("ack"),
            vec![true]
        );
        w.stream_publish(NewEvent::new(name, b"x".to_vec()))
            .await
            .expect("a 200-byte stream name");
    }
}

/// Every delay goes through one validation: enqueue, retry and snooze refuse
/// the same out-of-range value, and a refused call changes nothing.
pub async fn every_delay_has_one_limit<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    let far = job("dl1", "x").with_opts(EnqueueOpts::default().delay(Duration::MAX));
    assert_eq!(
        kind(w.job_enqueue(vec![far]).await),
        ErrorKind::InvalidInput
    );
    enqueue_one(e, job("dl1", "x")).await;
    let j = claim(e, "dl1", "w", 1).await.remove(0);
    let retry = JobRetryParams::new(j.claim(), "x").delay(Duration::MAX);
    assert_eq!(kind(w.job_retry(retry).await), ErrorKind::InvalidInput);
    assert_eq!(
        kind(
            w.job_snooze(JobSnoozeParams::new(j.claim(), Duration::MAX))
                .await
        ),
        ErrorKind::InvalidInput
    );
    let ok = JobRetryParams::new(j.claim(), "x").delay(secs(3600));
    assert!(matches!(
        w.job_retry(ok).await.expect("retry"),
        RetryOutcome::Scheduled(_)
    ));
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_validation {
    ($then:path, $args:tt) => {
        $then! { @places $args queues::validation [
            bad_input_is_rejected_and_writes_nothing,
            nul_bytes_are_rejected,
            names_are_limited_to_200_bytes,
            every_delay_has_one_limit,
        ] }
    };
}
