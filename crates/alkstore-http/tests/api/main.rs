//! The HTTP API on both engines, through the router in-process (no socket):
//! every route, its bad input, and the guard (`any_language`: results,
//! rate limits, notify/listen and group membership, for other languages).

use std::time::{Duration, Instant};

use alkstore::prelude::*;
use alkstore::Store;
use alkstore_core::group::GroupEnsureParams;
use alkstore_http::{router, ServeOptions};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

mod any_language;
mod operator;
use any_language::*;
use operator::*;

/// A router over a fresh store, and how to drop that store.
struct Api {
    app: Router,
    store: Store,
    cleanup: Option<(String, String)>,
    _dir: Option<tempfile::TempDir>,
}

impl Api {
    async fn sqlite(opts: ServeOptions) -> Api {
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!("sqlite://{}", dir.path().join("api.db").display());
        let store = Store::open(&url).await.expect("open");
        Api {
            app: router(store.clone(), opts),
            store,
            cleanup: None,
            _dir: Some(dir),
        }
    }

    async fn postgres(opts: ServeOptions) -> Api {
        use alkstore_postgres::testing;
        let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
            .await
            .expect("postgres");
        let schema = testing::unique_schema("http");
        let store = Store::open(&format!("{url}?schema={schema}"))
            .await
            .expect("open");
        Api {
            app: router(store.clone(), opts),
            store,
            cleanup: Some((url, schema)),
            _dir: None,
        }
    }

    async fn done(self) {
        if let Some((url, schema)) = self.cleanup {
            alkstore_postgres::testing::drop_schema(&url, &schema)
                .await
                .expect("drop");
        }
    }

    async fn send(&self, req: Request<Body>) -> (StatusCode, Value) {
        let res = self.app.clone().oneshot(req).await.expect("infallible");
        let status = res.status();
        let bytes = res.into_body().collect().await.expect("body").to_bytes();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, value)
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1:7878");
        let body = match body {
            Some(v) => {
                req = req.header("content-type", "application/json");
                Body::from(v.to_string())
            }
            None => Body::empty(),
        };
        self.send(req.body(body).expect("request")).await
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call("GET", path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call("POST", path, Some(body)).await
    }
}

/// The error's field, for asserting which input was at fault.
fn field(v: &Value) -> &str {
    v["error"]["field"].as_str().unwrap_or("")
}

