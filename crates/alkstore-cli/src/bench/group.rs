//! `alk bench group`: consumer groups of worker processes (`alk
//! test-group-worker`, a no-op handler), each scenario on a fresh store.
//!
//! One line per scenario, machine-readable:
//! `bench peer=alkstore engine=E scenario=consume_Nw events=N secs=S events_per_s=R`
//! (1,000,000 events published first, so the figure is the steady rate
//! rather than start-up; from releasing the started workers, each with its store open, until
//! every bucket's checkpoint reached its last event: bucket claims
//! included, process start-up not, as the peers connect before their
//! clocks start), and
//! `bench peer=alkstore engine=E scenario=failover|rebalance ms=M` (failover:
//! SIGKILL of one of two workers until the other owns every bucket;
//! rebalance: a second worker starting, once the first has settled, until
//! it holds its half). `group_tx` (one worker whose handler writes a row
//! per event, in its transaction or in one of its own) is described in
//! `tx.rs`, and the worker processes every scenario drives in
//! `group_workers.rs`.

use std::time::Duration;

use alkstore::{AnyEngine, Error, Result};

use super::group_workers::{consume, snapshot, spawn, stop, until, BUCKETS, HEARTBEAT_MS, TTL_MS};
use super::support::scaled;

/// Arguments of `alk bench group`.
pub(crate) type GroupBenchArgs = super::support::ScenarioArgs;

const SCENARIOS: &[&str] = &[
    "consume_1w",
    "consume_2w",
    "consume_4w",
    "failover",
    "rebalance",
    "group_tx",
];

/// `failover`: two workers; one is killed; ms until the other owns all.
async fn failover(e: &AnyEngine, url: &str) -> Result<Duration> {
    let a = spawn(url, "a")?;
    let mut b = spawn(url, "b")?;
    until("two workers share the buckets", || async {
        let (owners, _) = snapshot(e).await;
        owners.len() == 2 && owners.values().sum::<usize>() == BUCKETS as usize
    })
    .await?;
    b.kill().map_err(|e| Error::database("bench: kill", e))?;
    let _ = b.wait();
    let moved = until("a takes over b's buckets", || async {
        let (owners, _) = snapshot(e).await;
        owners.get("a") == Some(&(BUCKETS as usize)) && owners.len() == 1
    })
    .await;
    stop(a);
    moved
}

/// `rebalance`: one worker owns all; ms until a second holds its half.
async fn rebalance(e: &AnyEngine, url: &str) -> Result<Duration> {
    let a = spawn(url, "a")?;
    until("one worker owns every bucket", || async {
        snapshot(e).await.0.get("a") == Some(&(BUCKETS as usize))
    })
    .await?;
    // Past its start-up settling (a heartbeat of quick passes): the join is
    // noticed at a steady worker's next heartbeat.
    tokio::time::sleep(Duration::from_millis(HEARTBEAT_MS * 2)).await;
    let b = spawn(url, "b")?;
    let joined = until("the second worker holds its half", || async {
        snapshot(e).await.0.get("b") == Some(&(BUCKETS as usize / 2))
    })
    .await;
    stop(a);
    stop(b);
    joined
}

/// Run `alk bench group`.
pub(crate) async fn run(args: GroupBenchArgs) -> Result<()> {
    let (target, wanted) = args.resolve(SCENARIOS)?;
    let engine = target.name();
    println!(
        "# alkstore {} engine={engine} groups: {BUCKETS} buckets, ttl {TTL_MS} ms, heartbeat {HEARTBEAT_MS} ms, worker processes with a no-op handler (group_tx: one row per event)",
        env!("CARGO_PKG_VERSION")
    );
    for (i, name) in wanted.iter().enumerate() {
        if *name == "group_tx" {
            super::tx::group_tx(&target, args.scale).await?;
            continue;
        }
        let fresh = target.fresh(300 + i).await?;
        match *name {
            "failover" | "rebalance" => {
                let took = if *name == "failover" {
                    failover(&fresh.engine, &fresh.url).await?
                } else {
                    rebalance(&fresh.engine, &fresh.url).await?
                };
                println!(
                    "bench peer=alkstore engine={engine} scenario={name} ms={:.0}",
                    took.as_secs_f64() * 1e3
                );
            }
            throughput => {
                let workers: usize = throughput
                    .trim_start_matches("consume_")
                    .trim_end_matches('w')
                    .parse()
                    .map_err(|_| Error::invalid("scenario", throughput.to_string()))?;
                let n = scaled(1_000_000, args.scale);
                let secs = consume(&fresh.engine, &fresh.url, workers, n, &[]).await?;
                println!(
                    "bench peer=alkstore engine={engine} scenario={throughput} events={n} secs={secs:.3} events_per_s={:.0}",
                    n as f64 / secs
                );
            }
        }
        fresh.cleanup().await?;
    }
    Ok(())
}
