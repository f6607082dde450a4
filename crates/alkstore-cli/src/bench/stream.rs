//! `alk bench stream`: stream scenarios, each on a fresh store (a new SQLite
//! file, or a new PostgreSQL schema dropped afterwards).
//!
//! One line per scenario, machine-readable:
//! `bench peer=alkstore engine=E scenario=NAME events=N secs=S events_per_s=R`
//! and, for `live_latency`,
//! `bench peer=alkstore engine=E scenario=live_latency samples=N p50_ms_from_commit=… p99_ms_from_commit=… p50_ms_from_call=… p99_ms_from_call=…`.

use alkstore::Writes as _;
use std::time::{Duration, Instant};

use alkstore::stream::{EventCtx, NewEvent, StreamReadParams, SubscriberOpts};
use alkstore::Subscriber;
use alkstore::{prelude::StreamEngine, AnyEngine, Result, Store};

use super::support::{join_err, percentile, scaled};

/// Arguments of `alk bench stream`.
pub(crate) type StreamBenchArgs = super::support::ScenarioArgs;

const SCENARIOS: &[&str] = &[
    "publish_single_4tasks",
    "publish_batch_100",
    "publish_batch_100_4tasks",
    "replay_1m",
    "live_latency",
];

/// A 100-byte payload.
fn payload(i: usize) -> Vec<u8> {
    let mut p = format!("{i:>12}").into_bytes();
    p.resize(100, b'.');
    p
}

fn event(i: usize) -> NewEvent {
    NewEvent::new("bench", payload(i)).key(format!("k{}", i % 64))
}

/// Publish `n` events in batches of `batch` (at most the engine's page cap).
async fn publish_batches(e: &AnyEngine, n: usize, batch: usize) -> Result<()> {
    let mut i = 0;
    while i < n {
        let end = (i + batch).min(n);
        e.stream_publish((i..end).map(event).collect::<Vec<_>>())
            .await?;
        i = end;
    }
    Ok(())
}

/// Batch size of `publish_batch_100` and `publish_batch_100_4tasks`.
const BATCH: usize = 100;
/// Concurrent publishers in `publish_batch_100_4tasks`.
const BATCH_TASKS: usize = 4;

/// Publish events `0..n` in batches of `batch` from `tasks` concurrent
/// tasks on one engine: task `t` publishes batches `t`, `t + tasks`, …,
/// each awaited before its next, so up to `tasks` batches are in flight
/// (on PostgreSQL their commits can share a WAL flush; on SQLite the
/// writer can group them into one transaction).
async fn publish_batches_from(e: &AnyEngine, n: usize, batch: usize, tasks: usize) -> Result<()> {
    let batches = n.div_ceil(batch);
    let mut handles = Vec::with_capacity(tasks);
    for t in 0..tasks {
        let e = e.clone();
        handles.push(tokio::spawn(async move {
            for b in (t..batches).step_by(tasks) {
                let start = b * batch;
                let end = (start + batch).min(n);
                e.stream_publish((start..end).map(event).collect::<Vec<_>>())
                    .await?;
            }
            Ok::<(), alkstore::Error>(())
        }));
    }
    for h in handles {
        h.await.map_err(join_err)??;
    }
    Ok(())
}

/// Events per second of one throughput scenario.
async fn throughput(name: &str, e: &AnyEngine, scale: f64) -> Result<(usize, f64)> {
    Ok(match name {
        "publish_single_4tasks" => {
            let n = scaled(20_000, scale);
            let started = Instant::now();
            let mut tasks = Vec::new();
            for t in 0..4 {
                let e = e.clone();
                tasks.push(tokio::spawn(async move {
                    for i in (t..n).step_by(4) {
                        e.stream_publish(event(i)).await?;
                    }
                    Ok::<(), alkstore::Error>(())
                }));
            }
            for t in tasks {
                t.await.map_err(join_err)??;
            }
            (n, started.elapsed().as_secs_f64())
        }
        "publish_batch_100" => {
            let n = scaled(200_000, scale);
            let started = Instant::now();
            publish_batches(e, n, BATCH).await?;
            (n, started.elapsed().as_secs_f64())
        }
        "publish_batch_100_4tasks" => {
            // The same events and batches as publish_batch_100, from
            // BATCH_TASKS publishers at once.
            let n = scaled(200_000, scale);
            let started = Instant::now();
            publish_batches_from(e, n, BATCH, BATCH_TASKS).await?;
            (n, started.elapsed().as_secs_f64())
        }
        "replay_1m" => {
            let n = scaled(1_000_000, scale);
            publish_batches(e, n, 10_000).await?;
            let started = Instant::now();
            let mut after = 0;
            let mut read = 0;
            loop {
                let page = e
                    .stream_read(StreamReadParams::new("bench", after, 10_000))
                    .await?;
                let Some(last) = page.last() else { break };
                after = last.offset;
                read += page.len();
            }
            if read != n {
                return Err(alkstore::Error::database(
                    "bench",
                    format!("replayed {read} events, expected {n}"),
                ));
            }
            (n, started.elapsed().as_secs_f64())
        }
        other => {
            return Err(alkstore::Error::invalid(
                "scenario",
                format!("{other:?} is not a throughput scenario"),
            ))
        }
    })
}

