//! Peer benchmark: the crates.io `alkstore` 0.1.0 family (`alkstore`,
//! `alkstore-sqlite`, `alkstore-postgres`), an earlier implementation of
//! this design by other authors. Its crate names collide with ours, so it
//! lives in this workspace of its own.
//!
//! The scenarios are `alk bench queue`'s and `alk bench stream`'s, with the
//! same counts (scaled by BENCH_SCALE), task counts and payloads (jobs
//! `{"n":i}`; events 100 bytes of JSON, keyed `k{i % 64}`), each on a fresh
//! store: a new SQLite file, or a new PostgreSQL schema (dropped after).
//!
//! Output (stdout), one line per scenario, in our format:
//!   bench peer=alkstore0.1 engine=E scenario=NAME jobs=N secs=S jobs_per_s=R
//!   bench peer=alkstore0.1 engine=E scenario=NAME events=N secs=S events_per_s=R
//! Lines starting with `#` are comments (the settings); the rest on stderr.
//!
//! How each scenario maps onto the peer's API (it has no batch enqueue or
//! batch publish outside a transaction):
//!   enqueue_single_*     Queue::enqueue, one job per call, from 4/16 tasks
//!   enqueue_batch_100    one transaction of 100 TxHandle::enqueue_tx, committed
//!   claim_ack_single_20k Queue::claim_batch(1) + Queue::ack_batch
//!   claim128_batch_ack_100k, work_50k: claim_batch(128 / 500) + ack_batch
//!   end_to_end_1p2c      producer as enqueue_batch_100, 2 consumers as claim128
//!   insert_50k           2 tasks, transactions of 1000 enqueue_tx
//!   publish_single_4tasks StreamHandle::publish_with_key, 4 tasks
//!   publish_batch_100    one transaction of 100 publish_with_key_tx
//!   replay_1m            read_since pages of 10 000 (filled in transactions of 10 000)
//! Queue fills (untimed) are transactions of 5000 enqueue_tx.
//!
//! Settings, as the peer's docs have them: SQLite — its bootstrapped WAL +
//! synchronous=NORMAL (not configurable), default reader pool and 1 ms
//! watcher; PostgreSQL — pool max_size 16 (so that 16 callers each get a
//! connection; default 8) and `synchronous_commit: false` — the peer's
//! documented speed option (PgOpts::synchronous_commit, "trades max-tail
//! for slightly better p50"): it lifts its one-call-per-job paths by 15-50 %
//! here (enqueue from 4 tasks 3.9k -> 6.0k/s, publish 4.4k -> 6.6k/s at
//! BENCH_SCALE=0.2) and costs nothing measurable elsewhere. A commit
//! acknowledged that way can be lost on a server crash; alkstore runs durable.
//! UPSTREAM_SYNC_COMMIT=on runs the peer durable too (its shipping default).
//!
//! Usage: upstream-bench sqlite|postgres [URL] [scenario ...]
//! Env: BENCH_SCALE (default 1.0).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use alkstore::{EnqueueOpts, Queue, QueueOpts, Store, StreamHandle};
use serde_json::{Value, json};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const QUEUE_SCENARIOS: &[&str] = &[
    "enqueue_single_4tasks",
    "enqueue_single_16tasks",
    "enqueue_batch_100",
    "claim_ack_single_20k",
    "claim128_batch_ack_100k",
    "end_to_end_1p2c",
    "insert_50k",
    "work_50k",
];
const STREAM_SCENARIOS: &[&str] = &["publish_single_4tasks", "publish_batch_100", "replay_1m"];
const LIVE: &str = "live_latency";

fn scale() -> f64 {
    std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|v| *v > 0.0)
        .unwrap_or(1.0)
}

fn scaled(n: usize, scale: f64) -> usize {
    ((n as f64 * scale).round() as usize).max(1)
}

fn job(i: usize) -> Value {
    json!({ "n": i })
}

/// 100 bytes once encoded (a JSON string of 98 characters), like ours.
fn event(i: usize) -> Value {
    let mut s = format!("{i:>12}");
    s.extend(std::iter::repeat_n('.', 98 - s.len()));
    Value::String(s)
}

fn key(i: usize) -> Option<String> {
    Some(format!("k{}", i % 64))
}

enum Engine {
    Sqlite,
    Postgres(String),
}

impl Engine {
    fn name(&self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres(_) => "postgres",
        }
    }
}

fn sync_commit() -> bool {
    matches!(
        std::env::var("UPSTREAM_SYNC_COMMIT").as_deref(),
        Ok("on" | "true" | "1")
    )
}

