//! Redis Streams consumer groups, for comparison with `alk bench group`.
//!
//! - consume_Nw: 1,000,000 entries pre-filled (untimed); a group created at
//!   `0`; N consumers (tasks of this process, each on its own connection)
//!   loop `XREADGROUP GROUP g cN COUNT 500 STREAMS key >` then one `XACK`
//!   of the batch's ids, until every entry is acked. Timed from the
//!   consumers' start.
//! - failover: consumer `a` reads a batch and stops acking (it died); `b`
//!   runs `XAUTOCLAIM key g b 2000 0-0` every 500 ms (min idle = the lease
//!   TTL, period = the heartbeat, as in `alk bench group`); time from a's
//!   last read until b holds a's pending entries.
//! - rebalance: Redis groups have no partitions to hand over: a consumer
//!   that joins simply reads. Time from b's start until its first entry,
//!   while a consumes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client};

use crate::{key, payload, Reporter, Res};

const R: Reporter = Reporter { peer: "redis", engine: "redis" };
const COUNT: usize = 500;

/// XREADGROUP reply: [(stream key, [(id, [field, value, ...])])], nil when empty.
type ReadReply = Option<Vec<(String, Vec<(String, Vec<Vec<u8>>)>)>>;

async fn connect(client: &Client) -> Res<MultiplexedConnection> {
    let cfg = AsyncConnectionConfig::new().set_response_timeout(None);
    Ok(client.get_multiplexed_async_connection_with_config(&cfg).await?)
}

async fn prefill(con: &mut MultiplexedConnection, stream: &str, n: u64) -> Res<()> {
    let mut i = 0;
    while i < n {
        let end = (i + 1000).min(n);
        let mut p = redis::pipe();
        for seq in i..end {
            p.cmd("XADD").arg(stream).arg("*").arg(key(seq)).arg(payload(seq)).ignore();
        }
        p.query_async::<()>(con).await?;
        i = end;
    }
    redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(stream)
        .arg("g")
        .arg("0")
        .query_async::<()>(con)
        .await?;
    Ok(())
}

/// Read one batch as `consumer`; the ids read.
async fn read(con: &mut MultiplexedConnection, stream: &str, consumer: &str, block_ms: Option<u64>) -> Res<Vec<String>> {
    let mut cmd = redis::cmd("XREADGROUP");
    cmd.arg("GROUP").arg("g").arg(consumer).arg("COUNT").arg(COUNT);
    if let Some(ms) = block_ms {
        cmd.arg("BLOCK").arg(ms);
    }
    cmd.arg("STREAMS").arg(stream).arg(">");
    let reply: ReadReply = cmd.query_async(con).await?;
    Ok(reply
        .into_iter()
        .flatten()
        .flat_map(|(_, entries)| entries.into_iter().map(|(id, _)| id))
        .collect())
}

async fn ack(con: &mut MultiplexedConnection, stream: &str, ids: &[String]) -> Res<u64> {
    Ok(redis::cmd("XACK").arg(stream).arg("g").arg(ids).query_async(con).await?)
}

async fn consume(client: &Client, stream: &str, workers: u64, n: u64) -> Res<()> {
    let mut con = connect(client).await?;
    prefill(&mut con, stream, n).await?;
    let acked = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..workers {
        let mut con = connect(client).await?;
        let (stream, acked) = (stream.to_string(), acked.clone());
        tasks.push(tokio::spawn(async move {
            let name = format!("c{w}");
            while acked.load(Ordering::Relaxed) < n {
                let ids = read(&mut con, &stream, &name, None).await?;
                if ids.is_empty() {
                    tokio::task::yield_now().await;
                    continue;
                }
                acked.fetch_add(ack(&mut con, &stream, &ids).await?, Ordering::Relaxed);
            }
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    R.throughput(&format!("consume_{workers}w"), n, t0.elapsed());
    Ok(())
}

async fn failover(client: &Client, stream: &str) -> Res<()> {
    let mut con = connect(client).await?;
    prefill(&mut con, stream, 2_000).await?;
    // a reads a batch and dies without acking.
    let taken = read(&mut con, stream, "a", None).await?;
    let died = Instant::now();
    let mut b = connect(client).await?;
    loop {
        let reply: (String, Vec<(String, Vec<Vec<u8>>)>, Vec<String>) = redis::cmd("XAUTOCLAIM")
            .arg(stream)
            .arg("g")
            .arg("b")
            .arg(2_000)
            .arg("0-0")
            .arg("COUNT")
            .arg(COUNT)
            .query_async(&mut b)
            .await?;
        if reply.1.len() == taken.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!("bench peer=redis engine=redis scenario=failover ms={:.0}", died.elapsed().as_secs_f64() * 1e3);
    Ok(())
}

async fn rebalance(client: &Client, stream: &str) -> Res<()> {
    let mut con = connect(client).await?;
    prefill(&mut con, stream, 50_000).await?;
    let stop = Arc::new(AtomicU64::new(0));
    let a = {
        let (mut con, stream, stop) = (connect(client).await?, stream.to_string(), stop.clone());
        tokio::spawn(async move {
            while stop.load(Ordering::Relaxed) == 0 {
                let ids = read(&mut con, &stream, "a", Some(100)).await?;
                if !ids.is_empty() {
                    ack(&mut con, &stream, &ids).await?;
                }
            }
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        })
    };
    tokio::time::sleep(Duration::from_millis(5)).await;
    let joined = Instant::now();
    let mut b = connect(client).await?;
    while read(&mut b, stream, "b", Some(100)).await?.is_empty() {}
    let took = joined.elapsed();
    stop.store(1, Ordering::Relaxed);
    a.await??;
    println!("bench peer=redis engine=redis scenario=rebalance ms={:.1}", took.as_secs_f64() * 1e3);
    Ok(())
}

pub async fn run(scenarios: &[&'static str], events: u64) -> Res<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".to_string());
    let client = Client::open(url.as_str())?;
    println!("# redis groups: XREADGROUP COUNT {COUNT} + one XACK per batch, one connection per consumer task; failover by XAUTOCLAIM (min idle 2 s, every 500 ms); no partitions, so a joining consumer reads at once");
    let run = crate::run_id();
    let mut failures = Vec::new();
    let mut con = connect(&client).await?;
    for &s in scenarios {
        eprintln!("stream-peers: redis-groups: running {s}");
        let stream = format!("stream-peers:{run}:{s}");
        let r = match s {
            "consume_1w" => consume(&client, &stream, 1, events).await,
            "consume_2w" => consume(&client, &stream, 2, events).await,
            "consume_4w" => consume(&client, &stream, 4, events).await,
            "failover" => failover(&client, &stream).await,
            "rebalance" => rebalance(&client, &stream).await,
            _ => unreachable!(),
        };
        let _ = redis::cmd("DEL").arg(&stream).query_async::<u64>(&mut con).await;
        if let Err(e) = r {
            failures.push((s, e.to_string()));
        }
    }
    crate::finish("redis-groups", failures)
}
