//! An order service: each order row and its `order-placed` event commit in
//! one transaction (`Store::begin`), and a subscriber follows the stream,
//! resuming where it left off on the next run. Stops on Ctrl-C or SIGTERM,
//! or by itself once it has seen every order.
//!
//! ```sh
//! cargo run -p alkstore --example stream                       # sqlite://stream-example.db
//! cargo run -p alkstore --example stream -- postgres://postgres@127.0.0.1/postgres?schema=example
//! ```

use alkstore::stream::EventCtx;
use alkstore::{Store, Subscriber};

/// The event each order publishes.
#[derive(serde::Serialize, serde::Deserialize)]
struct OrderPlaced {
    order: i64,
}

/// Place `n` orders: a business row and its event, in one transaction of
/// the store's (`Store::begin`): the application's own SQL runs on the
/// engine's native handle inside it, the event joins it, and the two
/// commit together or not at all.
async fn place_orders(store: &Store, n: u32) -> Result<(), Box<dyn std::error::Error>> {
    for i in 0..n {
        let mut tx = store.begin().await?;
        let id: i64 = if let Some(conn) = tx.sqlite() {
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS example_orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)",
            )?;
            conn.query_row(
                "INSERT INTO example_orders (item) VALUES (?1) RETURNING id",
                [format!("book {i}")],
                |r| r.get(0),
            )?
        } else if let Some(client) = tx.postgres() {
            client
                .batch_execute(
                    "CREATE TABLE IF NOT EXISTS example_orders (id BIGSERIAL PRIMARY KEY, item TEXT NOT NULL)",
                )
                .await?;
            client
                .query_one(
                    "INSERT INTO example_orders (item) VALUES ($1) RETURNING id",
                    &[&format!("book {i}")],
                )
                .await?
                .get(0)
        } else {
            return Err("this store's engine has no native handle".into());
        };
        let customer = format!("customer-{}", i % 3);
        tx.stream("orders")
            .publish(Some(&customer), &OrderPlaced { order: id })
            .await?;
        tx.commit().await?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "sqlite://stream-example.db".to_string());
    let store = Store::open(&url).await?;
    place_orders(&store, 5).await?;

    let stream = store.stream("orders");
    let head = stream.stats().await?.head;
    println!(
        "stream orders: head {head:?}; consumer `shipping` resumes at {:?}",
        stream.offset("shipping").await?
    );
    let report = Subscriber::new(store.clone(), "orders", "shipping")
        .handler(|event: EventCtx<OrderPlaced>| async move {
            println!(
                "ship order {} (offset {}, key {:?})",
                event.payload().order,
                event.offset(),
                event.key()
            );
            Ok::<(), std::io::Error>(())
        })
        .run_until({
            let stream = stream.clone();
            async move {
                // Stop on a signal, or once everything placed so far is shipped.
                let caught_up = async {
                    while stream.offset("shipping").await.ok().flatten() < head {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                };
                tokio::select! {
                    () = alkstore::shutdown_signal() => {}
                    () = caught_up => {}
                }
            }
        })
        .await?;
    println!(
        "handled {} events; saved offset {:?}",
        report.handled, report.committed
    );
    Ok(())
}