/// A fresh store for one scenario, and how to clean it up.
struct Fresh {
    store: Arc<dyn Store>,
    cleanup: Cleanup,
}

enum Cleanup {
    File(std::path::PathBuf),
    Schema(String, String),
}

async fn fresh(engine: &Engine, scenario: &str) -> Res<Fresh> {
    let tag = format!("upstream_bench_{}_{scenario}", std::process::id());
    match engine {
        Engine::Sqlite => {
            let dir = std::env::temp_dir().join(tag);
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir)?;
            let path = dir.join("store.db");
            let store = alkstore_sqlite::open(
                path.to_str().ok_or("temp path is not UTF-8")?,
                alkstore_sqlite::SqliteOpts::default(),
            )?;
            Ok(Fresh { store: Arc::from(store), cleanup: Cleanup::File(dir) })
        }
        Engine::Postgres(url) => {
            let opts = alkstore_postgres::PgOpts {
                schema: tag.clone(),
                max_size: 16,
                synchronous_commit: sync_commit(),
                ..Default::default()
            };
            let store = alkstore_postgres::open(url, opts).await?;
            Ok(Fresh { store: Arc::from(store), cleanup: Cleanup::Schema(url.clone(), tag) })
        }
    }
}

async fn clean(c: Cleanup) -> Res<()> {
    match c {
        Cleanup::File(dir) => {
            let _ = std::fs::remove_dir_all(dir);
        }
        Cleanup::Schema(url, schema) => {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
            let h = tokio::spawn(conn);
            client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                .await?;
            drop(client);
            let _ = h.await;
        }
    }
    Ok(())
}

/// Enqueue jobs `from..to`, `batch` per transaction.
async fn enqueue_tx_batches(store: &dyn Store, from: usize, to: usize, batch: usize) -> Res<()> {
    let mut i = from;
    while i < to {
        let end = (i + batch).min(to);
        let mut tx = store.begin_tx().await?;
        for k in i..end {
            tx.enqueue_tx("bench", EnqueueOpts::default(), job(k)).await?;
        }
        tx.commit().await?;
        i = end;
    }
    Ok(())
}

async fn publish_tx_batches(store: &dyn Store, n: usize, batch: usize) -> Res<()> {
    let mut i = 0;
    while i < n {
        let end = (i + batch).min(n);
        let mut tx = store.begin_tx().await?;
        for k in i..end {
            tx.publish_with_key_tx("bench", key(k), event(k)).await?;
        }
        tx.commit().await?;
        i = end;
    }
    Ok(())
}

/// Claim up to `batch` and ack them, until the queue is empty.
async fn drain(q: Arc<dyn Queue>, worker: String, batch: i64) -> Res<usize> {
    let mut done = 0;
    loop {
        let got = q.claim_batch(&worker, batch).await?;
        if got.is_empty() {
            return Ok(done);
        }
        let ids: Vec<i64> = got.iter().map(|h| h.job().id).collect();
        let acked = q.ack_batch(&ids).await?;
        if acked as usize != ids.len() {
            return Err(format!("acked {acked} of {}", ids.len()).into());
        }
        done += ids.len();
    }
}

fn check(done: usize, n: usize) -> Res<()> {
    if done == n { Ok(()) } else { Err(format!("processed {done} jobs, expected {n}").into()) }
}

async fn queue(store: &Arc<dyn Store>) -> Res<Arc<dyn Queue>> {
    Ok(Arc::from(store.queue("bench", QueueOpts::default()).await?))
}

