//! PostgreSQL advisory locks, for comparison with `alk bench lock --on
//! postgres://…` (same scenarios, same output lines).
//!
//! `pg_try_advisory_lock(key)` then `pg_advisory_unlock(key)`, each one
//! statement on a session of its own: no table, no WAL, no TTL, no fencing
//! token, and a lock lives only as long as its connection.
//!
//! - lock_uncontended: one connection, 5,000 cycles.
//! - lock_8_contenders: 8 connections trying one key until 5,000 cycles
//!   succeeded in all; failed tries counted as attempts.
//!
//! Usage: pglocks-bench URL. BENCH_SCALE scales the cycle count.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio_postgres::NoTls;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

async fn locks(url: &str, conns: usize, cycles: usize) -> Res<(usize, f64)> {
    let done = Arc::new(AtomicUsize::new(0));
    let attempts = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..conns {
        let (client, conn) = tokio_postgres::connect(url, NoTls).await?;
        tokio::spawn(conn);
        clients.push(client);
    }
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for client in clients {
        let (done, attempts) = (done.clone(), attempts.clone());
        tasks.push(tokio::spawn(async move {
            let try_lock = client.prepare("SELECT pg_try_advisory_lock(42)").await?;
            let unlock = client.prepare("SELECT pg_advisory_unlock(42)").await?;
            while done.load(Ordering::Relaxed) < cycles {
                attempts.fetch_add(1, Ordering::Relaxed);
                let got: bool = client.query_one(&try_lock, &[]).await?.get(0);
                if got {
                    client.query_one(&unlock, &[]).await?;
                    done.fetch_add(1, Ordering::Relaxed);
                } else {
                    tokio::task::yield_now().await;
                }
            }
            Ok::<(), tokio_postgres::Error>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok((attempts.load(Ordering::Relaxed), t0.elapsed().as_secs_f64()))
}

#[tokio::main]
async fn main() -> Res<()> {
    let url = std::env::args().nth(1).ok_or("usage: pglocks-bench URL")?;
    let scale: f64 = std::env::var("BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let cycles = ((5_000.0 * scale).round() as usize).max(1);
    println!("# PostgreSQL advisory locks (pg_try_advisory_lock / pg_advisory_unlock, session level)");
    for (name, conns) in [("lock_uncontended", 1), ("lock_8_contenders", 8)] {
        let (attempts, secs) = locks(&url, conns, cycles).await?;
        println!(
            "bench peer=advisory engine=postgres scenario={name} cycles={cycles} attempts={attempts} secs={secs:.3} cycles_per_s={:.0}",
            cycles as f64 / secs
        );
    }
    Ok(())
}
