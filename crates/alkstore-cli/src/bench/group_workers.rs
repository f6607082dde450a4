//! The worker processes of the consumer-group benchmarks: publish a keyed
//! backlog, start `alk test-group-worker` processes of group `bench`
//! (gated, to be released together, or not), watch who owns which bucket
//! and how far each got, and stop them. Separate from the scenarios so
//! `alk bench group` (`group.rs`) and `group_tx` (`tx.rs`) both drive them
//! without depending on each other.

use alkstore::Writes as _;
use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use alkstore::group::{bucket_of, GroupStatusParams};
use alkstore::stream::NewEvent;
use alkstore::{prelude::GroupEngine, AnyEngine, Error, Result};

/// The group's bucket count, TTL and heartbeat in every scenario.
pub(super) const BUCKETS: u32 = 16;
pub(super) const TTL_MS: u64 = 2_000;
pub(super) const HEARTBEAT_MS: u64 = 500;
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
pub(super) fn spawn(url: &str, name: &str) -> Result<Child> {
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

pub(super) fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
}

/// Live buckets per owner, and each bucket's checkpoint.
pub(super) async fn snapshot(e: &AnyEngine) -> (BTreeMap<String, usize>, BTreeMap<u32, i64>) {
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
pub(super) async fn until<F, Fut>(what: &str, done: F) -> Result<Duration>
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
pub(super) async fn consume(
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