/// Latencies (ms) to a live `Subscriber`'s handler: from the publish call's
/// return (its commit), and from the call itself. A handler that runs before
/// the call returns counts 0 from the commit.
async fn live_latency(e: &AnyEngine, samples: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let store = Store::from_engine(e.clone());
    let stream = store.stream("live");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let opts = SubscriberOpts {
        batch: 100,
        ..SubscriberOpts::default()
    };
    let subscriber = tokio::spawn(
        Subscriber::new(store.clone(), stream.name(), "bench")
            .opts(opts)
            .handler_raw(move |event: EventCtx<Vec<u8>>| {
                let at = Instant::now();
                let i = std::str::from_utf8(event.payload())
                    .ok()
                    .and_then(|s| s.trim_end_matches('.').trim().parse::<usize>().ok())
                    .unwrap_or(usize::MAX);
                let _ = tx.send((i, at));
                async { Ok::<(), std::io::Error>(()) }
            })
            .run_until(async move {
                let _ = stop_rx.await;
            }),
    );
    // Let the subscriber reach its live wait.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut latencies = Vec::with_capacity(samples);
    let mut from_call = Vec::with_capacity(samples);
    for i in 0..samples {
        let called = Instant::now();
        stream.publish_raw(None, payload(i)).await?;
        let committed = Instant::now();
        loop {
            let Some((got, at)) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .ok()
                .flatten()
            else {
                return Err(alkstore::Error::database(
                    "bench",
                    "the subscriber stopped receiving",
                ));
            };
            if got == i {
                latencies.push(at.saturating_duration_since(committed).as_secs_f64() * 1e3);
                from_call.push(at.saturating_duration_since(called).as_secs_f64() * 1e3);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let _ = stop_tx.send(());
    subscriber
        .await
        .map_err(join_err)?
        .map_err(|e| alkstore::Error::database("bench subscriber", e.to_string()))?;
    Ok((latencies, from_call))
}

/// Run `alk bench stream`.
pub(crate) async fn run(args: StreamBenchArgs) -> Result<()> {
    let (target, wanted) = args.resolve(SCENARIOS)?;
    let engine = target.name();
    println!(
        "# alkstore {} engine={engine} streams",
        env!("CARGO_PKG_VERSION")
    );
    for (i, name) in wanted.iter().enumerate() {
        let fresh = target.fresh(200 + i).await?;
        if *name == "live_latency" {
            let samples = scaled(500, args.scale.min(1.0)).max(10);
            let (mut ms, mut call) = live_latency(&fresh.engine, samples).await?;
            ms.sort_by(f64::total_cmp);
            call.sort_by(f64::total_cmp);
            println!(
                "bench peer=alkstore engine={engine} scenario=live_latency samples={} p50_ms_from_commit={:.3} p99_ms_from_commit={:.3} p50_ms_from_call={:.3} p99_ms_from_call={:.3}",
                ms.len(),
                percentile(&ms, 0.50),
                percentile(&ms, 0.99),
                percentile(&call, 0.50),
                percentile(&call, 0.99)
            );
        } else {
            let (n, secs) = throughput(name, &fresh.engine, args.scale).await?;
            #[allow(irrefutable_let_patterns)]
            if let AnyEngine::Sqlite(sqlite) = &fresh.engine {
                // Group commit at work: write commands per transaction.
                let (commits, commands) = sqlite.commit_stats();
                println!("# {name}: {commands} write commands in {commits} transactions");
            }
            println!(
                "bench peer=alkstore engine={engine} scenario={name} events={n} secs={secs:.3} events_per_s={:.0}",
                n as f64 / secs
            );
        }
        fresh.cleanup().await?;
    }
    Ok(())
}