async fn jobs_enqueue_claim_settle_and_inspect(api: Api) {
    let (s, one) = api
        .post(
            "/api/v1/queues/mail/jobs",
            json!({"payload": {"to": "a@example.com"}, "priority": 5}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{one}");
    let first = one["id"].as_i64().expect("id");
    let (s, batch) = api
        .post(
            "/api/v1/queues/mail/jobs/batch",
            json!({"jobs": [{"payload": 2}, {"payload": "three", "unique_key": "k"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{batch}");
    assert_eq!(batch["jobs"].as_array().map(Vec::len), Some(2));
    let (_, dup) = api
        .post(
            "/api/v1/queues/mail/jobs",
            json!({"payload": "again", "unique_key": "k"}),
        )
        .await;
    assert_eq!(dup["duplicate"], json!(true));
    assert_eq!(dup["id"], batch["jobs"][1]["id"]);

    let (s, stats) = api.get("/api/v1/queues/mail").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(stats["ready"], json!(3));
    let (_, all) = api.get("/api/v1/queues").await;
    assert_eq!(all["queues"][0]["queue"], json!("mail"));

    let (s, claimed) = api
        .post(
            "/api/v1/queues/mail/claim",
            json!({"worker": "py-1", "limit": 3}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{claimed}");
    let jobs = claimed["jobs"].as_array().expect("jobs").clone();
    assert_eq!(jobs.len(), 3);
    assert_eq!(jobs[0]["id"].as_i64(), Some(first), "priority first");
    assert_eq!(jobs[0]["payload"], json!({"to": "a@example.com"}));
    assert_eq!(jobs[0]["attempt"], json!(1));
    let claim = |j: &Value| json!({"worker": "py-1", "token": j["token"]});

    let ack = format!("/api/v1/jobs/{}/ack", jobs[0]["id"]);
    assert_eq!(
        api.post(&ack, claim(&jobs[0])).await.1,
        json!({"done": true})
    );
    assert_eq!(
        api.post(&ack, claim(&jobs[0])).await.1,
        json!({"done": false}),
        "a second ack finds no claim"
    );
    let wrong = json!({"worker": "someone-else", "token": jobs[1]["token"]});
    let (_, not_held) = api
        .post(&format!("/api/v1/jobs/{}/ack", jobs[1]["id"]), wrong)
        .await;
    assert_eq!(not_held, json!({"done": false}), "only the claimant acks");

    let (_, beat) = api
        .post(
            &format!("/api/v1/jobs/{}/heartbeat", jobs[1]["id"]),
            claim(&jobs[1]),
        )
        .await;
    assert_eq!(beat["held"], json!(true), "{beat}");
    let mut retry = claim(&jobs[1]);
    retry["error"] = json!("smtp down");
    retry["delay_ms"] = json!(60_000);
    let (_, retried) = api
        .post(&format!("/api/v1/jobs/{}/retry", jobs[1]["id"]), retry)
        .await;
    assert_eq!(retried["outcome"], json!("scheduled"), "{retried}");
    let (_, info) = api.get(&format!("/api/v1/jobs/{}", jobs[1]["id"])).await;
    assert_eq!(info["state"], json!("retryable"), "waits out its backoff");
    assert_eq!(info["last_error"], json!("smtp down"));
    assert_eq!(info["errors"][0]["attempt"], json!(1));

    let mut fail = claim(&jobs[2]);
    fail["error"] = json!("bad address");
    let (_, failed) = api
        .post(&format!("/api/v1/jobs/{}/fail", jobs[2]["id"]), fail)
        .await;
    assert_eq!(failed, json!({"done": true}));
    // The store counted the ack, the retry and the failure.
    let (s, tp) = api.get("/api/v1/throughput?queue=mail&window_s=600").await;
    assert_eq!(s, StatusCode::OK, "{tp}");
    assert_eq!(tp["bucket_s"], json!(10));
    assert_eq!(
        tp["totals"],
        json!([{"queue": "mail", "completed": 1, "failed": 2}])
    );
    let in_buckets = |k: &str| -> u64 {
        let buckets = tp["buckets"].as_array().expect("buckets");
        buckets.iter().filter_map(|b| b[k].as_u64()).sum()
    };
    assert_eq!(
        (in_buckets("completed"), in_buckets("failed")),
        (1, 2),
        "{tp}"
    );
    let (_, dead) = api.get("/api/v1/queues/mail/dead").await;
    assert_eq!(dead["jobs"][0]["id"], jobs[2]["id"]);
    assert_eq!(dead["jobs"][0]["dead_reason"], json!("failed"));
    let (_, requeued) = api
        .post("/api/v1/queues/mail/dead/requeue", json!({}))
        .await;
    assert_eq!(requeued, json!({"count": 1}));
    let (_, dead) = api.get("/api/v1/queues/mail/dead").await;
    assert_eq!(dead["jobs"], json!([]));

    // Cancel a waiting job: it is dead as cancelled; then purge it.
    let (_, pending) = api.get("/api/v1/queues/mail/jobs?state=pending").await;
    let victim = pending["jobs"][0]["id"].clone();
    let (_, cancelled) = api
        .post(&format!("/api/v1/jobs/{victim}/cancel"), json!({}))
        .await;
    assert_eq!(cancelled["outcome"], json!("cancelled"));
    let (_, purged) = api
        .post(
            "/api/v1/queues/mail/dead/purge",
            json!({"ids": [victim.clone()]}),
        )
        .await;
    assert_eq!(purged, json!({"count": 1}));
    let (s, _) = api.get(&format!("/api/v1/jobs/{victim}")).await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Pause: nothing is claimed until resumed.
    let (_, paused) = api.post("/api/v1/queues/mail/pause", json!({})).await;
    assert_eq!(paused, json!({"changed": true}));
    let (_, none) = api
        .post(
            "/api/v1/queues/mail/claim",
            json!({"worker": "w", "limit": 10}),
        )
        .await;
    assert_eq!(none["jobs"], json!([]));
    assert_eq!(
        api.get("/api/v1/queues/mail").await.1["paused"],
        json!(true)
    );
    let (_, resumed) = api.post("/api/v1/queues/mail/resume", json!({})).await;
    assert_eq!(resumed, json!({"changed": true}));
    let (_, some) = api
        .post(
            "/api/v1/queues/mail/claim",
            json!({"worker": "w", "limit": 10}),
        )
        .await;
    let some = some["jobs"].as_array().expect("jobs").clone();
    assert!(!some.is_empty());
    // A batch ack: one transaction, one flag per claim in order.
    let mut claims: Vec<Value> = some
        .iter()
        .map(|j| json!({"id": j["id"], "worker": "w", "token": j["token"]}))
        .collect();
    claims.push(json!({"id": 987654, "worker": "w", "token": 1}));
    let (s, acked) = api
        .post("/api/v1/jobs/ack", json!({"claims": claims}))
        .await;
    assert_eq!(s, StatusCode::OK, "{acked}");
    let mut want = vec![json!(true); some.len()];
    want.push(json!(false));
    assert_eq!(acked["done"], Value::Array(want));
    api.done().await;
}

async fn a_waiting_claim_gets_a_job_enqueued_after_it_started(api: Api) {
    let app = api.app.clone();
    let waiter = tokio::spawn(async move {
        let started = Instant::now();
        let req = Request::post("/api/v1/queues/slow/claim")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Body::from(
                json!({"worker": "w", "wait_ms": 20_000}).to_string(),
            ))
            .expect("request");
        let res = app.oneshot(req).await.expect("infallible");
        let bytes = res.into_body().collect().await.expect("body").to_bytes();
        (
            started.elapsed(),
            serde_json::from_slice::<Value>(&bytes).expect("json"),
        )
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (s, _) = api
        .post("/api/v1/queues/slow/jobs", json!({"payload": "now"}))
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let (took, got) = waiter.await.expect("waiter");
    assert_eq!(got["jobs"][0]["payload"], json!("now"), "{got}");
    // Woken by the enqueue, not by the end of its 20 s wait.
    assert!(took < Duration::from_secs(10), "{took:?}");

    // With nothing to claim, the wait ends empty after about wait_ms.
    let started = Instant::now();
    let (_, empty) = api
        .post(
            "/api/v1/queues/slow/claim",
            json!({"worker": "w", "wait_ms": 300}),
        )
        .await;
    assert_eq!(empty["jobs"], json!([]));
    assert!(started.elapsed() >= Duration::from_millis(290));
    api.done().await;
}

async fn bad_input_is_a_4xx_naming_the_field_and_writes_nothing(api: Api) {
    let cases: Vec<(&str, &str, Value, StatusCode, &str)> = vec![
        (
            "POST",
            "/api/v1/queues/q/jobs",
            json!({"payload": 1, "priority": "high"}),
            StatusCode::BAD_REQUEST,
            "priority",
        ),
        (
            "POST",
            "/api/v1/queues/q/jobs",
            json!({"priority": 1}),
            StatusCode::BAD_REQUEST,
            "payload",
        ),
        (
            "POST",
            "/api/v1/queues/q/jobs",
            json!({"payload": 1, "colour": "red"}),
            StatusCode::BAD_REQUEST,
            "colour",
        ),
        (
            "POST",
            "/api/v1/queues/q/jobs",
            json!({"payload": 1, "delay_ms": -5}),
            StatusCode::BAD_REQUEST,
            "delay_ms",
        ),
        (
            "POST",
            "/api/v1/queues/q/jobs",
            json!({"payload": 1, "max_attempts": 0}),
            StatusCode::BAD_REQUEST,
            "max_attempts",
        ),
        (
            "POST",
            "/api/v1/queues/q/jobs/batch",
            json!({"jobs": []}),
            StatusCode::BAD_REQUEST,
            "jobs",
        ),
        (
            "POST",
            "/api/v1/queues/q/claim",
            json!({"worker": "w", "limit": 0}),
            StatusCode::BAD_REQUEST,
            "limit",
        ),
        (
            "POST",
            "/api/v1/queues/q/claim",
            json!({"worker": "w", "wait_ms": 40_000}),
            StatusCode::BAD_REQUEST,
            "wait_ms",
        ),
        (
            "POST",
            "/api/v1/queues/q/claim",
            json!({"limit": 1}),
            StatusCode::BAD_REQUEST,
            "worker",
        ),
        (
            "POST",
            "/api/v1/jobs/abc/ack",
            json!({"worker": "w", "token": 1}),
            StatusCode::BAD_REQUEST,
            "path",
        ),
        (
            "POST",
            "/api/v1/jobs/0/ack",
            json!({"worker": "w", "token": 1}),
            StatusCode::BAD_REQUEST,
            "path",
        ),
        (
            "POST",
            "/api/v1/streams/s/events",
            json!({"events": []}),
            StatusCode::BAD_REQUEST,
            "events",
        ),
        (
            "PUT",
            "/api/v1/schedules/t",
            json!({"spec": "@every 0s", "queue": "q"}),
            StatusCode::BAD_REQUEST,
            "spec",
        ),
        (
            "POST",
            "/api/v1/locks/l/acquire",
            json!({"owner": "o", "ttl_ms": 0}),
            StatusCode::BAD_REQUEST,
            "ttl_ms",
        ),
    ];
    for (method, path, body, want, want_field) in cases {
        let (s, v) = api.call(method, path, Some(body.clone())).await;
        assert_eq!(s, want, "{method} {path} {body}: {v}");
        assert_eq!(field(&v), want_field, "{method} {path} {body}: {v}");
        assert_eq!(v["error"]["code"], json!("invalid_input"), "{v}");
    }
    let long = "q".repeat(300);
    let (s, v) = api
        .post(
            &format!("/api/v1/queues/{long}/jobs"),
            json!({"payload": 1}),
        )
        .await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "queue"), "{v}");
    let (s, v) = api.get("/api/v1/queues/q/jobs?limit=5000").await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "limit"), "{v}");
    let (s, v) = api.get("/api/v1/queues/q/jobs?limit=x").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    for (query, want_field) in [
        ("window_s=0", "window_s"),
        ("window_s=604801", "window_s"),
        ("window_s=-5", "window_s"),
        ("queue=", "queue"),
        ("bucket=1", "bucket"),
    ] {
        let (s, v) = api.get(&format!("/api/v1/throughput?{query}")).await;
        assert_eq!(
            (s, field(&v)),
            (StatusCode::BAD_REQUEST, want_field),
            "{query}: {v}"
        );
    }
    // Not JSON.
    let req = Request::post("/api/v1/queues/q/jobs")
        .header("host", "localhost")
        .header("content-type", "text/plain")
        .body(Body::from("payload=1"))
        .expect("request");
    assert_eq!(api.send(req).await.0, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // Over the body limit (1 MiB by default).
    let big = json!({"payload": "x".repeat(1_100_000)});
    let (s, v) = api.post("/api/v1/queues/q/jobs", big).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    // Unknown things.
    // A queue appears with its first job: an unused name is a 404 that
    // says so, a bad one is a 400.
    let (s, v) = api.get("/api/v1/queues/nope").await;
    assert_eq!((s, field(&v)), (StatusCode::NOT_FOUND, "queue"), "{v}");
    let (s, v) = api.get(&format!("/api/v1/queues/{long}")).await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "queue"), "{v}");
    assert_eq!(
        api.get("/api/v1/jobs/424242").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get("/api/v1/streams/nope").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get("/api/v1/groups/nope").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get("/api/v1/nothing-here").await.0,
        StatusCode::NOT_FOUND
    );
    // Nothing was written by any of it.
    assert_eq!(api.get("/api/v1/queues").await.1, json!({"queues": []}));
    assert_eq!(api.get("/api/v1/streams").await.1, json!({"streams": []}));
    assert_eq!(
        api.get("/api/v1/schedules").await.1,
        json!({"schedules": []})
    );
    assert!(api
        .store
        .engine()
        .lock_list()
        .await
        .expect("locks")
        .is_empty());
    api.done().await;
}

async fn streams_publish_read_and_commit(api: Api) {
    let (s, published) = api
        .post(
            "/api/v1/streams/orders/events",
            json!({"events": [{"key": "u1", "payload": {"n": 1}}, {"payload": {"n": 2}}]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{published}");
    let offsets: Vec<i64> = published["offsets"]
        .as_array()
        .expect("offsets")
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    assert!(offsets.len() == 2 && offsets[0] < offsets[1]);
    // Waits: on PostgreSQL a read holds back events while an older
    // transaction (another test's) may still commit before them.
    let (_, page) = api
        .get("/api/v1/streams/orders/events?after=0&limit=2&wait_ms=10000")
        .await;
    assert_eq!(page["events"][0]["key"], json!("u1"));
    assert_eq!(page["events"][1]["payload"], json!({"n": 2}));
    assert_eq!(page["next_after"].as_i64(), Some(offsets[1]));
    let (_, page) = api
        .get(&format!(
            "/api/v1/streams/orders/events?after={}&wait_ms=10000",
            offsets[0]
        ))
        .await;
    assert_eq!(page["events"].as_array().map(Vec::len), Some(1));

    let consumer = "/api/v1/streams/orders/consumers/billing";
    assert_eq!(api.get(consumer).await.1, json!({"offset": null}));
    let (_, saved) = api
        .call("PUT", consumer, Some(json!({"offset": offsets[1]})))
        .await;
    assert_eq!(saved["offset"].as_i64(), Some(offsets[1]));
    let (_, kept) = api
        .call("PUT", consumer, Some(json!({"offset": offsets[0]})))
        .await;
    assert_eq!(
        kept["offset"].as_i64(),
        Some(offsets[1]),
        "never moves back"
    );
    let (s, v) = api
        .call(
            "PUT",
            consumer,
            Some(json!({"offset": offsets[1] + 1_000_000})),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "past the head: {v}");
    let (_, info) = api.get("/api/v1/streams/orders").await;
    assert_eq!(info["head"].as_i64(), Some(offsets[1]));
    assert_eq!(info["consumers"][0]["consumer"], json!("billing"));
    assert_eq!(info["consumers"][0]["lag"], json!(0));

    // A long-poll read is woken by a publish.
    let app = api.app.clone();
    let after = offsets[1];
    let reader = tokio::spawn(async move {
        let req = Request::get(format!(
            "/api/v1/streams/orders/events?after={after}&wait_ms=20000"
        ))
        .header("host", "localhost")
        .body(Body::empty())
        .expect("request");
        let res = app.oneshot(req).await.expect("infallible");
        let bytes = res.into_body().collect().await.expect("body").to_bytes();
        serde_json::from_slice::<Value>(&bytes).expect("json")
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    api.post(
        "/api/v1/streams/orders/events",
        json!({"events": [{"payload": "late"}]}),
    )
    .await;
    let got = reader.await.expect("reader");
    assert_eq!(got["events"][0]["payload"], json!("late"), "{got}");
    assert!(started.elapsed() < Duration::from_secs(10));
    api.done().await;
}

async fn groups_schedules_and_locks(api: Api) {
    api.store
        .engine()
        .group_ensure(GroupEnsureParams::new("billing", "orders", 4))
        .await
        .expect("ensure");
    let (_, groups) = api.get("/api/v1/groups").await;
    assert_eq!(groups["groups"][0]["group"], json!("billing"));
    assert_eq!(groups["groups"][0]["buckets"], json!(4));
    let (s, status) = api.get("/api/v1/groups/billing").await;
    assert_eq!(s, StatusCode::OK, "{status}");
    assert_eq!(status["buckets"].as_array().map(Vec::len), Some(4));
    assert_eq!(status["buckets"][3]["owner"], json!(null));

    let (s, sched) = api
        .call(
            "PUT",
            "/api/v1/schedules/nightly",
            Some(json!({"spec": "0 3 * * *", "tz": "Europe/Paris", "queue": "reports", "payload": {"kind": "daily"}})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{sched}");
    assert!(sched["next_fire_at_ms"].as_i64().is_some());
    assert_eq!(sched["payload"], json!({"kind": "daily"}));
    let (_, paused) = api.post("/api/v1/schedules/nightly/pause", json!({})).await;
    assert_eq!(paused["paused"], json!(true));
    let (_, resumed) = api
        .post("/api/v1/schedules/nightly/resume", json!({}))
        .await;
    assert_eq!(resumed["paused"], json!(false));
    let (_, list) = api.get("/api/v1/schedules").await;
    assert_eq!(list["schedules"][0]["name"], json!("nightly"));
    let (s, v) = api.post("/api/v1/schedules/missing/pause", json!({})).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    let (_, removed) = api.call("DELETE", "/api/v1/schedules/nightly", None).await;
    assert_eq!(removed, json!({"removed": true}));
    let (_, again) = api.call("DELETE", "/api/v1/schedules/nightly", None).await;
    assert_eq!(again, json!({"removed": false}));

    let (_, a) = api
        .post(
            "/api/v1/locks/report/acquire",
            json!({"owner": "a", "ttl_ms": 30_000}),
        )
        .await;
    assert_eq!(a["held"], json!(true), "{a}");
    let (_, b) = api
        .post(
            "/api/v1/locks/report/acquire",
            json!({"owner": "b", "ttl_ms": 30_000}),
        )
        .await;
    assert_eq!(b["held"], json!(false), "held by a");
    let (_, renewed) = api
        .post(
            "/api/v1/locks/report/renew",
            json!({"owner": "a", "token": a["token"], "ttl_ms": 30_000}),
        )
        .await;
    assert_eq!(renewed["token"], a["token"]);
    let (_, locks) = api.get("/api/v1/locks").await;
    assert_eq!(locks["locks"][0]["owner"], json!("a"));
    let release = json!({"owner": "a", "token": a["token"]});
    let (_, r) = api
        .post("/api/v1/locks/report/release", release.clone())
        .await;
    assert_eq!(r, json!({"released": true}));
    let (_, r) = api.post("/api/v1/locks/report/release", release).await;
    assert_eq!(r, json!({"released": false}));
    let (_, b) = api
        .post(
            "/api/v1/locks/report/acquire",
            json!({"owner": "b", "ttl_ms": 30_000}),
        )
        .await;
    assert!(
        b["token"].as_i64() > a["token"].as_i64(),
        "tokens grow: {b}"
    );
    api.done().await;
}

async fn the_token_guards_every_route_and_other_sites_change_nothing(api: Api) {
    let token = "0123456789abcdef-secret";
    let req = |auth: Option<&str>, cookie: Option<&str>| {
        let mut r = Request::get("/api/v1/queues").header("host", "10.0.0.5:7878");
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        if let Some(c) = cookie {
            r = r.header("cookie", c);
        }
        r.body(Body::empty()).expect("request")
    };
    let (s, v) = api.send(req(None, None)).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{v}");
    assert_eq!(v["error"]["code"], json!("unauthorized"));
    let wrong = format!("Bearer {token}x");
    assert_eq!(
        api.send(req(Some(&wrong), None)).await.0,
        StatusCode::UNAUTHORIZED
    );
    let right = format!("Bearer {token}");
    assert_eq!(api.send(req(Some(&right), None)).await.0, StatusCode::OK);
    let cookie = format!("alk_token={token}");
    assert_eq!(api.send(req(None, Some(&cookie))).await.0, StatusCode::OK);
    assert_eq!(
        api.send(
            Request::get("/openapi.json")
                .header("host", "x")
                .body(Body::empty())
                .expect("request")
        )
        .await
        .0,
        StatusCode::UNAUTHORIZED
    );
    // Another site's page cannot enqueue, even with the cookie.
    let forged = Request::post("/api/v1/queues/q/jobs")
        .header("host", "10.0.0.5:7878")
        .header("cookie", &cookie)
        .header("sec-fetch-site", "cross-site")
        .header("content-type", "application/json")
        .body(Body::from(json!({"payload": 1}).to_string()))
        .expect("request");
    assert_eq!(api.send(forged).await.0, StatusCode::FORBIDDEN);
    assert!(api
        .store
        .engine()
        .queue_list()
        .await
        .expect("list")
        .is_empty());
    api.done().await;
}

async fn an_unprotected_server_answers_only_to_loopback_names(api: Api) {
    let rebound = Request::get("/api/v1/queues")
        .header("host", "attacker.example:7878")
        .body(Body::empty())
        .expect("request");
    assert_eq!(api.send(rebound).await.0, StatusCode::MISDIRECTED_REQUEST);
    assert_eq!(api.get("/api/v1/queues").await.0, StatusCode::OK);
    let health = Request::get("/healthz")
        .header("host", "anything")
        .body(Body::empty())
        .expect("request");
    assert_eq!(api.send(health).await.0, StatusCode::OK);
    api.done().await;
}

/// Jobs show the state people expect (`retryable` while a retry's backoff
/// runs, `scheduled` before a first run due later), and a claim's expiry
/// only while the claim is held.
async fn jobs_show_retryable_scheduled_and_only_a_held_claim(api: Api) {
    let enqueue = |body: Value| {
        let api = &api;
        async move {
            let (s, v) = api.post("/api/v1/queues/states/jobs", body).await;
            assert_eq!(s, StatusCode::CREATED, "{v}");
            v["id"].as_i64().expect("id")
        }
    };
    let scheduled = enqueue(json!({"payload": 1, "delay_ms": 3_600_000})).await;
    for _ in 0..3 {
        enqueue(json!({"payload": 2})).await;
    }
    let (_, claimed) = api
        .post(
            "/api/v1/queues/states/claim",
            json!({"worker": "w", "limit": 3}),
        )
        .await;
    let jobs = claimed["jobs"].as_array().expect("jobs").clone();
    assert_eq!(jobs.len(), 3, "{claimed}");
    let settle = |j: &Value, verb: &str, extra: Value| {
        let mut body = json!({"worker": "w", "token": j["token"]});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        let path = format!("/api/v1/jobs/{}/{verb}", j["id"]);
        let api = &api;
        async move { api.post(&path, body).await }
    };
    settle(
        &jobs[0],
        "retry",
        json!({"error": "later", "delay_ms": 3_600_000}),
    )
    .await;
    settle(&jobs[1], "fail", json!({"error": "no"})).await;
    let job = |id: &Value| {
        let path = format!("/api/v1/jobs/{id}");
        let api = &api;
        async move { api.get(&path).await.1 }
    };
    let retryable = job(&jobs[0]["id"]).await;
    assert_eq!(retryable["state"], json!("retryable"), "{retryable}");
    assert_eq!(retryable["claim_expires_at"], json!(null), "{retryable}");
    let first = job(&json!(scheduled)).await;
    assert_eq!(first["state"], json!("scheduled"), "{first}");
    let dead = job(&jobs[1]["id"]).await;
    assert_eq!(dead["state"], json!("dead"), "{dead}");
    assert_eq!(dead["claim_expires_at"], json!(null), "no claim: {dead}");
    assert_eq!(dead["worker"], json!("w"), "the last worker stays: {dead}");
    let running = job(&jobs[2]["id"]).await;
    assert_eq!(running["state"], json!("processing"), "{running}");
    assert_eq!(running["claim_expires_at"], jobs[2]["claim_expires_at"]);
    let (_, listed) = api.get("/api/v1/queues/states/jobs?state=pending").await;
    let states: Vec<&Value> = listed["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| &j["state"])
        .collect();
    assert_eq!(
        states,
        [&json!("scheduled"), &json!("retryable")],
        "{listed}"
    );

    // Acked, it is gone (the queue keeps no completed jobs): the 404 says so.
    settle(&jobs[2], "ack", json!({})).await;
    let (s, gone) = api.get(&format!("/api/v1/jobs/{}", jobs[2]["id"])).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{gone}");
    let message = gone["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("finished jobs are deleted unless their queue keeps completed jobs"),
        "{gone}"
    );
    api.done().await;
}

/// A queue nothing was enqueued on is 404 "no such queue yet" (a paused
/// one exists); names are taken as they are, percent-decoded from the path.
async fn unknown_queues_are_404_and_names_are_taken_as_given(api: Api) {
    let (s, v) = api.get("/api/v1/queues/nosuch").await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    assert_eq!(v["error"]["code"], json!("not_found"));
    assert_eq!(field(&v), "queue");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no such queue yet"), "{v}");
    api.post("/api/v1/queues/held/pause", json!({})).await;
    let (s, v) = api.get("/api/v1/queues/held").await;
    assert_eq!((s, &v["paused"]), (StatusCode::OK, &json!(true)), "{v}");

    let name = "bad queue name!/?#%";
    let path = "/api/v1/queues/bad%20queue%20name%21%2F%3F%23%25";
    let (s, v) = api
        .post(&format!("{path}/jobs"), json!({"payload": 1}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, v) = api.get(path).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!((&v["queue"], &v["ready"]), (&json!(name), &json!(1)), "{v}");
    let (_, claimed) = api
        .post(&format!("{path}/claim"), json!({"worker": "w"}))
        .await;
    assert_eq!(claimed["jobs"][0]["queue"], json!(name), "{claimed}");
    api.done().await;
}

/// A group's dead letters: counted in the listing, listed, requeued and
/// purged over HTTP, as `alk groups dead` sees them.
async fn group_dead_letters_list_requeue_and_purge(api: Api) {
    use alkstore_core::group::{GroupClaimParams, GroupDeadAddParams};
    use alkstore_core::stream::{NewEvent, StreamReadParams};
    let e = api.store.engine();
    e.stream_publish(vec![
        NewEvent::new("orders", br#"{"n":1}"#.to_vec()),
        NewEvent::new("orders", vec![0xff]),
    ])
    .await
    .expect("publish");
    e.group_ensure(GroupEnsureParams::new("billing", "orders", 1))
        .await
        .expect("ensure");
    let lease = e
        .group_claim(GroupClaimParams::new(
            "billing",
            "w1",
            Duration::from_secs(30),
            1,
        ))
        .await
        .expect("claim")
        .remove(0);
    // On PostgreSQL the events become readable once transactions that
    // began before their commit (other tests') end.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let events = loop {
        let events = e
            .stream_read(StreamReadParams::new("orders", 0, 10))
            .await
            .expect("read");
        if events.len() == 2 || std::time::Instant::now() > deadline {
            break events;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(events.len(), 2, "{events:?}");
    for ev in &events {
        e.group_dead_add(GroupDeadAddParams::new(
            "billing",
            0,
            "w1",
            lease.epoch,
            ev.clone(),
            "handler failed",
            3,
        ))
        .await
        .expect("dead");
    }
    let (_, groups) = api.get("/api/v1/groups").await;
    assert_eq!(groups["groups"][0]["dead"], json!(2), "{groups}");
    let (s, page) = api.get("/api/v1/groups/billing/dead?limit=1").await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert_eq!(page["dead"][0]["offset"], json!(events[0].offset));
    assert_eq!(page["dead"][0]["payload"], json!({"n": 1}));
    assert_eq!(page["dead"][0]["error"], json!("handler failed"));
    assert_eq!(page["dead"][0]["requeued"], json!(false));
    assert_eq!(page["next_after"], json!(events[0].offset), "{page}");
    let (_, rest) = api
        .get(&format!(
            "/api/v1/groups/billing/dead?after={}",
            events[0].offset
        ))
        .await;
    assert_eq!(rest["dead"][0]["payload_base64"], json!("/w=="), "{rest}");
    assert_eq!(rest["next_after"], json!(null));

    let (_, requeued) = api
        .post(
            "/api/v1/groups/billing/dead/requeue",
            json!({"offsets": [events[1].offset]}),
        )
        .await;
    assert_eq!(requeued, json!({"count": 1}));
    let (_, page) = api.get("/api/v1/groups/billing/dead").await;
    assert_eq!(page["dead"][1]["requeued"], json!(true), "{page}");
    let (_, purged) = api
        .post(
            "/api/v1/groups/billing/dead/purge",
            json!({"offsets": [events[0].offset]}),
        )
        .await;
    assert_eq!(purged, json!({"count": 1}));
    let (_, none) = api
        .post("/api/v1/groups/billing/dead/purge", json!({"offsets": []}))
        .await;
    assert_eq!(none, json!({"count": 0}), "an empty list names none");
    let long = format!("/api/v1/groups/{}/dead/purge", "g".repeat(201));
    let (s, v) = api.post(&long, json!({"offsets": []})).await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "group"), "{v}");
    let many: Vec<i64> = (1..=1001).collect();
    let (s, v) = api
        .post(
            "/api/v1/groups/billing/dead/purge",
            json!({"offsets": many}),
        )
        .await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "offsets"), "{v}");
    let (_, purged) = api
        .post("/api/v1/groups/billing/dead/purge", json!({}))
        .await;
    assert_eq!(purged, json!({"count": 1}), "the rest");
    let (_, groups) = api.get("/api/v1/groups").await;
    assert_eq!(groups["groups"][0]["dead"], json!(0), "{groups}");
    let (s, v) = api
        .post(
            "/api/v1/groups/billing/dead/purge",
            json!({"offsets": "all"}),
        )
        .await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "offsets"), "{v}");
    api.done().await;
}

/// Send `ops` to the atomic route.
async fn atomic(api: &Api, ops: Value) -> (StatusCode, Value) {
    api.post("/api/v1/atomic", json!({ "ops": ops })).await
}

/// A request sent in the background (a long poll), and how long it took.
fn spawn_request(api: &Api, req: Request<Body>) -> tokio::task::JoinHandle<(Duration, Value)> {
    let app = api.app.clone();
    tokio::spawn(async move {
        let started = Instant::now();
        let res = app.oneshot(req).await.expect("infallible");
        let bytes = res.into_body().collect().await.expect("body").to_bytes();
        (
            started.elapsed(),
            serde_json::from_slice::<Value>(&bytes).expect("json"),
        )
    })
}

/// Assert that nothing reached `queue` or `stream`: both are unknown.
async fn assert_nothing_written(api: &Api, queue: &str, stream: &str) {
    let (s, v) = api.get(&format!("/api/v1/queues/{queue}")).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "queue {queue}: {v}");
    let (s, v) = api.get(&format!("/api/v1/streams/{stream}")).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "stream {stream}: {v}");
}

/// The next notification on `listener` is `marker`: nothing sent before it
/// (by a request that rolled back) reached the channel.
async fn assert_next_notification_is(
    api: &Api,
    listener: &mut alkstore::channel::Listener,
    marker: &str,
) {
    let (s, v) = atomic(
        api,
        json!([{"op": "notify", "channel": listener.channel(), "payload": marker}]),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let got = tokio::time::timeout(Duration::from_secs(20), listener.recv())
        .await
        .expect("a notification within 20 s")
        .expect("recv");
    assert_eq!(got.payload, marker, "a rolled-back notification was sent");
}

async fn atomic_enqueue_publish_and_notify_commit_together_and_wake_waiters(api: Api) {
    let mut hints = api.store.engine().wake_subscribe();
    let mut listener = api
        .store
        .channel("orders-placed")
        .listen()
        .await
        .expect("listen");
    let claim = spawn_request(
        &api,
        Request::post("/api/v1/queues/order-mail/claim")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Body::from(
                json!({"worker": "w", "wait_ms": 20_000}).to_string(),
            ))
            .expect("request"),
    );
    let read = spawn_request(
        &api,
        Request::get("/api/v1/streams/orders/events?after=0&wait_ms=20000")
            .header("host", "localhost")
            .body(Body::empty())
            .expect("request"),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (s, v) = atomic(
        &api,
        json!([
            {"op": "enqueue", "queue": "order-mail", "payload": {"order": 1}, "priority": 2},
            {"op": "publish", "stream": "orders", "events": [{"key": "o1", "payload": {"order": 1}}]},
            {"op": "notify", "channel": "orders-placed", "payload": "order 1"}
        ]),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 3, "{v}");
    assert_eq!(results[0]["op"], json!("enqueue"));
    assert_eq!(results[0]["duplicate"], json!(false));
    let id = results[0]["id"].as_i64().expect("id");
    assert_eq!(results[1]["op"], json!("publish"));
    let offset = results[1]["offsets"][0].as_i64().expect("offset");
    assert_eq!(results[2], json!({"op": "notify"}));

    // The commit hinted this process's waiters before the response left:
    // the hints are buffered already (no waiting on a clock here).
    let (mut queue_hint, mut stream_hint) = (false, false);
    loop {
        match hints.try_recv() {
            Ok(w) => {
                queue_hint |= w.concerns("order-mail");
                stream_hint |= w.concerns_stream("orders");
            }
            Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => continue,
            Err(_) => break,
        }
    }
    assert!(
        queue_hint && stream_hint,
        "queue {queue_hint}, stream {stream_hint}"
    );

    // The waiting claim and read got them, woken long before their 20 s.
    let (took, claimed) = claim.await.expect("claim");
    assert_eq!(claimed["jobs"][0]["id"].as_i64(), Some(id), "{claimed}");
    assert_eq!(claimed["jobs"][0]["payload"], json!({"order": 1}));
    assert!(took < Duration::from_secs(10), "{took:?}");
    let (took, page) = read.await.expect("read");
    assert_eq!(page["events"][0]["offset"].as_i64(), Some(offset), "{page}");
    assert_eq!(page["events"][0]["key"], json!("o1"));
    assert!(took < Duration::from_secs(10), "{took:?}");
    let got = tokio::time::timeout(Duration::from_secs(20), listener.recv())
        .await
        .expect("the notification within 20 s")
        .expect("recv");
    assert_eq!(got.payload, "order 1");

    // Every other kind commits too, and answers in the single call's shape.
    let (s, v) = api
        .post(
            "/api/v1/queues/order-mail/jobs/batch",
            json!({"jobs": [{"payload": "a"}, {"payload": "b"}, {"payload": "c"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (_, claimed) = api
        .post(
            "/api/v1/queues/order-mail/claim",
            json!({"worker": "w", "limit": 3}),
        )
        .await;
    let jobs = claimed["jobs"].as_array().expect("jobs").clone();
    assert_eq!(jobs.len(), 3, "{claimed}");
    let settle =
        |op: &str, j: &Value| json!({"op": op, "id": j["id"], "worker": "w", "token": j["token"]});
    let mut retry = settle("retry", &jobs[0]);
    retry["error"] = json!("later");
    retry["delay_ms"] = json!(60_000);
    let mut fail = settle("fail", &jobs[1]);
    fail["error"] = json!("never");
    let mut snooze = settle("snooze", &jobs[2]);
    snooze["delay_ms"] = json!(60_000);
    let (s, v) = atomic(
        &api,
        json!([
            retry,
            fail,
            snooze,
            {"op": "enqueue_batch", "queue": "order-mail", "jobs": [{"payload": 1}, {"payload": 2}]},
            {"op": "offset_commit", "stream": "orders", "consumer": "mailer", "offset": offset},
            {"op": "schedule_set", "name": "nightly", "spec": "0 3 * * *", "queue": "reports"},
            {"op": "schedule_pause", "name": "nightly"},
            {"op": "schedule_resume", "name": "nightly"},
            {"op": "schedule_remove", "name": "nightly"}
        ]),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let r = &v["results"];
    assert_eq!(r[0]["op"], json!("retry"));
    assert_eq!(r[0]["outcome"], json!("scheduled"), "{v}");
    assert_eq!(r[1], json!({"op": "fail", "done": true}));
    assert_eq!(r[2]["op"], json!("snooze"));
    assert!(r[2]["run_at"].as_i64() > Some(0), "{v}");
    assert_eq!(r[3]["jobs"].as_array().map(Vec::len), Some(2));
    assert_eq!(r[4], json!({"op": "offset_commit", "offset": offset}));
    assert_eq!(r[5]["spec"], json!("0 3 * * *"));
    assert_eq!(r[6]["paused"], json!(true));
    assert_eq!(r[7]["paused"], json!(false));
    assert_eq!(r[8], json!({"op": "schedule_remove", "removed": true}));
    let (_, info) = api.get(&format!("/api/v1/jobs/{}", jobs[0]["id"])).await;
    assert_eq!(info["state"], json!("retryable"), "{info}");
    let (_, info) = api.get(&format!("/api/v1/jobs/{}", jobs[1]["id"])).await;
    assert_eq!(info["state"], json!("dead"), "{info}");
    let (_, info) = api.get(&format!("/api/v1/jobs/{}", jobs[2]["id"])).await;
    assert_eq!(info["state"], json!("scheduled"), "snoozed: {info}");
    assert_eq!(
        info["attempts"],
        json!(0),
        "a snooze uses no attempt: {info}"
    );
    let (_, consumer) = api.get("/api/v1/streams/orders/consumers/mailer").await;
    assert_eq!(consumer, json!({"offset": offset}));
    let (_, list) = api.get("/api/v1/schedules").await;
    assert_eq!(list["schedules"], json!([]));
    api.done().await;
}

async fn atomic_with_a_stale_claim_token_is_409_and_writes_nothing(api: Api) {
    let mut listener = api
        .store
        .channel("side-news")
        .listen()
        .await
        .expect("listen");
    api.post("/api/v1/queues/work/jobs", json!({"payload": "x"}))
        .await;
    let (_, claimed) = api
        .post("/api/v1/queues/work/claim", json!({"worker": "w"}))
        .await;
    let job = claimed["jobs"][0].clone();
    let (id, token) = (job["id"].clone(), job["token"].as_i64().expect("token"));
    let side = || {
        vec![
            json!({"op": "enqueue", "queue": "side", "payload": 1}),
            json!({"op": "publish", "stream": "side-events", "events": [{"payload": 1}]}),
            json!({"op": "notify", "channel": "side-news", "payload": "rolled back"}),
        ]
    };
    let stale = [
        json!({"op": "ack", "id": id, "worker": "w", "token": token + 1}),
        json!({"op": "ack", "id": id, "worker": "someone-else", "token": token}),
        json!({"op": "retry", "id": id, "worker": "w", "token": token + 1, "error": "e"}),
        json!({"op": "fail", "id": id, "worker": "w", "token": token + 1, "error": "e"}),
        json!({"op": "snooze", "id": id, "worker": "w", "token": token + 1, "delay_ms": 1000}),
    ];
    for bad in stale {
        let mut ops = side();
        ops.push(bad.clone());
        let (s, v) = atomic(&api, Value::Array(ops)).await;
        assert_eq!(s, StatusCode::CONFLICT, "{bad}: {v}");
        assert_eq!(v["error"]["code"], json!("not_held"), "{v}");
        assert_eq!(v["error"]["op_index"], json!(3), "{v}");
        assert_eq!(v["error"]["op"], bad["op"], "{v}");
        assert_eq!(field(&v), "ops[3].token", "{v}");
        assert_nothing_written(&api, "side", "side-events").await;
    }
    let (_, info) = api.get(&format!("/api/v1/jobs/{id}")).await;
    assert_eq!(info["state"], json!("processing"), "untouched: {info}");
    assert_nothing_written(&api, "side", "side-events").await;
    assert_next_notification_is(&api, &mut listener, "after the refusals").await;

    // With the claim still held, the same request commits, ack and all.
    let mut ops = side();
    ops.push(json!({"op": "ack", "id": id, "worker": "w", "token": token}));
    let (s, v) = atomic(&api, Value::Array(ops)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["results"][3], json!({"op": "ack", "done": true}));
    let (s, _) = api.get(&format!("/api/v1/jobs/{id}")).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "acked and deleted");
    let (_, stats) = api.get("/api/v1/queues/side").await;
    assert_eq!(stats["ready"], json!(1), "{stats}");
    api.done().await;
}

async fn atomic_bad_input_is_400_naming_the_op_and_writes_nothing(api: Api) {
    let mut listener = api
        .store
        .channel("side-news")
        .listen()
        .await
        .expect("listen");
    let first = || {
        vec![
            json!({"op": "enqueue", "queue": "side", "payload": 1}),
            json!({"op": "publish", "stream": "side-events", "events": [{"payload": 1}]}),
            json!({"op": "notify", "channel": "side-news", "payload": "rolled back"}),
        ]
    };
    // Refused as read (before the transaction), and by the store inside it
    // after ops 0 to 2 ran: either way nothing is left.
    let cases = [
        (
            json!({"op": "enqueue", "queue": "side", "payload": 1, "priority": "high"}),
            Some("enqueue"),
            "ops[3].priority",
        ),
        (
            json!({"op": "enqueue", "queue": "side", "payload": 1, "colour": "red"}),
            Some("enqueue"),
            "ops[3].colour",
        ),
        (
            json!({"op": "ack", "worker": "w", "token": 1}),
            Some("ack"),
            "ops[3].id",
        ),
        (
            json!({"op": "ack", "id": 0, "worker": "w", "token": 1}),
            Some("ack"),
            "ops[3].id",
        ),
        (json!({"op": "launch", "queue": "side"}), None, "ops[3].op"),
        (json!({"queue": "side"}), None, "ops[3].op"),
        (json!("enqueue"), None, "ops[3]"),
        (
            json!({"op": "enqueue", "queue": "", "payload": 1}),
            Some("enqueue"),
            "ops[3].queue",
        ),
        (
            json!({"op": "publish", "stream": "side-events", "events": []}),
            Some("publish"),
            "ops[3].events",
        ),
        (
            json!({"op": "ack", "id": 1, "worker": "", "token": 1}),
            Some("ack"),
            "ops[3].worker",
        ),
        (
            json!({"op": "notify", "channel": "side-news", "payload": "x".repeat(8_000)}),
            Some("notify"),
            "ops[3].payload",
        ),
        (
            json!({"op": "lock_fence", "name": "report", "token": 0}),
            Some("lock_fence"),
            "ops[3].token",
        ),
        (
            json!({"op": "schedule_set", "name": "n", "spec": "every so often", "queue": "q"}),
            Some("schedule_set"),
            "ops[3].spec",
        ),
        (
            json!({"op": "offset_commit", "stream": "side-events", "consumer": "c", "offset": 1_000_000_000_000_i64}),
            Some("offset_commit"),
            "ops[3]",
        ),
    ];
    for (bad, op, want) in cases {
        let mut ops = first();
        ops.push(bad.clone());
        let (s, v) = atomic(&api, Value::Array(ops)).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}: {v}");
        assert_eq!(v["error"]["code"], json!("invalid_input"), "{v}");
        assert_eq!(v["error"]["op_index"], json!(3), "{v}");
        assert_eq!(v["error"].get("op").and_then(Value::as_str), op, "{v}");
        assert!(field(&v).starts_with(want), "{bad}: want {want}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("op 3"), "{v}");
        assert_nothing_written(&api, "side", "side-events").await;
    }
    // A missing schedule is 404, named the same way.
    let mut ops = first();
    ops.push(json!({"op": "schedule_pause", "name": "missing"}));
    let (s, v) = atomic(&api, Value::Array(ops)).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    assert_eq!(v["error"]["op_index"], json!(3), "{v}");
    assert_nothing_written(&api, "side", "side-events").await;
    assert_next_notification_is(&api, &mut listener, "after the refusals").await;
    api.done().await;
}

async fn atomic_with_a_lost_lock_or_lease_is_refused_and_writes_nothing(api: Api) {
    let acquire = |owner: &'static str| {
        api.post(
            "/api/v1/locks/report/acquire",
            json!({"owner": owner, "ttl_ms": 60_000}),
        )
    };
    let (_, a) = acquire("a").await;
    let lost = a["token"].as_i64().expect("token");
    api.post(
        "/api/v1/locks/report/release",
        json!({"owner": "a", "token": lost}),
    )
    .await;
    let (_, b) = acquire("b").await;
    let held = b["token"].as_i64().expect("token");
    assert!(held > lost);
    let enqueue = json!({"op": "enqueue", "queue": "side", "payload": 1});
    for (ops, index) in [
        (
            json!([{"op": "lock_fence", "name": "report", "token": lost}, enqueue]),
            0,
        ),
        (
            json!([enqueue, {"op": "lock_fence", "name": "report", "token": lost}]),
            1,
        ),
        (
            json!([enqueue, {"op": "lock_fence", "name": "nobody-holds-this", "token": 1}]),
            1,
        ),
    ] {
        let (s, v) = atomic(&api, ops).await;
        assert_eq!(s, StatusCode::CONFLICT, "{v}");
        assert_eq!(v["error"]["code"], json!("not_held"), "{v}");
        assert_eq!(v["error"]["op_index"], json!(index), "{v}");
        assert_eq!(v["error"]["op"], json!("lock_fence"), "{v}");
        assert_eq!(field(&v), format!("ops[{index}].token"), "{v}");
        assert_nothing_written(&api, "side", "side-events").await;
    }
    let (s, v) = atomic(
        &api,
        json!([{"op": "lock_fence", "name": "report", "token": held}, enqueue]),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["results"][0], json!({"op": "lock_fence"}));
    let (_, stats) = api.get("/api/v1/queues/side").await;
    assert_eq!(stats["ready"], json!(1), "{stats}");

    // A group checkpoint is fenced by the lease epoch.
    let engine = api.store.engine();
    engine
        .group_ensure(GroupEnsureParams::new("billing", "ledger", 1))
        .await
        .expect("ensure");
    let (_, published) = api
        .post(
            "/api/v1/streams/ledger/events",
            json!({"events": [{"payload": 1}]}),
        )
        .await;
    let offset = published["offsets"][0].as_i64().expect("offset");
    // A checkpoint may not pass the readable head: on PostgreSQL an event
    // becomes readable once older open transactions (other tests') end.
    let (_, page) = api
        .get("/api/v1/streams/ledger/events?after=0&wait_ms=20000")
        .await;
    assert_eq!(page["next_after"].as_i64(), Some(offset), "{page}");
    let leases = engine
        .group_claim(alkstore_core::group::GroupClaimParams::new(
            "billing",
            "g1",
            Duration::from_secs(60),
            1,
        ))
        .await
        .expect("claim");
    let epoch = leases[0].epoch;
    let checkpoint = |worker: &str, epoch: i64| json!({"op": "group_checkpoint", "group": "billing", "bucket": 0, "worker": worker, "epoch": epoch, "offset": offset});
    for stale in [checkpoint("g1", epoch + 1), checkpoint("g2", epoch)] {
        let (s, v) = atomic(
            &api,
            json!([{"op": "enqueue", "queue": "side2", "payload": 1}, stale]),
        )
        .await;
        assert_eq!(s, StatusCode::CONFLICT, "{v}");
        assert_eq!(v["error"]["op_index"], json!(1), "{v}");
        assert_eq!(v["error"]["op"], json!("group_checkpoint"), "{v}");
        assert_eq!(field(&v), "ops[1].epoch", "{v}");
        assert_nothing_written(&api, "side2", "side-events").await;
    }
    let (_, status) = api.get("/api/v1/groups/billing").await;
    assert_eq!(status["buckets"][0]["checkpoint"], json!(0), "{status}");
    let (s, v) = atomic(&api, json!([checkpoint("g1", epoch)])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v["results"][0],
        json!({"op": "group_checkpoint", "checkpoint": offset})
    );
    let (_, status) = api.get("/api/v1/groups/billing").await;
    assert_eq!(
        status["buckets"][0]["checkpoint"],
        json!(offset),
        "{status}"
    );
    api.done().await;
}

/// An offset commit with `expected` moves the offset only from exactly
/// that one: on the single route a moved offset is 409 naming `expected`
/// and nothing is saved; in an atomic request it is 409 for the op and
/// nothing of the request is written.
async fn offset_commits_with_expected_are_compare_and_set(api: Api) {
    let (_, published) = api
        .post(
            "/api/v1/streams/ledger/events",
            json!({"events": [{"payload": 1}, {"payload": 2}, {"payload": 3}]}),
        )
        .await;
    let o: Vec<i64> = published["offsets"]
        .as_array()
        .expect("offsets")
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    // Readable first: a commit may not pass the readable head.
    let (_, page) = api
        .get("/api/v1/streams/ledger/events?after=0&limit=3&wait_ms=20000")
        .await;
    assert_eq!(page["next_after"].as_i64(), Some(o[2]), "{page}");
    let consumer = "/api/v1/streams/ledger/consumers/billing";
    let put = |offset: i64, expected: i64| {
        api.call(
            "PUT",
            consumer,
            Some(json!({"offset": offset, "expected": expected})),
        )
    };
    let (s, v) = put(o[0], o[0]).await;
    assert_eq!(s, StatusCode::CONFLICT, "nothing saved is 0: {v}");
    assert_eq!(
        (v["error"]["code"].as_str(), field(&v)),
        (Some("not_held"), "expected"),
        "{v}"
    );
    assert_eq!(api.get(consumer).await.1, json!({"offset": null}));
    let (s, v) = put(o[0], 0).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"offset": o[0]})));
    let (s, v) = put(o[1], 0).await;
    assert_eq!(s, StatusCode::CONFLICT, "moved on: {v}");
    assert_eq!(api.get(consumer).await.1, json!({"offset": o[0]}));
    let (s, v) = put(o[0], o[1]).await;
    assert_eq!(
        (s, field(&v)),
        (StatusCode::BAD_REQUEST, "expected"),
        "an expectation past the offset: {v}"
    );

    let commit = |offset: i64, expected: i64| json!({"op": "offset_commit", "stream": "ledger", "consumer": "billing", "offset": offset, "expected": expected});
    let enqueue = json!({"op": "enqueue", "queue": "side", "payload": 1});
    let (s, v) = atomic(&api, json!([enqueue, commit(o[1], 0)])).await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["error"]["code"], json!("not_held"), "{v}");
    assert_eq!(v["error"]["op_index"], json!(1), "{v}");
    assert_eq!(v["error"]["op"], json!("offset_commit"), "{v}");
    assert_eq!(field(&v), "ops[1].expected", "{v}");
    let (s, v) = api.get("/api/v1/queues/side").await;
    assert_eq!(s, StatusCode::NOT_FOUND, "the enqueue rolled back: {v}");
    assert_eq!(api.get(consumer).await.1, json!({"offset": o[0]}));
    let (s, v) = atomic(&api, json!([enqueue, commit(o[2], o[0])])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v["results"][1],
        json!({"op": "offset_commit", "offset": o[2]})
    );
    assert_eq!(api.get(consumer).await.1, json!({"offset": o[2]}));
    api.done().await;
}

async fn atomic_requests_are_capped(api: Api) {
    let notify = json!({"op": "notify", "channel": "c", "payload": "p"});
    let (s, v) = atomic(&api, Value::Array(vec![notify.clone(); 101])).await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "ops"), "{v}");
    let (s, v) = atomic(&api, json!([])).await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "ops"), "{v}");
    let (s, v) = atomic(&api, Value::Array(vec![notify; 100])).await;
    assert_eq!(s, StatusCode::OK, "100 ops are allowed: {v}");
    let jobs: Vec<Value> = (0..600).map(|i| json!({"payload": i})).collect();
    let batch = json!({"op": "enqueue_batch", "queue": "side", "jobs": jobs});
    let (s, v) = atomic(&api, json!([batch, batch])).await;
    assert_eq!(
        (s, field(&v)),
        (StatusCode::BAD_REQUEST, "ops"),
        "1,200 rows: {v}"
    );
    assert_nothing_written(&api, "side", "side-events").await;
    let (s, v) = api
        .post("/api/v1/atomic", json!({"ops": [], "extra": 1}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let (s, v) = api
        .post("/api/v1/atomic", json!({"ops": {"op": "notify"}}))
        .await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "ops"), "{v}");
    api.done().await;
}

fn with_token() -> ServeOptions {
    ServeOptions {
        token: Some("0123456789abcdef-secret".into()),
        ..ServeOptions::default()
    }
}

macro_rules! on_both_engines {
    ($($name:ident($opts:expr)),* $(,)?) => {
        mod sqlite {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Api::sqlite($opts).await).await;
                }
            )*
        }
        mod postgres {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Api::postgres($opts).await).await;
                }
            )*
        }
    };
}

