//! The operator's view of jobs across queues: counts per state as
//! operators know them, a search by state, queue and payload field, and
//! bulk retry, run now, cancel and delete.

use axum::http::StatusCode;
use serde_json::{json, Value};

use super::{field, Api};

/// Enqueue `payload` on `queue` (with `extra` body fields): its id.
async fn enqueue(api: &Api, queue: &str, payload: Value, extra: Value) -> i64 {
    let mut body = json!({"payload": payload, "max_attempts": 3});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let (s, v) = api
        .post(&format!("/api/v1/queues/{queue}/jobs"), body)
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    v["id"].as_i64().expect("id")
}

/// Claim one job of `queue`: `(id, token)`.
async fn claim(api: &Api, queue: &str) -> (i64, i64) {
    let (_, v) = api
        .post(
            &format!("/api/v1/queues/{queue}/claim"),
            json!({"worker": "op"}),
        )
        .await;
    let j = &v["jobs"][0];
    (
        j["id"].as_i64().expect("id"),
        j["token"].as_i64().expect("token"),
    )
}

async fn counts(api: &Api, query: &str) -> Value {
    let (s, v) = api.get(&format!("/api/v1/jobs/counts{query}")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

/// The ids a search finds.
async fn found(api: &Api, query: &str) -> Vec<i64> {
    let (s, v) = api.get(&format!("/api/v1/jobs?{query}")).await;
    assert_eq!(s, StatusCode::OK, "{query}: {v}");
    v["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| j["id"].as_i64().expect("id"))
        .collect()
}

/// `POST path` with `body`, asserting 200.
async fn ok(api: &Api, path: &str, body: Value) -> Value {
    let (s, v) = api.post(path, body).await;
    assert_eq!(s, StatusCode::OK, "{path}: {v}");
    v
}

async fn bulk(api: &Api, action: &str, ids: &[i64]) -> Value {
    let (s, v) = api
        .post("/api/v1/jobs/bulk", json!({"action": action, "ids": ids}))
        .await;
    assert_eq!(s, StatusCode::OK, "{action}: {v}");
    v
}

pub(crate) async fn operators_count_search_and_act_on_jobs_by_state(api: Api) {
    // One job in each state, over two queues.
    let failing = enqueue(&api, "billing", json!({"customer_id": 7}), json!({})).await;
    let (id, token) = claim(&api, "billing").await;
    assert_eq!(id, failing);
    let (s, v) = api
        .post(
            &format!("/api/v1/jobs/{id}/retry"),
            json!({"worker": "op", "token": token, "error": "card declined", "delay_ms": 600_000}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let dead = enqueue(&api, "billing", json!({"customer_id": 8}), json!({})).await;
    let (id, token) = claim(&api, "billing").await;
    assert_eq!(id, dead);
    api.post(
        &format!("/api/v1/jobs/{id}/fail"),
        json!({"worker": "op", "token": token, "error": "gone"}),
    )
    .await;
    let running = enqueue(&api, "mail", json!({"customer_id": 9}), json!({})).await;
    assert_eq!(claim(&api, "mail").await.0, running);
    let later = enqueue(
        &api,
        "mail",
        json!({"customer_id": 10}),
        json!({"delay_ms": 600_000}),
    )
    .await;
    let cancelled = enqueue(&api, "mail", json!({"customer_id": 11}), json!({})).await;
    api.post(&format!("/api/v1/jobs/{cancelled}/cancel"), json!({}))
        .await;
    let pending = enqueue(
        &api,
        "mail",
        json!({"customer_id": 12, "vip": true}),
        json!({}),
    )
    .await;

    let c = counts(&api, "").await;
    assert_eq!(
        c,
        json!({"pending": 1, "scheduled": 1, "retryable": 1, "running": 1, "expired": 0,
               "dead": 2, "cancelled": 1, "completed": 0}),
    );
    let m = counts(&api, "?queue=mail").await;
    assert_eq!(
        (m["pending"].as_u64(), m["dead"].as_u64()),
        (Some(1), Some(1)),
        "{m}"
    );
    let (_, q) = api.get("/api/v1/queues/billing").await;
    assert_eq!(
        (q["retryable"].as_u64(), q["cancelled"].as_u64()),
        (Some(1), Some(0)),
        "{q}"
    );

    assert_eq!(found(&api, "state=retryable").await, vec![failing]);
    assert_eq!(found(&api, "state=scheduled").await, vec![later]);
    assert_eq!(found(&api, "state=running").await, vec![running]);
    assert_eq!(found(&api, "state=pending").await, vec![pending]);
    assert_eq!(found(&api, "state=dead").await, vec![dead, cancelled]);
    assert_eq!(found(&api, "state=cancelled").await, vec![cancelled]);
    assert_eq!(found(&api, "state=dead&queue=billing").await, vec![dead]);
    assert_eq!(
        found(&api, "where=%24.customer_id%20%3D%2010").await,
        vec![later]
    );
    assert_eq!(
        found(&api, "where=%24.vip%3Dtrue&queue=mail").await,
        vec![pending]
    );
    assert_eq!(
        found(&api, "where=%24.customer_id%20%3D%208&state=dead").await,
        vec![dead]
    );
    assert!(found(&api, "where=%24.customer_id%20%3D%20%228%22")
        .await
        .is_empty());
    let all = found(&api, "limit=2").await;
    assert_eq!(all.len(), 2);
    let (_, page) = api.get("/api/v1/jobs?limit=2").await;
    assert_eq!(page["next_after_id"], json!(all[1]), "{page}");

    // Bulk actions, each on what its state allows.
    let v = bulk(&api, "run_now", &[failing, later, running, 999_999]).await;
    assert_eq!(v, json!({"changed": 2, "requested": 0}));
    assert_eq!(counts(&api, "").await["pending"], json!(3));
    let v = bulk(&api, "retry", &[dead, pending]).await;
    assert_eq!(v["changed"], json!(1), "the dead letter: {v}");
    assert_eq!(counts(&api, "").await["dead"], json!(1));
    let v = bulk(&api, "cancel", &[pending, running]).await;
    assert_eq!(v, json!({"changed": 1, "requested": 1}));
    let v = bulk(&api, "delete", &[cancelled, pending, later, running]).await;
    assert_eq!(
        v["changed"],
        json!(3),
        "two dead letters and a pending job: {v}"
    );
    let c = counts(&api, "").await;
    assert_eq!(
        (c["dead"].as_u64(), c["running"].as_u64()),
        (Some(0), Some(1)),
        "{c}"
    );

    // Bad input: a 400 naming the field, nothing changed.
    for (path, body, name) in [
        (
            "/api/v1/jobs/bulk",
            json!({"action": "nope", "ids": [1]}),
            "action",
        ),
        (
            "/api/v1/jobs/bulk",
            json!({"action": "cancel", "ids": []}),
            "ids",
        ),
        (
            "/api/v1/jobs/bulk",
            json!({"action": "cancel", "ids": [0]}),
            "ids",
        ),
    ] {
        let (s, v) = api.post(path, body).await;
        assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, name), "{v}");
    }
    for (query, name) in [
        ("state=sleeping", "state"),
        ("where=customer_id", "where"),
        ("where=%24.a%20%3D%20nope", "where"),
        ("limit=0", "limit"),
    ] {
        let (s, v) = api.get(&format!("/api/v1/jobs?{query}")).await;
        assert_eq!(
            (s, field(&v)),
            (StatusCode::BAD_REQUEST, name),
            "{query}: {v}"
        );
    }
    assert_eq!(counts(&api, "").await, c);
    api.done().await;
}

pub(crate) async fn schedules_run_now_and_keep_their_fires(api: Api) {
    let (s, v) = api
        .call(
            "PUT",
            "/api/v1/schedules/nightly%20report",
            Some(json!({"spec": "0 3 * * *", "queue": "reports", "payload": {"kind": "daily"}})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let next = v["next_fire_at_ms"].clone();
    let (_, fires) = api.get("/api/v1/schedules/nightly%20report/fires").await;
    assert_eq!(fires, json!({"fires": []}));

    let (s, run) = api
        .post("/api/v1/schedules/nightly%20report/run", json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{run}");
    assert_eq!(
        (&run["queue"], &run["manual"]),
        (&json!("reports"), &json!(true)),
        "{run}"
    );
    let id = run["job_id"].as_i64().expect("job id");
    let (_, job) = api.get(&format!("/api/v1/jobs/{id}")).await;
    assert_eq!(
        (&job["state"], &job["payload"]),
        (&json!("pending"), &json!({"kind": "daily"})),
        "{job}"
    );
    let (_, list) = api.get("/api/v1/schedules").await;
    assert_eq!(
        list["schedules"][0]["next_fire_at_ms"], next,
        "boundaries unmoved"
    );
    let (_, fires) = api
        .get("/api/v1/schedules/nightly%20report/fires?limit=5")
        .await;
    assert_eq!(fires["fires"][0]["job_id"], json!(id), "{fires}");
    assert_eq!(fires["fires"].as_array().map(Vec::len), Some(1));

    let (s, v) = api.post("/api/v1/schedules/missing/run", json!({})).await;
    assert_eq!((s, field(&v)), (StatusCode::NOT_FOUND, "name"), "{v}");
    let (s, v) = api
        .get("/api/v1/schedules/nightly%20report/fires?limit=51")
        .await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "limit"), "{v}");
    api.call("DELETE", "/api/v1/schedules/nightly%20report", None)
        .await;
    let (s, v) = api.get("/api/v1/schedules/nightly%20report/fires").await;
    assert_eq!(
        (s, field(&v)),
        (StatusCode::NOT_FOUND, "name"),
        "removed with it: {v}"
    );
    api.done().await;
}

pub(crate) async fn group_handoffs_tell_failovers_from_rebalances(api: Api) {
    let base = "/api/v1/groups/audit/members";
    ok(
        &api,
        base,
        json!({"stream": "orders", "member": "a", "buckets": 2}),
    )
    .await;
    ok(&api, base, json!({"stream": "orders", "member": "b"})).await;
    ok(&api, &format!("{base}/a/heartbeat"), json!({})).await;
    let b = ok(&api, &format!("{base}/b/heartbeat"), json!({})).await;
    assert_eq!(b["leases"].as_array().map(Vec::len), Some(1), "{b}");
    let (s, _) = api.call("DELETE", &format!("{base}/b"), None).await;
    assert_eq!(s, StatusCode::OK);
    ok(&api, &format!("{base}/a/heartbeat"), json!({})).await;

    let (s, v) = api.get("/api/v1/groups/audit/handoffs").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v["totals"],
        json!({"first": 2, "rebalance": 1, "leave": 1, "lapse": 0}),
        "{v}"
    );
    let newest = &v["handoffs"][0];
    assert_eq!(
        (
            &newest["from_worker"],
            &newest["to_worker"],
            &newest["cause"]
        ),
        (&json!("b"), &json!("a"), &json!("leave")),
        "{v}"
    );
    assert_eq!(v["handoffs"].as_array().map(Vec::len), Some(4));
    let (s, v) = api.get("/api/v1/groups/nobody/handoffs").await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    let (s, v) = api.get("/api/v1/groups/audit/handoffs?limit=0").await;
    assert_eq!((s, field(&v)), (StatusCode::BAD_REQUEST, "limit"), "{v}");
    api.done().await;
}

pub(crate) async fn depth_history_and_a_week_of_throughput(api: Api) {
    use alkstore::prelude::Engine;
    enqueue(&api, "depth%20q", json!({"n": 1}), json!({})).await;
    enqueue(
        &api,
        "depth%20q",
        json!({"n": 2}),
        json!({"delay_ms": 600_000}),
    )
    .await;
    let (_, v) = api.get("/api/v1/depth").await;
    assert_eq!(v, json!({"samples": []}), "no sweep ran yet");
    api.store.engine().sweep().await.expect("sweep");
    let (s, v) = api.get("/api/v1/depth?queue=depth%20q&window_s=3600").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let sample = &v["samples"][0];
    assert_eq!(
        (
            &sample["queue"],
            &sample["ready"],
            &sample["scheduled"],
            &sample["dead"]
        ),
        (&json!("depth q"), &json!(1), &json!(1), &json!(0)),
        "{v}"
    );
    let (s, v) = api.get("/api/v1/throughput?window_s=604800").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    for bad in [
        "/api/v1/throughput?window_s=604801",
        "/api/v1/depth?window_s=0",
    ] {
        let (s, v) = api.get(bad).await;
        assert_eq!(
            (s, field(&v)),
            (StatusCode::BAD_REQUEST, "window_s"),
            "{bad}: {v}"
        );
    }
    api.done().await;
}