/// Jobs and seconds of one queue scenario.
async fn queue_scenario(name: &str, store: Arc<dyn Store>, scale: f64) -> Res<(usize, f64)> {
    let q = queue(&store).await?;
    let n;
    let start;
    match name {
        "enqueue_single_4tasks" | "enqueue_single_16tasks" => {
            let callers = if name == "enqueue_single_4tasks" { 4 } else { 16 };
            n = scaled(20_000, scale);
            start = Instant::now();
            let mut tasks = Vec::new();
            for t in 0..callers {
                let q = q.clone();
                tasks.push(tokio::spawn(async move {
                    for i in (t..n).step_by(callers) {
                        q.enqueue(job(i), EnqueueOpts::default()).await?;
                    }
                    Ok::<_, alkstore::Error>(())
                }));
            }
            for t in tasks {
                t.await??;
            }
        }
        "enqueue_batch_100" => {
            n = scaled(100_000, scale);
            start = Instant::now();
            enqueue_tx_batches(&*store, 0, n, 100).await?;
        }
        "claim_ack_single_20k" | "claim128_batch_ack_100k" => {
            let (count, batch) = if name == "claim_ack_single_20k" { (20_000, 1) } else { (100_000, 128) };
            n = scaled(count, scale);
            enqueue_tx_batches(&*store, 0, n, 5_000).await?;
            start = Instant::now();
            check(drain(q.clone(), "w".into(), batch).await?, n)?;
        }
        "end_to_end_1p2c" => {
            n = scaled(50_000, scale);
            start = Instant::now();
            let acked = Arc::new(AtomicUsize::new(0));
            let producer = {
                let store = store.clone();
                tokio::spawn(async move { enqueue_tx_batches(&*store, 0, n, 100).await })
            };
            let mut consumers = Vec::new();
            for w in 0..2 {
                let q = q.clone();
                let acked = acked.clone();
                consumers.push(tokio::spawn(async move {
                    let worker = format!("c{w}");
                    while acked.load(Ordering::Relaxed) < n {
                        let got = q.claim_batch(&worker, 128).await?;
                        if got.is_empty() {
                            tokio::task::yield_now().await;
                            continue;
                        }
                        let ids: Vec<i64> = got.iter().map(|h| h.job().id).collect();
                        q.ack_batch(&ids).await?;
                        acked.fetch_add(ids.len(), Ordering::Relaxed);
                    }
                    Ok::<_, alkstore::Error>(())
                }));
            }
            producer.await??;
            for c in consumers {
                c.await??;
            }
            check(acked.load(Ordering::Relaxed), n)?;
        }
        "insert_50k" => {
            n = scaled(50_000, scale);
            let next = Arc::new(AtomicUsize::new(0));
            start = Instant::now();
            let mut tasks = Vec::new();
            for _ in 0..2 {
                let store = store.clone();
                let next = next.clone();
                tasks.push(tokio::spawn(async move {
                    loop {
                        let from = next.fetch_add(1_000, Ordering::Relaxed);
                        if from >= n {
                            return Ok::<_, Box<dyn std::error::Error + Send + Sync>>(());
                        }
                        enqueue_tx_batches(&*store, from, (from + 1_000).min(n), 1_000).await?;
                    }
                }));
            }
            for t in tasks {
                t.await??;
            }
        }
        "work_50k" => {
            n = scaled(50_000, scale);
            enqueue_tx_batches(&*store, 0, n, 5_000).await?;
            start = Instant::now();
            let mut tasks = Vec::new();
            for w in 0..4 {
                tasks.push(tokio::spawn(drain(q.clone(), format!("w{w}"), 500)));
            }
            let mut done = 0;
            for t in tasks {
                done += t.await??;
            }
            check(done, n)?;
        }
        other => return Err(format!("unknown queue scenario {other}").into()),
    }
    Ok((n, start.elapsed().as_secs_f64()))
}

/// Events and seconds of one stream scenario.
async fn stream_scenario(name: &str, store: Arc<dyn Store>, scale: f64) -> Res<(usize, f64)> {
    let s: Arc<dyn StreamHandle> = Arc::from(store.stream("bench").await?);
    Ok(match name {
        "publish_single_4tasks" => {
            let n = scaled(20_000, scale);
            let start = Instant::now();
            let mut tasks = Vec::new();
            for t in 0..4 {
                let s = s.clone();
                tasks.push(tokio::spawn(async move {
                    for i in (t..n).step_by(4) {
                        s.publish_with_key(key(i), event(i)).await?;
                    }
                    Ok::<_, alkstore::Error>(())
                }));
            }
            for t in tasks {
                t.await??;
            }
            (n, start.elapsed().as_secs_f64())
        }
        "publish_batch_100" => {
            let n = scaled(200_000, scale);
            let start = Instant::now();
            publish_tx_batches(&*store, n, 100).await?;
            (n, start.elapsed().as_secs_f64())
        }
        "replay_1m" => {
            let n = scaled(1_000_000, scale);
            publish_tx_batches(&*store, n, 10_000).await?;
            let start = Instant::now();
            let (mut after, mut read) = (0, 0);
            loop {
                let page = s.read_since(after, 10_000).await?;
                let Some(last) = page.last() else { break };
                after = last.offset;
                read += page.len();
            }
            if read != n {
                return Err(format!("replayed {read} events, expected {n}").into());
            }
            (n, start.elapsed().as_secs_f64())
        }
        other => return Err(format!("unknown stream scenario {other}").into()),
    })
}

