//! Tags and metadata: kept with a job through every move (claim, dead,
//! requeue, completed), on every enqueue path, found by tag, and refused
//! when malformed.

use alkstore_core::queue::{JobFailParams, MAX_META_BYTES, MAX_TAGS};
use alkstore_core::Writes as _;
use alkstore_core::{
    DeadListParams, DeadSelect, EnqueueOpts, ErrorKind, JobEnqueueClaimedParams, JobInfo,
    JobListParams, JobState, NewJob, QueueAdmin, QueueEngine, QueueOpts,
};
use serde_json::{json, Map, Value};

use super::support::{claim, enqueue_at, enqueue_ids, enqueue_one, job, kind, live_count, secs};
use crate::tx::support::{begin_with_row, End};
use crate::{Harness, Where};

/// `{"by": "ops", "n": 3, "trace": {"id": "t-1"}}`.
fn meta() -> Map<String, Value> {
    let Value::Object(m) = json!({ "by": "ops", "n": 3, "trace": { "id": "t-1" } }) else {
        unreachable!("an object literal")
    };
    m
}

fn tagged(queue: &str, payload: &str, tags: &[&str]) -> NewJob {
    job(queue, payload).with_opts(EnqueueOpts {
        tags: tags.iter().map(|t| (*t).to_string()).collect(),
        meta: meta(),
        ..EnqueueOpts::default()
    })
}

fn tags_of(j: &JobInfo) -> Vec<&str> {
    j.tags.iter().map(String::as_str).collect()
}

async fn info<E: QueueEngine + QueueAdmin + alkstore_core::AllOps>(e: &E, id: i64) -> JobInfo {
    e.job_get(id).await.expect("get").expect("job exists")
}

/// Tags (repeats kept once, order kept) and metadata read back as given
/// on the pending job, the claimed one, the dead letter, the requeued
/// job and the completed one; an untagged job has none.
pub async fn tags_and_meta_travel_with_the_job<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    let q = "tagged";
    let keep = QueueOpts {
        keep_completed: Some(secs(600)),
        ..QueueOpts::default()
    };
    let id = enqueue_at(
        h,
        at,
        tagged(q, "p", &["billing", "vip", "billing"]).with_queue_opts(keep),
    )
    .await;
    let plain = enqueue_at(h, at, job(q, "plain")).await;
    let pending = info(e, id).await;
    assert_eq!(tags_of(&pending), ["billing", "vip"]);
    assert_eq!(pending.meta, meta());
    let untagged = info(e, plain).await;
    assert!(untagged.tags.is_empty() && untagged.meta.is_empty());

    let got = claim(e, q, "w", 1).await;
    assert_eq!(got[0].id, id);
    assert_eq!(got[0].tags, ["billing", "vip"]);
    assert_eq!(got[0].meta, meta());
    w.job_fail(JobFailParams::new(got[0].claim(), "boom"))
        .await
        .expect("fail");
    let dead = info(e, id).await;
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(
        (tags_of(&dead), &dead.meta),
        (vec!["billing", "vip"], &meta())
    );

    assert_eq!(
        e.dead_requeue(DeadSelect::ids(vec![id]))
            .await
            .expect("requeue"),
        1
    );
    let back = info(e, id).await;
    assert_eq!(back.state, JobState::Pending);
    assert_eq!(
        (tags_of(&back), &back.meta),
        (vec!["billing", "vip"], &meta())
    );

    let got = claim(e, q, "w", 2).await;
    assert_eq!(got.len(), 2);
    let mine = got.iter().find(|j| j.id == id).expect("claimed again");
    assert_eq!(
        w.job_ack(vec![mine.claim()]).await.expect("ack"),
        vec![true]
    );
    let done = info(e, id).await;
    assert_eq!(done.state, JobState::Completed);
    assert_eq!(
        (tags_of(&done), &done.meta),
        (vec!["billing", "vip"], &meta())
    );

    // The enqueue that claims at once hands the tags over too.
    let now = e
        .job_enqueue_claimed(JobEnqueueClaimedParams::new(
            tagged("tagged-now", "n", &["now"]),
            "w",
        ))
        .await
        .expect("enqueue claimed");
    let claimed = now.claimed.expect("claimed at once");
    assert_eq!(
        (claimed.tags.as_slice(), &claimed.meta),
        (&["now".to_string()][..], &meta())
    );
}

/// Every batch shape keeps each job's own tags: jobs alike but for their
/// payload, jobs that differ, keyed jobs, and a transaction's batch.
pub async fn every_enqueue_path_keeps_tags<H: Harness>(h: &H) {
    let e = h.engine();
    let alike = enqueue_ids(
        e,
        vec![
            tagged("paths", "a1", &["alike"]),
            tagged("paths", "a2", &["alike"]),
        ],
    )
    .await;
    let mixed = enqueue_ids(
        e,
        vec![
            tagged("paths", "m1", &["one"]),
            job("paths", "m2").with_opts(EnqueueOpts::default().priority(2)),
            tagged("paths", "m3", &["three", "3"]),
        ],
    )
    .await;
    let keyed = enqueue_ids(
        e,
        vec![
            tagged("paths", "k1", &["keyed"]).with_opts(
                EnqueueOpts::default()
                    .unique_key("k-1")
                    .tag("keyed")
                    .meta("key", "k-1"),
            ),
            job("paths", "k2"),
        ],
    )
    .await;
    for id in &alike {
        assert_eq!(tags_of(&info(e, *id).await), ["alike"]);
    }
    let want: [&[&str]; 3] = [&["one"], &[], &["three", "3"]];
    for (id, want) in mixed.iter().zip(want) {
        assert_eq!(tags_of(&info(e, *id).await), want);
    }
    let k = info(e, keyed[0]).await;
    assert_eq!(tags_of(&k), ["keyed"]);
    assert_eq!(k.meta.get("key"), Some(&json!("k-1")));
    assert!(info(e, keyed[1]).await.tags.is_empty());

    let tx = begin_with_row(h, &End::Commit.key("tags")).await;
    let out = tx
        .job_enqueue(vec![tagged("paths", "t1", &["in-tx"]), job("paths", "t2")])
        .await
        .expect("enqueue in a transaction");
    End::Commit.finish::<H>(tx).await;
    let t = info(e, out[0].id()).await;
    assert_eq!((tags_of(&t), &t.meta), (vec!["in-tx"], &meta()));
    assert!(info(e, out[1].id()).await.tags.is_empty());
}

