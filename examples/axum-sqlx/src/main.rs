//! The orders app (see the library docs): serves `POST /orders` on
//! `LISTEN` (default 127.0.0.1:3000) and sends the confirmation emails,
//! until Ctrl-C or SIGTERM.

use alkstore::worker::{JobCtx, Worker};
use alkstore::Store;
use alkstore_example_axum_sqlx::{migrate, restock, router, App, Email, EMAILS};
use sqlx::PgPool;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    // The store's tables go in their own schema (`alkstore`), the app's in
    // `public`: one database, one transaction for both.
    let store = Store::open(&url).await?;
    let pool = PgPool::connect(&url).await?;
    migrate(&pool).await?;
    restock(&pool, "book", 10).await?;

    let emails = Worker::new(store.clone())
        .queue(EMAILS, |job: JobCtx<Email>| async move {
            let email = job.payload();
            println!("emailing {} about order {}", email.to, email.order_id);
            Ok(())
        })
        .run_until(alkstore::shutdown_signal());
    let emails = tokio::spawn(emails);

    let addr = std::env::var("LISTEN").unwrap_or_else(|_| "127.0.0.1:3000".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{addr}");
    axum::serve(listener, router(App { pool, store }))
        .with_graceful_shutdown(alkstore::shutdown_signal())
        .await?;
    emails.await??;
    Ok(())
}
