//! A read model kept effectively once by a consumer group with a
//! transactional handler.
//!
//! Orders (keyed by customer) are published to the `orders` stream. Two
//! workers of the group `totals` share its 8 buckets; each event adds the
//! order's amount to its customer's row in `customer_totals`, a table of
//! the application's own in the same database, through the transaction the
//! group runner opened for the batch ([`GroupRunner::handler_tx`]). That
//! transaction commits the rows together with the bucket's checkpoint, so
//! the projection needs no idempotency bookkeeping of its own: an event's
//! amount is added once, by the run that moved the checkpoint past it.
//!
//! Half way, one worker "crashes" (its task is aborted mid-batch: its open
//! transaction rolls back, its leases stay until they lapse); the other
//! takes its buckets over after the lease's TTL and goes on from their
//! checkpoints. At the end every customer's total is checked against the
//! orders: nothing counted twice, nothing lost.
//!
//! ```sh
//! cargo run -p alkstore --example projection                      # SQLite
//! cargo run -p alkstore --example projection -- postgres://postgres@127.0.0.1:5432/postgres
//! ```
//!
//! [`GroupRunner::handler_tx`]: alkstore::group::GroupRunner::handler_tx

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use alkstore::group::{GroupEvent, GroupOpts, GroupRunner};
use alkstore::{Store, Tx};

const ORDERS: usize = 4_000;
const CUSTOMERS: usize = 40;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Order `i`: its customer and amount.
fn order(i: usize) -> (String, i64) {
    let amount = i64::try_from(i % 7 + 1).unwrap_or(1) * 10;
    (format!("customer-{}", i % CUSTOMERS), amount)
}

/// Run `sql` (no parameters) on the transaction's connection.
async fn execute(tx: &mut Tx, sql: &str) -> Res<()> {
    if let Some(conn) = tx.sqlite() {
        conn.execute_batch(sql)?;
        return Ok(());
    }
    if let Some(client) = tx.postgres() {
        client.batch_execute(sql).await?;
    }
    Ok(())
}

/// Add `amount` to `customer`'s total, inside `tx`: it commits with the
/// checkpoint that moves past the event, or not at all.
async fn apply(tx: &mut Tx, customer: &str, amount: i64) -> Res<()> {
    const UPSERT: &str =
        "INSERT INTO customer_totals (customer, total, orders) VALUES ($1, $2, 1) \
         ON CONFLICT (customer) DO UPDATE SET total = customer_totals.total + excluded.total, \
         orders = customer_totals.orders + 1";
    if let Some(conn) = tx.sqlite() {
        // SQLite takes `$1` as a numbered parameter too.
        conn.prepare_cached(UPSERT)?.execute((customer, amount))?;
        return Ok(());
    }
    if let Some(client) = tx.postgres() {
        client.execute(UPSERT, &[&customer, &amount]).await?;
    }
    Ok(())
}

/// Every customer's `(total, orders)`.
async fn totals(store: &Store) -> Res<BTreeMap<String, (i64, i64)>> {
    const SELECT: &str = "SELECT customer, total, orders FROM customer_totals";
    let mut tx = store.begin().await?;
    let mut out = BTreeMap::new();
    if let Some(conn) = tx.sqlite() {
        let mut stmt = conn.prepare(SELECT)?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?;
        for row in rows {
            let (customer, sums) = row?;
            out.insert(customer, sums);
        }
    } else if let Some(client) = tx.postgres() {
        for row in client.query(SELECT, &[]).await? {
            out.insert(row.get(0), (row.get(1), row.get(2)));
        }
    }
    tx.rollback().await?;
    Ok(out)
}

/// A worker of the group, on a task of its own: its handler applies each
/// order inside the batch's transaction.
fn spawn_worker(store: &Store, name: &str) -> tokio::task::JoinHandle<Res<u64>> {
    let runner = GroupRunner::new(store.clone(), "totals", "orders")
        .buckets(8)
        .worker_id(name)
        .opts(GroupOpts {
            ttl: Duration::from_secs(2),
            heartbeat: Duration::from_millis(300),
            ..GroupOpts::default()
        });
    tokio::spawn(async move {
        let report = runner
            .handler_tx(|tx, e: GroupEvent<i64>| {
                Box::pin(async move {
                    let customer = e.key().unwrap_or_default().to_owned();
                    apply(tx, &customer, *e.payload()).await
                })
            })
            .run_until(std::future::pending())
            .await?;
        Ok(report.handled)
    })
}

#[tokio::main]
async fn main() -> Res<()> {
    let dir = tempfile::tempdir()?;
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => format!("sqlite://{}", dir.path().join("projection.db").display()),
    };
    let store = Store::open(&url).await?;
    let mut tx = store.begin().await?;
    execute(
        &mut tx,
        "CREATE TABLE IF NOT EXISTS customer_totals \
         (customer TEXT PRIMARY KEY, total BIGINT NOT NULL, orders BIGINT NOT NULL); \
         DELETE FROM customer_totals",
    )
    .await?;
    tx.commit().await?;

    let mut want: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let orders = store.stream("orders");
    let publish = |from: usize, to: usize| {
        let events: Vec<_> = (from..to)
            .map(|i| {
                let (customer, amount) = order(i);
                (Some(customer), amount)
            })
            .collect();
        orders.publish_batch(events)
    };
    for i in 0..ORDERS {
        let (customer, amount) = order(i);
        let sums = want.entry(customer).or_default();
        sums.0 += amount;
        sums.1 += 1;
    }

    let a = spawn_worker(&store, "a");
    let b = spawn_worker(&store, "b");
    publish(0, ORDERS / 2).await?;
    // Let both work a while, then "crash" a: its task is aborted where it
    // stands, whatever transaction it has open rolls back.
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.abort();
    let _ = a.await;
    println!("worker a crashed; b takes its buckets over once their leases lapse");
    publish(ORDERS / 2, ORDERS).await?;

    let started = Instant::now();
    loop {
        let got = totals(&store).await?;
        if got == want {
            break;
        }
        let counted: i64 = got.values().map(|(_, n)| n).sum();
        if started.elapsed() > Duration::from_secs(60) {
            b.abort();
            return Err(format!("after 60 s, {counted} of {ORDERS} orders counted").into());
        }
        if counted > i64::try_from(ORDERS)? {
            b.abort();
            return Err(format!("{counted} orders counted for {ORDERS}: counted twice").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    b.abort();
    println!(
        "{ORDERS} orders of {CUSTOMERS} customers projected exactly once through a crash, in {:?}",
        started.elapsed()
    );
    Ok(())
}
