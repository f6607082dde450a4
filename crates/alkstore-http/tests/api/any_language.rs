//! What a worker in another language needs beyond jobs and streams: job
//! results, rate limits, notify/listen as server-sent events, and
//! consumer-group membership with fencing.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::{field, spawn_request, Api};

/// Enqueue one job on `queue` and claim it as `worker`: `(id, token)`.
async fn claimed(api: &Api, queue: &str, worker: &str) -> (i64, i64) {
    let (s, v) = api
        .post(
            &format!("/api/v1/queues/{queue}/jobs"),
            json!({"payload": {"n": 1}, "max_attempts": 3}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, c) = api
        .post(
            &format!("/api/v1/queues/{queue}/claim"),
            json!({"worker": worker}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{c}");
    let job = &c["jobs"][0];
    (
        job["id"].as_i64().expect("id"),
        job["token"].as_i64().expect("token"),
    )
}

pub(crate) async fn job_results_are_saved_by_the_ack_and_waited_for(api: Api) {
    let (id, token) = claimed(&api, "render", "w1").await;
    let (s, v) = api.get(&format!("/api/v1/jobs/{id}/result")).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");

    // A waiter started before the ack gets the result as soon as it is saved.
    let waiter = spawn_request(
        &api,
        Request::get(format!("/api/v1/jobs/{id}/result?wait_ms=10000"))
            .header("host", "127.0.0.1:7878")
            .body(Body::empty())
            .expect("request"),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (s, v) = api
        .post(
            &format!("/api/v1/jobs/{id}/ack"),
            json!({"worker": "w1", "token": token, "result": {"pages": 3, "url": "s3://x"}}),
        )
        .await;
    assert_eq!((s, &v), (StatusCode::OK, &json!({"done": true})));
    let (took, got) = waiter.await.expect("waiter");
    assert!(took < Duration::from_secs(5), "woken by the save: {took:?}");
    assert_eq!(got["job_id"], json!(id), "{got}");
    assert_eq!(got["result"], json!({"pages": 3, "url": "s3://x"}), "{got}");
    assert!(got["expires_at_ms"].as_i64() > got["saved_at_ms"].as_i64());

    // An ack on a claim no longer held saves nothing.
    let (s, v) = api
        .post(
            &format!("/api/v1/jobs/{id}/ack"),
            json!({"worker": "w1", "token": token, "result": "stale"}),
        )
        .await;
    assert_eq!((s, &v), (StatusCode::OK, &json!({"done": false})));
    let (_, again) = api.get(&format!("/api/v1/jobs/{id}/result")).await;
    assert_eq!(again["result"], json!({"pages": 3, "url": "s3://x"}));

    // An ack without a result still works; a wait past the cap is refused.
    let (id2, token2) = claimed(&api, "render", "w1").await;
    let (_, v) = api
        .post(
            &format!("/api/v1/jobs/{id2}/ack"),
            json!({"worker": "w1", "token": token2}),
        )
        .await;
    assert_eq!(v, json!({"done": true}));
    let (s, v) = api.get(&format!("/api/v1/jobs/{id2}/result")).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    let (s, v) = api
        .get(&format!("/api/v1/jobs/{id2}/result?wait_ms=999999"))
        .await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "wait_ms"), "{v}");
    api.done().await;
}

pub(crate) async fn rate_limits_admit_up_to_their_limit(api: Api) {
    let body = json!({"limit": 2, "per_ms": 60_000});
    let mut admitted = Vec::new();
    for _ in 0..3 {
        let (s, v) = api
            .post("/api/v1/rates/smtp%20out/acquire", body.clone())
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        admitted.push((v["admitted"].as_bool(), v["remaining"].as_u64()));
    }
    assert_eq!(
        admitted,
        vec![
            (Some(true), Some(1)),
            (Some(true), Some(0)),
            (Some(false), Some(0))
        ]
    );
    // Another name has its own budget.
    let (_, v) = api.post("/api/v1/rates/other/acquire", body).await;
    assert_eq!(v["admitted"], json!(true), "{v}");
    for (bad, name) in [
        (json!({"limit": 0, "per_ms": 1000}), "limit"),
        (json!({"limit": 1_000_000_001_u64, "per_ms": 1000}), "limit"),
        (json!({"limit": 1, "per_ms": 0}), "per_ms"),
        (json!({"limit": 1, "per_ms": 86_400_001_u64}), "per_ms"),
        (json!({"limit": 1}), "per_ms"),
    ] {
        let (s, v) = api.post("/api/v1/rates/x/acquire", bad.clone()).await;
        assert_eq!(
            (s, field(&v)),
            (StatusCode::BAD_REQUEST, name),
            "{bad} → {v}"
        );
    }
    // A wrong method answers in the API's error shape too.
    let (s, v) = api.post("/api/v1/rates/x", json!({})).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    let (s, v) = api.call("DELETE", "/api/v1/rates/x/acquire", None).await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED, "{v}");
    assert_eq!(v["error"]["code"], json!("method_not_allowed"), "{v}");
    api.done().await;
}

pub(crate) async fn notifications_reach_an_event_stream_listener(api: Api) {
    let res = api
        .app
        .clone()
        .oneshot(
            Request::get("/api/v1/channels/cache%20flush/listen")
                .header("host", "127.0.0.1:7878")
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let mut body = res.into_body();
    for payload in ["first", "second"] {
        let (s, v) = api
            .post(
                "/api/v1/channels/cache%20flush/notify",
                json!({"payload": payload}),
            )
            .await;
        assert_eq!((s, &v), (StatusCode::OK, &json!({"done": true})));
    }
    // Another channel's notification never shows.
    api.post("/api/v1/channels/other/notify", json!({"payload": "no"}))
        .await;
    let mut text = String::new();
    while text.matches("event: notification").count() < 2 {
        let frame = tokio::time::timeout(Duration::from_secs(20), body.frame())
            .await
            .expect("a notification within 20 s")
            .expect("a frame")
            .expect("frame");
        if let Ok(data) = frame.into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
    }
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data, vec!["first", "second"], "{text}");

    let (s, v) = api
        .post(
            "/api/v1/channels/x/notify",
            json!({"payload": "a".repeat(8_000)}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    api.done().await;
}

/// `POST path` with `body`, asserting 200 (201 for a publish).
async fn ok(api: &Api, path: &str, body: Value) -> Value {
    let (s, v) = api.post(path, body).await;
    assert!(s.is_success(), "{path}: {s} {v}");
    v
}

/// The buckets a membership or claim holds, by number, with their epochs.
fn leases(v: &Value) -> BTreeMap<u64, i64> {
    v["leases"]
        .as_array()
        .expect("leases")
        .iter()
        .map(|l| {
            (
                l["bucket"].as_u64().expect("bucket"),
                l["epoch"].as_i64().expect("epoch"),
            )
        })
        .collect()
}

/// Handle a claim's events as a worker would: record them, then
/// checkpoint each bucket's last offset under its epoch.
async fn handle(api: &Api, member: &str, claim: &Value, seen: &mut Vec<(String, i64, String)>) {
    let mut last: BTreeMap<u64, (i64, i64)> = BTreeMap::new();
    for e in claim["events"].as_array().expect("events") {
        let offset = e["offset"].as_i64().expect("offset");
        let key = e["key"].as_str().unwrap_or("").to_string();
        seen.push((member.to_string(), offset, key));
        last.insert(
            e["bucket"].as_u64().expect("bucket"),
            (e["epoch"].as_i64().expect("epoch"), offset),
        );
    }
    for (bucket, (epoch, offset)) in last {
        let v = ok(
            api,
            &format!("/api/v1/groups/billing/members/{member}/checkpoint"),
            json!({"bucket": bucket, "epoch": epoch, "offset": offset}),
        )
        .await;
        assert_eq!(v["checkpoint"], json!(offset));
    }
}

pub(crate) async fn group_members_over_http_share_buckets_and_are_fenced(api: Api) {
    let events: Vec<Value> = (0..24)
        .map(|i| json!({"key": format!("customer-{}", i % 6), "payload": {"i": i}}))
        .collect();
    ok(
        &api,
        "/api/v1/streams/orders/events",
        json!({"events": events}),
    )
    .await;
    let base = "/api/v1/groups/billing/members";

    let a = ok(
        &api,
        base,
        json!({"stream": "orders", "member": "a", "buckets": 4}),
    )
    .await;
    assert_eq!(a["member"], json!("a"));
    assert_eq!(leases(&a).len(), 4, "alone, it takes every bucket: {a}");
    // A second member joins without naming the bucket count; the first
    // gives back its surplus at its next heartbeat, the second takes it.
    let b = ok(&api, base, json!({"stream": "orders", "member": "b"})).await;
    assert_eq!(
        (b["buckets"].as_u64(), b["live_members"].as_u64()),
        (Some(4), Some(2))
    );
    let a = ok(&api, &format!("{base}/a/heartbeat"), json!({})).await;
    let b = ok(&api, &format!("{base}/b/heartbeat"), json!({})).await;
    let (held_a, held_b) = (leases(&a), leases(&b));
    assert_eq!((held_a.len(), held_b.len()), (2, 2), "{a} {b}");
    assert!(held_a.keys().all(|k| !held_b.contains_key(k)), "{a} {b}");

    // Each member gets only its buckets' events; together, every event once.
    // The claims wait: a reader sees the publish only once every write
    // transaction older than it has ended, on PostgreSQL any on the server
    // (other tests' too), so the events may not be readable at once.
    let mut seen = Vec::new();
    for member in ["a", "b"] {
        let claim = ok(
            &api,
            &format!("{base}/{member}/claim"),
            json!({"limit": 1000, "wait_ms": 10_000}),
        )
        .await;
        for e in claim["events"].as_array().expect("events") {
            let bucket = e["bucket"].as_u64().expect("bucket");
            let mine = if member == "a" { &held_a } else { &held_b };
            assert_eq!(mine.get(&bucket), e["epoch"].as_i64().as_ref(), "{e}");
        }
        handle(&api, member, &claim, &mut seen).await;
    }
    let offsets: BTreeSet<i64> = seen.iter().map(|(_, o, _)| *o).collect();
    assert_eq!(
        (seen.len(), offsets.len()),
        (24, 24),
        "each event once: {seen:?}"
    );
    let mut by_key: BTreeMap<&str, Vec<(&str, i64)>> = BTreeMap::new();
    for (m, o, k) in &seen {
        by_key.entry(k).or_default().push((m, *o));
    }
    for (key, got) in &by_key {
        assert!(
            got.windows(2).all(|w| w[0].0 == w[1].0 && w[0].1 < w[1].1),
            "{key}: one member, in order: {got:?}"
        );
    }
    // Checkpointed: nothing comes again.
    let again = ok(&api, &format!("{base}/a/claim"), json!({})).await;
    assert_eq!(again["events"], json!([]), "{again}");

    // A long-poll claim wakes on a publish to one of its buckets.
    let key_of_a = seen
        .iter()
        .find(|(m, _, _)| m == "a")
        .map(|(_, _, k)| k.clone())
        .expect("a handled a key");
    let waiter = spawn_request(
        &api,
        Request::post(format!("{base}/a/claim"))
            .header("host", "127.0.0.1:7878")
            .header("content-type", "application/json")
            .body(Body::from(json!({"wait_ms": 10_000}).to_string()))
            .expect("request"),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    ok(
        &api,
        "/api/v1/streams/orders/events",
        json!({"events": [{"key": key_of_a, "payload": "late"}]}),
    )
    .await;
    let (took, woke) = waiter.await.expect("waiter");
    assert!(
        took < Duration::from_secs(5),
        "woken by the publish: {took:?}"
    );
    assert_eq!(woke["events"][0]["payload"], json!("late"), "{woke}");

    // b leaves; a takes its buckets under new epochs; b's old epoch is
    // fenced, and a's stale epoch after losing a bucket would be too.
    let (s, left) = api.call("DELETE", &format!("{base}/b"), None).await;
    assert_eq!((s, &left), (StatusCode::OK, &json!({"released": 2})));
    let a = ok(&api, &format!("{base}/a/heartbeat"), json!({})).await;
    let held = leases(&a);
    assert_eq!(held.len(), 4, "{a}");
    let (taken, old_epoch) = held_b
        .iter()
        .next()
        .map(|(b, e)| (*b, *e))
        .expect("b held one");
    assert!(held[&taken] > old_epoch, "a new epoch: {a}");
    let (s, v) = api
        .post(
            &format!("{base}/b/checkpoint"),
            json!({"bucket": taken, "epoch": old_epoch, "offset": 1_000}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    assert_eq!(
        (v["error"]["code"].as_str(), field(&v)),
        (Some("not_held"), "epoch")
    );
    let (s, v) = api
        .post(
            &format!("{base}/a/checkpoint"),
            json!({"bucket": taken, "epoch": old_epoch, "offset": 1_000}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "a's own stale epoch: {v}");

    // Bad input is refused and changes nothing.
    let (s, v) = api
        .post(&format!("{base}/a/claim"), json!({"ttl_ms": 0}))
        .await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "ttl_ms"), "{v}");
    let (s, v) = api
        .post(base, json!({"stream": "payments", "member": "c"}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "another stream: {v}");
    let (s, v) = api
        .post(base, json!({"stream": "orders", "member": ""}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let (s, v) = api
        .post("/api/v1/groups/nobody/members/x/claim", json!({}))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    let (_, status) = api.get("/api/v1/groups/billing").await;
    let owners: BTreeSet<&str> = status["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .filter_map(|b| b["owner"].as_str())
        .collect();
    assert_eq!(owners, BTreeSet::from(["a"]), "{status}");
    api.done().await;
}

pub(crate) async fn processes_are_listed_and_take_orders(api: Api) {
    use alkstore::prelude::ProcessEngine;
    use alkstore::process::{ProcessBeatParams, ProcessOrder};
    let (_, v) = api.get("/api/v1/processes").await;
    assert_eq!(v, json!({"processes": []}));
    let mut beat = ProcessBeatParams::new("w 1/x", "worker", Duration::from_secs(30));
    beat.roles = vec!["emails".into()];
    beat.concurrency = 4;
    beat.running = 2;
    api.store
        .engine()
        .process_beat(beat.clone())
        .await
        .expect("beat");
    let (s, v) = api.get("/api/v1/processes").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let p = &v["processes"][0];
    assert_eq!(
        (
            &p["id"],
            &p["kind"],
            &p["roles"],
            &p["running"],
            &p["concurrency"],
            &p["alive"],
            &p["order"]
        ),
        (
            &json!("w 1/x"),
            &json!("worker"),
            &json!(["emails"]),
            &json!(2),
            &json!(4),
            &json!(true),
            &json!("run")
        ),
        "{v}"
    );
    assert_eq!(p["pid"], json!(std::process::id()));

    let (s, v) = api
        .post("/api/v1/processes/w%201%2Fx/quiet", json!({}))
        .await;
    assert_eq!((s, &v), (StatusCode::OK, &json!({"done": true})));
    assert_eq!(
        api.store
            .engine()
            .process_beat(beat.clone())
            .await
            .expect("beat"),
        ProcessOrder::Quiet
    );
    let (s, _) = api
        .post("/api/v1/processes/w%201%2Fx/stop", json!({}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let (_, v) = api.get("/api/v1/processes").await;
    assert_eq!(v["processes"][0]["order"], json!("stop"), "{v}");
    let (s, v) = api.post("/api/v1/processes/nobody/stop", json!({})).await;
    assert_eq!((s, field(&v)), (StatusCode::NOT_FOUND, "id"), "{v}");
    api.done().await;
}

pub(crate) async fn the_store_says_which_store_it_is(api: Api) {
    let (s, v) = api.get("/api/v1/store").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    match (api.store.sqlite(), api.store.postgres()) {
        (Some(sqlite), _) => {
            assert_eq!(v["engine"], json!("sqlite"), "{v}");
            assert_eq!(v["location"], json!(sqlite.path().display().to_string()));
            assert_eq!(v["schema"], json!(null));
        }
        (None, Some(pg)) => {
            assert_eq!(v["engine"], json!("postgres"), "{v}");
            assert_eq!(v["schema"], json!(pg.schema()));
        }
        (None, None) => panic!("no engine"),
    }
    assert_eq!(v["version"], json!(env!("CARGO_PKG_VERSION")));
    // A URL given to the server is shown with its password masked.
    let app = alkstore_http::router(
        api.store.clone(),
        alkstore_http::ServeOptions {
            store_url: Some("postgres://app:s3cret@db.internal/app?schema=jobs".into()),
            ..alkstore_http::ServeOptions::default()
        },
    );
    let res = app
        .oneshot(
            Request::get("/api/v1/store")
                .header("host", "127.0.0.1:7878")
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    if api.store.postgres().is_some() {
        assert!(text.contains("app:***@db.internal"), "{text}");
    }
    assert!(!text.contains("s3cret"), "{text}");
    api.done().await;
}
