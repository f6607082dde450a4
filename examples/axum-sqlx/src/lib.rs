//! An axum + sqlx web app whose orders and their confirmation emails
//! commit together, or not at all.
//!
//! `POST /orders` opens one sqlx transaction and, in it, inserts the order,
//! enqueues its email job on alkstore's queue (through
//! [`PgEngine::within_sqlx`](alkstore::postgres::PgEngine::within_sqlx)),
//! and reserves the stock. When the stock is short the request fails after
//! the order and its email were written, and both roll back with the
//! transaction: no order without its email, no email for an order that
//! never was. A worker (see `main.rs`) sends the emails.
//!
//! Run it with `cargo run -p alkstore-example-axum-sqlx` against the
//! PostgreSQL at `DATABASE_URL`, then
//! `curl -X POST localhost:3000/orders -H 'content-type: application/json'
//! -d '{"email":"a@example.com","item":"book","quantity":1}'`.

use alkstore::Writes as _;
use alkstore::{queue::NewJob, Store};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

/// The queue the confirmation emails go to.
pub const EMAILS: &str = "emails";

/// What the handlers share: the application's sqlx pool, and the store
/// its jobs live in (the same database).
#[derive(Debug, Clone)]
pub struct App {
    /// The application's own connections.
    pub pool: PgPool,
    /// alkstore, opened on the same database (`Store::open("postgres://…")`).
    pub store: Store,
}

/// The body of `POST /orders`.
#[derive(Debug, Deserialize, Serialize)]
pub struct NewOrder {
    /// Where the confirmation goes.
    pub email: String,
    /// What is ordered.
    pub item: String,
    /// How many.
    pub quantity: i32,
}

/// The email job's payload (JSON, as `alkstore::queue::Queue::enqueue` writes it,
/// so a worker's `JobCtx<Email>` reads it).
#[derive(Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Email {
    /// The recipient.
    pub to: String,
    /// The order it confirms.
    pub order_id: i64,
}

/// The answer to a placed order.
#[derive(Debug, Deserialize, Serialize)]
pub struct Placed {
    /// The order's id.
    pub order_id: i64,
    /// The id of its email job.
    pub email_job: i64,
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Fewer items in stock than ordered.
    #[error("not enough {0:?} in stock")]
    OutOfStock(String),
    /// A quantity below 1.
    #[error("the quantity must be at least 1")]
    BadQuantity,
    /// The store is not on PostgreSQL (the app's transactions are).
    #[error("the store must be on PostgreSQL, with the application's tables")]
    NotPostgres,
    /// The application's SQL failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A store call failed.
    #[error("store: {0}")]
    Store(#[from] alkstore::Error),
    /// The payload could not be encoded.
    #[error("payload: {0}")]
    Payload(#[from] serde_json::Error),
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = match self {
            AppError::OutOfStock(_) => StatusCode::CONFLICT,
            AppError::BadQuantity => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let body = serde_json::json!({ "error": self.to_string() });
        (status, Json(body)).into_response()
    }
}

/// Create the application's tables (the store creates its own).
pub async fn migrate(pool: &PgPool) -> Result<(), sqlx::Error> {
    for ddl in [
        "CREATE TABLE IF NOT EXISTS orders (id BIGSERIAL PRIMARY KEY, email TEXT NOT NULL, \
         item TEXT NOT NULL, quantity INT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS stock (item TEXT PRIMARY KEY, available INT NOT NULL)",
    ] {
        sqlx::query(ddl).execute(pool).await?;
    }
    Ok(())
}

/// Put `available` of `item` in stock.
pub async fn restock(pool: &PgPool, item: &str, available: i32) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO stock (item, available) VALUES ($1, $2) \
         ON CONFLICT (item) DO UPDATE SET available = excluded.available",
    )
    .bind(item)
    .bind(available)
    .execute(pool)
    .await
    .map(drop)
}

/// The app's routes.
pub fn router(app: App) -> Router {
    Router::new()
        .route("/orders", post(place_order))
        .with_state(app)
}

/// Insert the order, enqueue its email and reserve the stock, in one
/// transaction: a failure anywhere (an error return drops `tx`, which
/// rolls it back) leaves none of them.
async fn place_order(
    State(app): State<App>,
    Json(order): Json<NewOrder>,
) -> Result<(StatusCode, Json<Placed>), AppError> {
    if order.quantity < 1 {
        return Err(AppError::BadQuantity);
    }
    let store = app.store.postgres().ok_or(AppError::NotPostgres)?;
    let mut tx = app.pool.begin().await?;
    let order_id: i64 = sqlx::query_scalar(
        "INSERT INTO orders (email, item, quantity) VALUES ($1, $2, $3) RETURNING id",
    )
    .bind(&order.email)
    .bind(&order.item)
    .bind(order.quantity)
    .fetch_one(&mut *tx)
    .await?;
    let email = serde_json::to_vec(&Email {
        to: order.email,
        order_id,
    })?;
    let enqueued = store
        .within_sqlx(&mut tx)
        .job_enqueue(NewJob::new(EMAILS, email))
        .await?;
    // Last, so that a shortage fails the request after the order and its
    // email were written: both roll back with the transaction.
    let reserved = sqlx::query(
        "UPDATE stock SET available = available - $2 WHERE item = $1 AND available >= $2",
    )
    .bind(&order.item)
    .bind(order.quantity)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if reserved == 0 {
        return Err(AppError::OutOfStock(order.item));
    }
    tx.commit().await?;
    let email_job = enqueued.first().map(|e| e.id()).unwrap_or_default();
    Ok((
        StatusCode::CREATED,
        Json(Placed {
            order_id,
            email_job,
        }),
    ))
}