/// Listing by tag returns exactly the jobs carrying that tag (no prefix
/// or pattern match), live, running, completed and dead.
pub async fn listings_filter_by_tag<H: Harness>(h: &H) {
    let e = h.engine();
    let q = "by-tag";
    let keep = QueueOpts {
        keep_completed: Some(secs(600)),
        ..QueueOpts::default()
    };
    let billing = enqueue_one(
        e,
        tagged(q, "1", &["billing"]).with_queue_opts(keep.clone()),
    )
    .await;
    let both = enqueue_one(e, tagged(q, "2", &["vip", "billing"]).with_queue_opts(keep)).await;
    let odd = enqueue_one(e, tagged(q, "3", &["50%_\"off\""])).await;
    enqueue_one(e, tagged(q, "4", &["billing-eu"])).await;
    enqueue_one(e, job(q, "5")).await;
    let ids = |jobs: Vec<JobInfo>| jobs.into_iter().map(|j| j.id).collect::<Vec<_>>();
    let list = |tag: &str| JobListParams::new(100).queue(q).tag(tag);

    assert_eq!(
        ids(e.job_list(list("billing")).await.expect("list")),
        [billing, both]
    );
    assert_eq!(ids(e.job_list(list("vip")).await.expect("list")), [both]);
    assert_eq!(
        ids(e.job_list(list("50%_\"off\"")).await.expect("list")),
        [odd]
    );
    assert!(e.job_list(list("bill")).await.expect("list").is_empty());
    assert!(e.job_list(list("50%")).await.expect("list").is_empty());

    // Running, then completed, then dead: each listing still finds them.
    let got = claim(e, q, "w", 2).await;
    assert_eq!(
        got.iter().map(|j| j.id).collect::<Vec<_>>(),
        [billing, both]
    );
    let running = e
        .job_list(list("billing").state(JobState::Processing))
        .await
        .expect("list");
    assert_eq!(ids(running), [billing, both]);
    e.job_ack(vec![got[0].claim()]).await.expect("ack");
    e.job_fail(JobFailParams::new(got[1].claim(), "x"))
        .await
        .expect("fail");
    let completed = e
        .job_list(list("billing").state(JobState::Completed))
        .await
        .expect("list");
    assert_eq!(ids(completed), [billing]);
    let dead = e
        .dead_list(DeadListParams::new(100).queue(q).tag("vip"))
        .await
        .expect("dead list");
    assert_eq!(ids(dead), [both]);
    assert!(e
        .dead_list(DeadListParams::new(100).queue(q).tag("billing-eu"))
        .await
        .expect("dead list")
        .is_empty());
}

/// Too many tags, an empty or NUL tag, metadata over the limit: a typed
/// invalid-input error, and nothing is written. A bad tag filter is
/// refused too.
pub async fn malformed_tags_and_meta_are_refused<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    let q = "bad-tags";
    let many: Vec<String> = (0..=MAX_TAGS).map(|i| format!("t{i}")).collect();
    let too_many = EnqueueOpts {
        tags: many,
        ..EnqueueOpts::default()
    };
    let big = EnqueueOpts::default().meta("blob", "x".repeat(MAX_META_BYTES));
    for opts in [
        too_many,
        EnqueueOpts::default().tag(""),
        EnqueueOpts::default().tag("a\0b"),
        EnqueueOpts::default().tag("t".repeat(201)),
        EnqueueOpts::default().meta("k", "a\0b"),
        EnqueueOpts::default().meta("a\0b", 1),
        EnqueueOpts::default().meta("deep", json!({ "list": ["ok", "x\u{0}"] })),
        big,
    ] {
        let batch = vec![job(q, "ok"), job(q, "bad").with_opts(opts.clone())];
        assert_eq!(
            kind(w.job_enqueue(batch).await),
            ErrorKind::InvalidInput,
            "{opts:?}"
        );
    }
    assert_eq!(live_count(e, q).await, 0, "nothing written");
    // The most tags allowed, a repeat among them kept once.
    let ok = EnqueueOpts {
        tags: (0..MAX_TAGS)
            .map(|i| format!("t{i}"))
            .chain(["t0".to_string()])
            .collect(),
        ..EnqueueOpts::default()
    };
    let max = enqueue_one(e, job(q, "max").with_opts(ok)).await;
    assert_eq!(live_count(e, q).await, 1, "the most tags allowed");
    assert_eq!(info(e, max).await.tags.len(), MAX_TAGS);
    assert_eq!(
        kind(e.job_list(JobListParams::new(10).tag("")).await),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        kind(e.dead_list(DeadListParams::new(10).tag("a\0")).await),
        ErrorKind::InvalidInput
    );
}

#[doc(hidden)]
#[macro_export]
macro_rules! __queues_tags {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::tags [
            every_enqueue_path_keeps_tags,
            listings_filter_by_tag,
        ] }
        $then! { @places $args queues::tags [
            malformed_tags_and_meta_are_refused,
            tags_and_meta_travel_with_the_job,
        ] }
    };
}
