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
//! `bench_tx.rs`.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use alkstore::group::{bucket_of, GroupStatusParams};
use alkstore::stream::NewEvent;
use alkstore::{AnyEngine, Error, GroupEngine, Result, StreamEngine};

use crate::bench::scaled;

/// Arguments of `alk bench group`.
pub(crate) type GroupBenchArgs = crate::bench::ScenarioArgs;

const SCENARIOS: &[&str] = &[
    "consume_1w",
    "consume_2w",
    "consume_4w",
    "failover",
    "rebalance",
    "group_tx",
];

/// The group's bucket count, TTL and heartbeat in every scenario.
const BUCKETS: u32 = 16;
const TTL_MS: u64 = 2_000;
const HEARTBEAT_MS: u64 = 500;
/// Distinct event keys.
const KEYS: usize = 10_000;

fn event(i: usize) -> NewEvent {
    let mut payload = format!("{i:>12}").into_bytes();
    payload.resize(100, b'.');
    NewEvent::new("bench", payload).key(format!("k{}", i % KEYS))
}

/// Publish `n` keyed events; the last offset of each bucket.
async fn publish(e: &AnyEngine, n: usize) -> Result<BTreeMap<u32, i64>> {
    let mut last = BTreeMap::new();
    let mut i = 0;
    while i < n {
        let end = (i + 5_000).min(n);
        let events: Vec<NewEvent> = (i..end).map(event).collect();
        let offsets = e.stream_publish(events.clone()).await?;
        for (ev, offset) in events.iter().zip(offsets) {
            let key = ev.key.as_deref().unwrap_or_default();
            last.insert(bucket_of(key.as_bytes(), BUCKETS), offset);
        }
        i = end;
    }
    Ok(last)
}

/// A worker process of group `bench`.
fn spawn(url: &str, name: &str) -> Result<Child> {
    worker(url, name, &[]).spawn().map_err(spawn_failed)
}

fn spawn_failed(e: std::io::Error) -> Error {
    Error::database("bench: spawn a group worker", e)
}

/// A worker started with `--gate`, once it has said `ready` (store open);
/// it joins the group when [`go`] writes to it.
fn spawn_gated(url: &str, name: &str, extra: &[String]) -> Result<Child> {
    use std::io::BufRead;
    let mut child = worker(url, name, extra)
        .arg("--gate")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(spawn_failed)?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        std::io::BufReader::new(out)
            .read_line(&mut line)
            .map_err(spawn_failed)?;
    }
    if line.trim() != "ready" {
        stop(child);
        return Err(Error::database("bench", "a group worker did not start"));
    }
    Ok(child)
}

/// Release a gated worker.
fn go(child: &mut Child) -> Result<()> {
    use std::io::Write;
    let stdin = child.stdin.as_mut();
    stdin
        .map_or(Ok(()), |s| s.write_all(b"go\n").and_then(|()| s.flush()))
        .map_err(|e| Error::database("bench: release a group worker", e))
}

/// A worker process of group `bench`, with `extra` arguments.
fn worker(url: &str, name: &str, extra: &[String]) -> Command {
    let exe = std::env::current_exe().unwrap_or_else(|_| "alk".into());
    let mut cmd = Command::new(exe);
    cmd.args([
        "--db",
        url,
        "test-group-worker",
        "--group",
        "bench",
        "--stream",
        "bench",
    ])
    .args(["--buckets", &BUCKETS.to_string(), "--name", name])
    .args(["--ttl-ms", &TTL_MS.to_string()])
    .args(["--heartbeat-ms", &HEARTBEAT_MS.to_string()])
    .args(extra)
    .env_remove("DATABASE_URL")
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    cmd
}

fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
}

/// Live buckets per owner, and each bucket's checkpoint.
async fn snapshot(e: &AnyEngine) -> (BTreeMap<String, usize>, BTreeMap<u32, i64>) {
    let mut owners = BTreeMap::new();
    let mut checkpoints = BTreeMap::new();
    if let Ok(status) = e
        .group_status(GroupStatusParams::without_lag("bench"))
        .await
    {
        for b in status.buckets {
            checkpoints.insert(b.bucket, b.checkpoint);
            if let (Some(owner), false) = (b.owner, b.expired) {
                *owners.entry(owner).or_default() += 1;
            }
        }
    }
    (owners, checkpoints)
}

/// Poll every 5 ms until `done`; the time it took (an error after 300 s).
async fn until<F, Fut>(what: &str, done: F) -> Result<Duration>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !done().await {
        if started.elapsed() > Duration::from_secs(300) {
            return Err(Error::database("bench", format!("timed out: {what}")));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(started.elapsed())
}

/// `consume_Nw`: seconds for `workers` processes (run with `extra`
/// arguments) to drain `n` events.
pub(crate) async fn consume(
    e: &AnyEngine,
    url: &str,
    workers: usize,
    n: usize,
    extra: &[String],
) -> Result<f64> {
    let last = publish(e, n).await?;
    let mut children = (0..workers)
        .map(|w| spawn_gated(url, &format!("w{w}"), extra))
        .collect::<Result<Vec<_>>>()?;
    let started = Instant::now();
    for child in &mut children {
        go(child)?;
    }
    let drained = until("the group drains the stream", || async {
        let (_, checkpoints) = snapshot(e).await;
        last.iter()
            .all(|(b, offset)| checkpoints.get(b).is_some_and(|c| c >= offset))
    })
    .await;
    let secs = started.elapsed().as_secs_f64();
    children.into_iter().for_each(stop);
    drained?;
    Ok(secs)
}

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
            crate::bench_tx::group_tx(&target, args.scale).await?;
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
