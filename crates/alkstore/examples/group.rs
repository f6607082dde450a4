//! A projection kept by a consumer group of three processes.
//!
//! The parent publishes orders (keyed by customer) to the `orders` stream
//! of a SQLite store, then starts three copies of itself as workers of the
//! group `totals`. The group's 16 buckets spread over the three; each
//! worker's handler adds an order's amount to its customer's row in a
//! `customer_totals` table of the same file. Per-key order makes the
//! projection idempotent: a row remembers the last offset it applied, so an
//! event delivered again (after a crash or a rebalance) changes nothing.
//! When every bucket has caught up, the parent stops the workers (they
//! checkpoint and release their buckets) and checks every total.
//!
//! ```sh
//! cargo run -p alkstore --example group
//! ```

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alkstore::group::{GroupEvent, GroupRunner};

/// The event each order publishes.
#[derive(serde::Serialize, serde::Deserialize)]
struct Order {
    amount: i64,
}
use alkstore::sqlite::rusqlite;
use alkstore::Store;

const DB: &str = "group-example.db";
const ORDERS: usize = 3_000;
const CUSTOMERS: usize = 50;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn amount(i: usize) -> i64 {
    i64::try_from(i % 7 + 1).unwrap_or(1) * 10
}

/// Apply one order to the projection, once: a row applies only offsets
/// above the last one it applied.
fn apply(
    conn: &rusqlite::Connection,
    customer: &str,
    offset: i64,
    amount: i64,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO customer_totals (customer, total, last_offset) VALUES (?1, ?2, ?3) \
         ON CONFLICT (customer) DO UPDATE SET total = total + excluded.total, \
           last_offset = excluded.last_offset \
         WHERE excluded.last_offset > customer_totals.last_offset",
        rusqlite::params![customer, amount, offset],
    )?;
    Ok(())
}

/// One worker process of the group, until SIGTERM.
async fn worker(name: &str) -> Res<()> {
    let store = Store::open(&format!("sqlite://{DB}")).await?;
    let conn = rusqlite::Connection::open(DB)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    let conn = Arc::new(Mutex::new(conn));
    let report = GroupRunner::new(store.clone(), "totals", "orders")
        .buckets(16)
        .worker_id(name)
        .handler(move |e: GroupEvent<Order>| {
            let amount = e.payload().amount;
            let customer = e.key().map(str::to_owned).unwrap_or_default();
            let applied = conn
                .lock()
                .map_err(|_| "projection lock poisoned".to_string())
                .and_then(|c| apply(&c, &customer, e.offset(), amount).map_err(|e| e.to_string()));
            std::future::ready(applied.map_err(std::io::Error::other))
        })
        .run_until(alkstore::shutdown_signal())
        .await?;
    eprintln!("{name}: {report:?}");
    Ok(())
}

fn spawn(name: &str) -> Res<Child> {
    Ok(Command::new(std::env::current_exe()?)
        .args(["worker", name])
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()?)
}

async fn parent() -> Res<()> {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{DB}{suffix}"));
    }
    let store = Store::open(&format!("sqlite://{DB}")).await?;
    rusqlite::Connection::open(DB)?.execute_batch(
        "CREATE TABLE customer_totals (customer TEXT PRIMARY KEY, total INTEGER NOT NULL, \
           last_offset INTEGER NOT NULL)",
    )?;
    let mut expected: BTreeMap<String, i64> = BTreeMap::new();
    let orders: Vec<_> = (0..ORDERS)
        .map(|i| {
            let customer = format!("customer-{}", i % CUSTOMERS);
            *expected.entry(customer.clone()).or_default() += amount(i);
            (Some(customer), Order { amount: amount(i) })
        })
        .collect();
    store.stream("orders").publish_batch(orders).await?;
    println!("published {ORDERS} orders for {CUSTOMERS} customers");

    let workers = ["a", "b", "c"].map(spawn);
    let started = Instant::now();
    // Wait until every bucket is owned and caught up.
    let status = loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let Ok(status) = store.group("totals").status().await {
            if status
                .buckets
                .iter()
                .all(|b| b.lag == 0 && b.owner.is_some())
            {
                break status;
            }
        }
        if started.elapsed() > Duration::from_secs(60) {
            return Err("the group did not catch up within 60 s".into());
        }
    };
    let mut owned: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for b in &status.buckets {
        owned
            .entry(b.owner.clone().unwrap_or_default())
            .or_default()
            .push(b.bucket);
    }
    for (worker, buckets) in &owned {
        println!("worker {worker} holds buckets {buckets:?}");
    }
    for child in workers {
        let mut child = child?;
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        child.wait()?;
    }

    let conn = rusqlite::Connection::open(DB)?;
    let mut stmt = conn.prepare("SELECT customer, total FROM customer_totals ORDER BY customer")?;
    let got: BTreeMap<String, i64> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    if got != expected {
        return Err(format!("the projection differs: {got:?} vs {expected:?}").into());
    }
    println!(
        "projection matches: {} customers, {} in all, kept by {} worker processes in {:.1} s",
        got.len(),
        got.values().sum::<i64>(),
        owned.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("worker") => worker(args.get(1).map_or("w", String::as_str)).await,
        _ => parent().await,
    }
}
