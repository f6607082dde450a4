//! Peer benchmarks for event streams, for comparison with `alk bench stream`.
//! Standalone Cargo workspace (honker bundles its own SQLite, which must not
//! be linked into the alkstore workspace; redis and async-nats are only
//! needed here).
//!
//! Usage: stream-peers honker|redis|nats [scenario ...]   (no scenario = all)
//!        stream-peers redis-groups|nats-groups [scenario ...]  (consumer groups:
//!        consume_1w consume_2w consume_4w failover rebalance)
//!
//! Output (stdout), one line per scenario:
//!   bench peer=<p> engine=<e> scenario=<name> events=<n> secs=<f3> events_per_s=<int>
//!   bench peer=<p> engine=<e> scenario=live_latency samples=<n> p50_ms_from_commit=<f3> p99_ms_from_commit=<f3>
//! Lines starting with `# ` describe the peer's configuration. Diagnostics
//! go to stderr.
//!
//! Every event carries a 100-byte payload (its sequence number, zero-padded,
//! then filler) and the key `k<i % 64>` where the peer has keys.
//!
//! Scenarios (counts at BENCH_SCALE=1.0; every count is multiplied by it):
//!   publish_single_4tasks  4 concurrent publishers, one event per call, 20,000 in all
//!   publish_batch_100      one publisher, 100 events per batch, 200,000 in all
//!   publish_batch_100_4tasks  the same events and batches from 4 concurrent
//!                          publishers (task t sends batches t, t+4, ...), each
//!                          waiting for its own batch before sending the next
//!   replay_1m              1,000,000 events pre-filled (untimed), then read from the
//!                          start in pages; the read is timed
//!   live_latency           a live subscriber; 500 events published one at a time,
//!                          ~2 ms apart; latency = subscriber's receipt minus the
//!                          moment the publish call returned (commit / ack)
//!
//! Env: BENCH_SCALE (float, default 1.0); REDIS_URL (default
//! redis://127.0.0.1:6379/); NATS_URL (default 127.0.0.1:4222).

mod honker_peer;
mod nats_groups;
mod nats_peer;
mod redis_groups;
mod redis_peer;

use std::time::{Duration, Instant};

pub type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

pub const SCENARIOS: [&str; 5] = [
    "publish_single_4tasks",
    "publish_batch_100",
    "publish_batch_100_4tasks",
    "replay_1m",
    "live_latency",
];

/// Consumer-group scenarios (`redis-groups`, `nats-groups`), beside `alk
/// bench group`'s.
pub const GROUP_SCENARIOS: [&str; 5] = ["consume_1w", "consume_2w", "consume_4w", "failover", "rebalance"];

pub const PAYLOAD_LEN: usize = 100;
pub const KEYS: u64 = 64;
pub const TASKS: u64 = 4;
pub const BATCH: u64 = 100;
/// Batch size for the untimed pre-fill of replay_1m.
pub const PREFILL_BATCH: u64 = 1000;
/// Pause between two publishes in live_latency.
pub const LIVE_GAP: Duration = Duration::from_millis(2);
const SEQ_DIGITS: usize = 12;

/// Event counts for one run, already scaled.
#[derive(Clone, Copy, Debug)]
pub struct Counts {
    /// Events per task in publish_single_4tasks (TASKS tasks).
    pub single_per_task: u64,
    pub batch: u64,
    pub replay: u64,
    pub live: u64,
}

impl Counts {
    fn new(s: f64) -> Self {
        Self {
            single_per_task: scaled(20_000 / TASKS, s),
            batch: scaled(200_000, s),
            replay: scaled(1_000_000, s),
            live: scaled(500, s),
        }
    }
}

fn scale() -> f64 {
    match std::env::var("BENCH_SCALE") {
        Ok(s) => s.trim().parse::<f64>().ok().filter(|v| *v > 0.0).unwrap_or_else(|| {
            eprintln!("stream-peers: ignoring bad BENCH_SCALE={s:?}");
            1.0
        }),
        Err(_) => 1.0,
    }
}

fn scaled(base: u64, s: f64) -> u64 {
    ((base as f64 * s).round() as u64).max(1)
}

/// The key of event `seq`.
pub fn key(seq: u64) -> String {
    format!("k{}", seq % KEYS)
}

/// `len` bytes: `seq` zero-padded to 12 digits, then '.' filler.
fn body(seq: u64, len: usize) -> String {
    let mut s = format!("{seq:0width$}", width = SEQ_DIGITS);
    while s.len() < len {
        s.push('.');
    }
    s
}