/// Latencies (ms) to a live subscriber (StreamHandle::subscribe, then
/// EventReceiver::recv in its own task) from the publish call's return and
/// from the call itself, as `alk bench stream`'s live_latency: one unkeyed
/// event at a time, 2 ms apart.
async fn live_latency(store: Arc<dyn Store>, samples: usize) -> Res<(Vec<f64>, Vec<f64>)> {
    let s: Arc<dyn StreamHandle> = Arc::from(store.stream("live").await?);
    let mut sub = s.subscribe("bench").await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let receiver = tokio::spawn(async move {
        while let Some(ev) = sub.recv().await {
            let at = Instant::now();
            let Ok(ev) = ev else { break };
            let i = serde_json::from_slice::<String>(&ev.payload)
                .ok()
                .and_then(|p| p.trim_end_matches('.').trim().parse::<usize>().ok())
                .unwrap_or(usize::MAX);
            if tx.send((i, at)).is_err() {
                break;
            }
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (mut from_commit, mut from_call) = (Vec::new(), Vec::new());
    for i in 0..samples {
        let called = Instant::now();
        s.publish(event(i)).await?;
        let committed = Instant::now();
        loop {
            let Some((got, at)) = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
                .await
                .ok()
                .flatten()
            else {
                return Err("the subscriber stopped receiving".into());
            };
            if got == i {
                from_commit.push(at.saturating_duration_since(committed).as_secs_f64() * 1e3);
                from_call.push(at.saturating_duration_since(called).as_secs_f64() * 1e3);
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    receiver.abort();
    Ok((from_commit, from_call))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let engine = match args.next().as_deref() {
        Some("sqlite") => Engine::Sqlite,
        Some("postgres") => {
            let url = args.next().unwrap_or_else(|| {
                std::env::var("DATABASE_URL")
                    .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
            });
            Engine::Postgres(url)
        }
        _ => {
            eprintln!("usage: upstream-bench sqlite|postgres [URL] [scenario ...]");
            std::process::exit(2);
        }
    };
    let asked: Vec<String> = args.collect();
    let scale = scale();
    let settings = match &engine {
        Engine::Sqlite => "WAL, synchronous=NORMAL (bootstrapped), default SqliteOpts".to_string(),
        Engine::Postgres(_) => format!(
            "pool max_size=16, synchronous_commit={}, NoTls (hardwired)",
            if sync_commit() { "on" } else { "off" }
        ),
    };
    println!("# alkstore 0.1.0 (crates.io) on {}: {settings}; BENCH_SCALE={scale}", engine.name());
    let mut failed = false;
    for name in QUEUE_SCENARIOS.iter().chain(STREAM_SCENARIOS).chain(&[LIVE]) {
        if !asked.is_empty() && !asked.iter().any(|a| a == name) {
            continue;
        }
        let is_stream = STREAM_SCENARIOS.contains(name);
        if *name == LIVE {
            let samples = scaled(500, scale.min(1.0)).max(10);
            let result = async {
                let f = fresh(&engine, name).await?;
                let r = live_latency(f.store.clone(), samples).await;
                drop(f.store);
                clean(f.cleanup).await?;
                r
            }
            .await;
            match result {
                Ok((mut ms, mut call)) => {
                    ms.sort_by(f64::total_cmp);
                    call.sort_by(f64::total_cmp);
                    println!(
                        "bench peer=alkstore0.1 engine={} scenario=live_latency samples={} p50_ms_from_commit={:.3} p99_ms_from_commit={:.3} p50_ms_from_call={:.3} p99_ms_from_call={:.3}",
                        engine.name(),
                        ms.len(),
                        percentile(&ms, 0.50),
                        percentile(&ms, 0.99),
                        percentile(&call, 0.50),
                        percentile(&call, 0.99)
                    );
                }
                Err(e) => {
                    eprintln!("upstream-bench {} {name}: {e}", engine.name());
                    failed = true;
                }
            }
            continue;
        }
        let result = async {
            let f = fresh(&engine, name).await?;
            let r = if is_stream {
                stream_scenario(name, f.store.clone(), scale).await
            } else {
                queue_scenario(name, f.store.clone(), scale).await
            };
            drop(f.store);
            clean(f.cleanup).await?;
            r
        }
        .await;
        match result {
            Ok((n, secs)) => {
                let unit = if is_stream { "events" } else { "jobs" };
                println!(
                    "bench peer=alkstore0.1 engine={} scenario={name} {unit}={n} secs={secs:.3} {unit}_per_s={:.0}",
                    engine.name(),
                    n as f64 / secs
                );
            }
            Err(e) => {
                eprintln!("upstream-bench {} {name}: {e}", engine.name());
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
