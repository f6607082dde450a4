//! An order service: each order row and its `order-placed` event commit in
//! one transaction (the outbox), and a subscriber follows the stream,
//! resuming where it left off on the next run. Stops on Ctrl-C or SIGTERM,
//! or by itself once it has seen every order.
//!
//! ```sh
//! cargo run -p alkstore --example stream                       # sqlite://stream-example.db
//! cargo run -p alkstore --example stream -- postgres://postgres@127.0.0.1/postgres?schema=example
//! ```

use alkstore::stream::{Event, NewEvent};
use alkstore::Store;

/// Place `n` orders: a business row and its event, in one transaction.
async fn place_orders(store: &Store, n: u32) -> Result<(), Box<dyn std::error::Error>> {
    #[allow(unreachable_patterns)]
    match store.engine() {
        #[cfg(feature = "sqlite")]
        alkstore::AnyEngine::Sqlite(engine) => {
            use alkstore::sqlite::rusqlite;
            let mut conn = rusqlite::Connection::open(engine.path())?;
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)",
            )?;
            for i in 0..n {
                let tx = conn.transaction()?;
                tx.execute(
                    "INSERT INTO orders (item) VALUES (?1)",
                    [format!("book {i}")],
                )?;
                let id = tx.last_insert_rowid();
                let event = NewEvent::new("orders", format!(r#"{{"order":{id}}}"#).into_bytes())
                    .key(format!("customer-{}", i % 3));
                engine.stream_publish_in(&tx, vec![event])?;
                tx.commit()?;
            }
        }
        #[cfg(feature = "postgres")]
        alkstore::AnyEngine::Postgres(engine) => {
            let mut client = engine.client().await?;
            let orders = format!(
                "{}.orders",
                alkstore::postgres::schema::quote_identifier(engine.schema())
            );
            client
                .batch_execute(&format!(
                    "CREATE TABLE IF NOT EXISTS {orders} (id BIGSERIAL PRIMARY KEY, item TEXT NOT NULL)"
                ))
                .await?;
            for i in 0..n {
                let tx = client.transaction().await?;
                let row = tx
                    .query_one(
                        &format!("INSERT INTO {orders} (item) VALUES ($1) RETURNING id"),
                        &[&format!("book {i}")],
                    )
                    .await?;
                let id: i64 = row.get(0);
                let event = NewEvent::new("orders", format!(r#"{{"order":{id}}}"#).into_bytes())
                    .key(format!("customer-{}", i % 3));
                engine.stream_publish_in(&*tx, vec![event]).await?;
                tx.commit().await?;
            }
        }
        _ => {}
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
    let report = stream
        .subscribe("shipping")
        .run(
            |event: Event| async move {
                println!(
                    "ship {} (offset {}, key {:?})",
                    String::from_utf8_lossy(&event.payload),
                    event.offset,
                    event.key
                );
                Ok::<(), std::io::Error>(())
            },
            {
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
            },
        )
        .await?;
    println!(
        "handled {} events; saved offset {:?}",
        report.handled, report.committed
    );
    Ok(())
}