/// The 100-byte payload of event `seq` (raw bytes: redis, nats).
pub fn payload(seq: u64) -> Vec<u8> {
    body(seq, PAYLOAD_LEN).into_bytes()
}

/// A JSON string whose serialized form is 100 bytes (two quotes + 98
/// characters), for peers that store JSON (honker).
pub fn json_payload(seq: u64) -> String {
    body(seq, PAYLOAD_LEN - 2)
}

/// The sequence number carried at the start of a payload.
pub fn seq_of(payload: &[u8]) -> Res<u64> {
    let head = payload.get(..SEQ_DIGITS).ok_or("payload too short")?;
    Ok(std::str::from_utf8(head)?.parse::<u64>()?)
}

/// A name unique to this process and moment, for streams, keys and files.
pub fn run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}_{}", std::process::id(), nanos)
}

pub struct Reporter {
    pub peer: &'static str,
    pub engine: &'static str,
}

impl Reporter {
    pub fn throughput(&self, scenario: &str, events: u64, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let rate = if secs > 0.0 { (events as f64 / secs).round() as u64 } else { 0 };
        println!(
            "bench peer={} engine={} scenario={scenario} events={events} secs={secs:.3} events_per_s={rate}",
            self.peer, self.engine
        );
    }

    /// `published[i]` is when the publish call of event i returned,
    /// `received` holds (seq, moment the subscriber got it).
    pub fn latency(&self, published: &[Instant], received: &[(u64, Instant)]) -> Res<()> {
        let mut ms = Vec::with_capacity(received.len());
        let mut early = 0usize;
        for &(seq, at) in received {
            let p = *published
                .get(seq as usize)
                .ok_or_else(|| format!("received unknown event {seq}"))?;
            // The subscriber may see an event before the publisher has read
            // its ack/commit reply: count that as 0 ms.
            match at.checked_duration_since(p) {
                Some(d) => ms.push(d.as_secs_f64() * 1e3),
                None => {
                    early += 1;
                    ms.push(0.0);
                }
            }
        }
        if ms.len() != published.len() {
            return Err(format!("received {} of {} events", ms.len(), published.len()).into());
        }
        if early > 0 {
            println!(
                "# {} live_latency: {early} of {} events reached the subscriber before the publisher had the commit/ack reply (counted as 0 ms)",
                self.peer,
                ms.len()
            );
        }
        ms.sort_by(|a, b| a.total_cmp(b));
        println!(
            "bench peer={} engine={} scenario=live_latency samples={} p50_ms_from_commit={:.3} p99_ms_from_commit={:.3}",
            self.peer,
            self.engine,
            ms.len(),
            percentile(&ms, 0.50),
            percentile(&ms, 0.99)
        );
        Ok(())
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let peer = args.next().unwrap_or_default();
    let only: Vec<String> = args.collect();
    let known: &[&'static str] = if peer.ends_with("-groups") { &GROUP_SCENARIOS } else { &SCENARIOS };
    for o in &only {
        if !known.contains(&o.as_str()) {
            eprintln!("stream-peers: unknown scenario {o:?} (known: {})", known.join(" "));
            std::process::exit(2);
        }
    }
    let scenarios: Vec<&'static str> = known
        .iter()
        .copied()
        .filter(|s| only.is_empty() || only.iter().any(|o| o == s))
        .collect();
    let s = scale();
    let counts = Counts::new(s);
    eprintln!("stream-peers: peer={peer} BENCH_SCALE={s} counts={counts:?}");

    let result = match peer.as_str() {
        "honker" => honker_peer::run(&scenarios, counts),
        "redis" | "nats" | "redis-groups" | "nats-groups" => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| e.into())
            .and_then(|rt| {
                rt.block_on(async {
                    let group_events = scaled(1_000_000, s);
                    match peer.as_str() {
                        "redis" => redis_peer::run(&scenarios, counts).await,
                        "nats" => nats_peer::run(&scenarios, counts).await,
                        "redis-groups" => redis_groups::run(&scenarios, group_events).await,
                        _ => nats_groups::run(&scenarios, group_events).await,
                    }
                })
            }),
        _ => {
            eprintln!("usage: stream-peers honker|redis|nats|redis-groups|nats-groups [scenario ...]");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("stream-peers: {peer}: {e}");
        std::process::exit(1);
    }
}

/// Run every scenario, reporting failures without stopping; Err if any failed.
pub fn finish(peer: &str, failures: Vec<(&str, String)>) -> Res<()> {
    for (s, e) in &failures {
        eprintln!("stream-peers: {peer}: scenario {s} failed: {e}");
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} scenario(s) failed", failures.len()).into())
    }
}
