//! The orders app against PostgreSQL: an order and its email job commit
//! together, and a request that fails after its insert leaves neither.

use std::str::FromStr;

use alkstore::postgres::testing;
use alkstore::prelude::*;
use alkstore::Store;
use alkstore_example_axum_sqlx::{migrate, restock, router, App, Email, Placed, EMAILS};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tower::ServiceExt;

/// POST `body` as JSON to `/orders`; the status and the JSON answer.
async fn post_order(
    app: &axum::Router,
    body: serde_json::Value,
) -> (StatusCode, serde_json::Value) {
    let req = Request::post("/orders")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("request");
    let res = app.clone().oneshot(req).await.expect("infallible");
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .expect("body");
    (status, serde_json::from_slice(&bytes).expect("JSON"))
}

#[tokio::test]
async fn an_order_and_its_email_commit_together_or_not_at_all() {
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("PostgreSQL at DATABASE_URL (scripts/test starts one)");
    // The store's tables and the app's in one private schema.
    let schema = testing::unique_schema("axum_sqlx");
    let store = Store::open(&format!("{url}?schema={schema}"))
        .await
        .expect("store");
    let options = PgConnectOptions::from_str(&url)
        .expect("url")
        .options([("search_path", schema.as_str())]);
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await
        .expect("pool");
    migrate(&pool).await.expect("migrate");
    restock(&pool, "book", 1).await.expect("stock");
    let engine = store.postgres().expect("postgres").clone();
    let app = router(App {
        pool: pool.clone(),
        store,
    });

    let order = serde_json::json!({ "email": "a@example.com", "item": "book", "quantity": 1 });
    let (status, body) = post_order(&app, order).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let placed: Placed = serde_json::from_value(body).expect("placed");
    let email: String = sqlx::query_scalar("SELECT email FROM orders WHERE id = $1")
        .bind(placed.order_id)
        .fetch_one(&pool)
        .await
        .expect("the order row");
    assert_eq!(email, "a@example.com");
    let job = engine
        .job_get(placed.email_job)
        .await
        .expect("get")
        .expect("the email job");
    assert_eq!(job.queue, EMAILS);
    let payload: Email = serde_json::from_slice(&job.payload).expect("payload");
    assert_eq!(
        payload,
        Email {
            to: "a@example.com".into(),
            order_id: placed.order_id
        }
    );

    // The book is gone: the next order fails after its insert and its
    // enqueue, and neither stays.
    let order = serde_json::json!({ "email": "b@example.com", "item": "book", "quantity": 1 });
    let (status, body) = post_order(&app, order).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let inserted_then_undone: i64 = sqlx::query_scalar("SELECT last_value FROM orders_id_seq")
        .fetch_one(&pool)
        .await
        .expect("sequence");
    assert_eq!(inserted_then_undone, placed.order_id + 1, "the insert ran");
    let orders: Vec<String> = sqlx::query_scalar("SELECT email FROM orders ORDER BY id")
        .fetch_all(&pool)
        .await
        .expect("orders");
    assert_eq!(
        orders,
        ["a@example.com"],
        "no order from the failed request"
    );
    let emails = engine.queue_stats(EMAILS).await.expect("stats");
    assert_eq!(emails.ready, 1, "no email job from the failed request");

    let (status, _) = post_order(
        &app,
        serde_json::json!({ "email": "c@example.com", "item": "book", "quantity": 0 }),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    pool.close().await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}