on_both_engines!(
    jobs_enqueue_claim_settle_and_inspect(ServeOptions::default()),
    a_waiting_claim_gets_a_job_enqueued_after_it_started(ServeOptions::default()),
    bad_input_is_a_4xx_naming_the_field_and_writes_nothing(ServeOptions::default()),
    streams_publish_read_and_commit(ServeOptions::default()),
    groups_schedules_and_locks(ServeOptions::default()),
    the_token_guards_every_route_and_other_sites_change_nothing(with_token()),
    an_unprotected_server_answers_only_to_loopback_names(ServeOptions::default()),
    jobs_show_retryable_scheduled_and_only_a_held_claim(ServeOptions::default()),
    unknown_queues_are_404_and_names_are_taken_as_given(ServeOptions::default()),
    group_dead_letters_list_requeue_and_purge(ServeOptions::default()),
    atomic_enqueue_publish_and_notify_commit_together_and_wake_waiters(ServeOptions::default()),
    atomic_with_a_stale_claim_token_is_409_and_writes_nothing(ServeOptions::default()),
    atomic_bad_input_is_400_naming_the_op_and_writes_nothing(ServeOptions::default()),
    atomic_with_a_lost_lock_or_lease_is_refused_and_writes_nothing(ServeOptions::default()),
    atomic_requests_are_capped(ServeOptions::default()),
    offset_commits_with_expected_are_compare_and_set(ServeOptions::default()),
    job_results_are_saved_by_the_ack_and_waited_for(ServeOptions::default()),
    rate_limits_admit_up_to_their_limit(ServeOptions::default()),
    notifications_reach_an_event_stream_listener(ServeOptions::default()),
    group_members_over_http_share_buckets_and_are_fenced(ServeOptions::default()),
    processes_are_listed_and_take_orders(ServeOptions::default()),
    the_store_says_which_store_it_is(ServeOptions::default()),
    operators_count_search_and_act_on_jobs_by_state(ServeOptions::default()),
    schedules_run_now_and_keep_their_fires(ServeOptions::default()),
    group_handoffs_tell_failovers_from_rebalances(ServeOptions::default()),
    depth_history_and_a_week_of_throughput(ServeOptions::default()),
    the_documented_max_attempts_default_is_the_real_one(ServeOptions::default()),
);

/// Every operation of the OpenAPI document has a summary and a description.
#[test]
fn every_operation_has_a_summary_and_a_description() {
    let doc = alkstore_http::openapi();
    let mut missing = Vec::new();
    let paths = doc["paths"].as_object().expect("paths");
    for (path, item) in paths {
        for (method, op) in item.as_object().expect("path item") {
            for key in ["summary", "description"] {
                if op[key].as_str().is_none_or(|t| t.trim().is_empty()) {
                    missing.push(format!("{method} {path}: {key}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "undocumented: {missing:#?}");
    assert!(paths.len() > 20, "{} paths", paths.len());
}

/// The documented default of `max_attempts` is what the store gives a job
/// enqueued without one (over HTTP, on each engine), and the document's
/// text names no other number.
async fn the_documented_max_attempts_default_is_the_real_one(api: Api) {
    let doc = alkstore_http::openapi();
    let schema = &doc["components"]["schemas"]["EnqueueRequest"]["properties"]["max_attempts"];
    let documented = schema["default"].as_u64().expect("a documented default");
    let (s, job) = api
        .post("/api/v1/queues/defaults/jobs", json!({"payload": 1}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{job}");
    let (s, info) = api.get(&format!("/api/v1/jobs/{}", job["id"])).await;
    assert_eq!(s, StatusCode::OK, "{info}");
    assert_eq!(
        info["max_attempts"].as_u64(),
        Some(documented),
        "the stored job: {info}; the document: {schema}"
    );
    let text = schema["description"].as_str().unwrap_or_default();
    assert!(!text.contains("25"), "{text}");
}

#[test]
fn the_committed_openapi_document_matches_the_routes() {
    let committed = include_str!("../../openapi.json");
    let generated = alkstore_http::openapi_json();
    assert!(
        committed.trim() == generated.trim(),
        "crates/alkstore-http/openapi.json is stale: regenerate it with `alk serve --print-openapi > crates/alkstore-http/openapi.json`"
    );
    let doc: Value = serde_json::from_str(&generated).expect("json");
    for path in [
        "/api/v1/queues/{queue}/claim",
        "/api/v1/jobs/{id}/ack",
        "/api/v1/streams/{stream}/events",
        "/api/v1/groups/{group}",
        "/api/v1/schedules/{name}",
        "/api/v1/locks/{name}/acquire",
        "/api/v1/atomic",
        "/api/v1/jobs/{id}/result",
        "/api/v1/rates/{name}/acquire",
        "/api/v1/channels/{channel}/listen",
        "/api/v1/groups/{group}/members/{member}/claim",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} documented");
    }
}
