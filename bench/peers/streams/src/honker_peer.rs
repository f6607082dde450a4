//! honker 0.5 streams (`Database::stream`): an append-only `_honker_stream`
//! table in one SQLite file, read by offset.
//!
//! Settings: honker's own defaults (WAL, synchronous=NORMAL, ...). One
//! `Database` handle (one SQLite connection behind a mutex plus honker's
//! 1 ms `PRAGMA data_version` poll thread) is shared by every thread of a
//! scenario, which is how honker is meant to be used in-process.
//!
//! - publish: `Stream::publish_with_key` (one INSERT in autocommit mode).
//! - batch: `Database::transaction` + honker's SQL function
//!   `honker_stream_publish(topic, key, payload)` per event — the statement
//!   `publish_with_key` runs; `Stream::publish_tx` is the same without a key.
//! - batch from 4 tasks: 4 threads on the one shared `Database`, each
//!   running its batches as above (its transaction holds the connection's
//!   mutex until commit, so their batches take turns).
//! - replay: `Stream::read_since(offset, PAGE)` until a short page.
//! - live: `Stream::subscribe(consumer)`, honker's blocking iterator that
//!   wakes on the data_version poll.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use honker::Database;

use crate::{finish, json_payload, key, seq_of, Counts, Reporter, Res, BATCH, PREFILL_BATCH, TASKS};

const TOPIC: &str = "bench";
/// Events per `read_since` call. honker documents no page size (its own
/// subscription iterator refills 100 at a time); 1000 keeps the per-call
/// overhead small without building huge JSON strings.
const PAGE: i64 = 1000;

const R: Reporter = Reporter { peer: "honker", engine: "sqlite" };

/// A fresh database file in the temp dir; removed (with -wal/-shm) on drop.
struct TempDb {
    path: PathBuf,
}

impl TempDb {
    fn new(scenario: &str) -> Self {
        let name = format!("stream-peers-honker-{scenario}-{}.db", crate::run_id());
        Self { path: std::env::temp_dir().join(name) }
    }

    fn open(&self) -> Res<Database> {
        Ok(Database::open(&self.path)?)
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
    }
}

/// honker version as resolved in our Cargo.lock.
fn honker_version() -> String {
    let lock = include_str!("../Cargo.lock");
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l.trim() == "name = \"honker\"" {
            if let Some(v) = lines.next().and_then(|v| v.trim().strip_prefix("version = ")) {
                return v.trim_matches('"').to_string();
            }
        }
    }
    "unknown".to_string()
}

fn print_settings() -> Res<()> {
    let tmp = TempDb::new("settings");
    let db = tmp.open()?;
    let (journal, sync, sqlite): (String, i64, String) = db.with_conn(|c| {
        let j = c.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        let s = c.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
        let v = c.query_row("SELECT sqlite_version()", [], |r| r.get(0))?;
        Ok::<_, honker::Error>((j, s, v))
    })?;
    let sync_name = match sync {
        0 => "OFF",
        1 => "NORMAL",
        2 => "FULL",
        3 => "EXTRA",
        _ => "?",
    };
    println!(
        "# honker {} streams on sqlite {sqlite} (bundled), journal_mode={journal} synchronous={sync_name} (honker defaults), file in {}",
        honker_version(),
        std::env::temp_dir().display()
    );
    if sync_name == "NORMAL" && journal.eq_ignore_ascii_case("wal") {
        println!("# honker: WAL + synchronous=NORMAL: commits are not fsynced (they survive a process crash, not a power loss)");
    }
    println!("# honker: replay pages of {PAGE} via read_since; live via Stream::subscribe (1 ms data_version poll)");
    Ok(())
}

fn count(db: &Database) -> Res<i64> {
    Ok(db.with_conn(|c| {
        c.query_row("SELECT COUNT(*) FROM _honker_stream WHERE topic = ?1", [TOPIC], |r| {
            r.get::<_, i64>(0)
        })
    })?)
}

fn check(db: &Database, want: u64) -> Res<()> {
    let got = count(db)?;
    if got != want as i64 {
        return Err(format!("expected {want} events, found {got}").into());
    }
    Ok(())
}

/// Publish events `start..end` in one transaction.
fn publish_tx(db: &Database, start: u64, end: u64) -> Res<()> {
    let tx = db.transaction()?;
    for seq in start..end {
        let json = serde_json::to_string(&json_payload(seq))?;
        tx.query_row("SELECT honker_stream_publish(?1, ?2, ?3)", (TOPIC, key(seq), json), |r| {
            r.get::<_, i64>(0)
        })?;
    }
    tx.commit()?;
    Ok(())
}

/// Publish events `start..start+n`, `batch` per transaction.
fn publish_batched(db: &Database, start: u64, n: u64, batch: u64) -> Res<()> {
    let mut i = 0;
    while i < n {
        let end = (i + batch).min(n);
        publish_tx(db, start + i, start + end)?;
        i = end;
    }
    Ok(())
}

fn publish_single_4tasks(c: Counts) -> Res<()> {
    let tmp = TempDb::new("publish_single");
    let db = tmp.open()?;
    let per = c.single_per_task;
    let t0 = Instant::now();
    let handles: Vec<_> = (0..TASKS)
        .map(|t| {
            let stream = db.stream(TOPIC);
            std::thread::spawn(move || -> Res<()> {
                for seq in t * per..(t + 1) * per {
                    stream.publish_with_key(&key(seq), &json_payload(seq))?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "publisher thread panicked")??;
    }
    let el = t0.elapsed();
    check(&db, per * TASKS)?;
    R.throughput("publish_single_4tasks", per * TASKS, el);
    Ok(())
}

fn publish_batch_100(c: Counts) -> Res<()> {
    let tmp = TempDb::new("publish_batch");
    let db = tmp.open()?;
    let t0 = Instant::now();
    publish_batched(&db, 0, c.batch, BATCH)?;
    let el = t0.elapsed();
    check(&db, c.batch)?;
    R.throughput("publish_batch_100", c.batch, el);
    Ok(())
}

fn publish_batch_100_4tasks(c: Counts) -> Res<()> {
    let tmp = TempDb::new("publish_batch_4tasks");
    let db = tmp.open()?;
    let n = c.batch;
    let batches = n.div_ceil(BATCH);
    let t0 = Instant::now();
    let handles: Vec<_> = (0..TASKS)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || -> Res<()> {
                for b in (t..batches).step_by(TASKS as usize) {
                    let start = b * BATCH;
                    publish_tx(&db, start, (start + BATCH).min(n))?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "publisher thread panicked")??;
    }
    let el = t0.elapsed();
    check(&db, n)?;
    R.throughput("publish_batch_100_4tasks", n, el);
    Ok(())
}

fn replay_1m(c: Counts) -> Res<()> {
    let tmp = TempDb::new("replay");
    let db = tmp.open()?;
    let n = c.replay;
    eprintln!("stream-peers: honker: pre-filling {n} events");
    publish_batched(&db, 0, n, PREFILL_BATCH)?;
    let stream = db.stream(TOPIC);

    let t0 = Instant::now();
    let mut offset = 0i64;
    let mut got = 0u64;
    let mut bytes = 0usize;
    loop {
        let page = stream.read_since(offset, PAGE)?;
        let Some(last) = page.last() else { break };
        offset = last.offset;
        got += page.len() as u64;
        bytes += page.iter().map(|e| e.payload.len()).sum::<usize>();
        if (page.len() as i64) < PAGE {
            break;
        }
    }
    let el = t0.elapsed();
    if got != n {
        return Err(format!("replayed {got} of {n} events").into());
    }
    eprintln!("stream-peers: honker: replayed {got} events, {bytes} payload bytes (JSON)");
    R.throughput("replay_1m", n, el);
    Ok(())
}

fn live_latency(c: Counts) -> Res<()> {
    let tmp = TempDb::new("live");
    let db = tmp.open()?;
    let n = c.live;
    let (tx, rx) = mpsc::channel::<(u64, Instant)>();
    let sub_stream = db.stream(TOPIC);
    // The subscription is created here, before any publish; honker resumes
    // from the consumer's saved offset (0 on a fresh file).
    let mut sub = sub_stream.subscribe("live")?;
    let reader = std::thread::spawn(move || -> Res<()> {
        for _ in 0..n {
            let ev = sub.next().ok_or("subscription ended")??;
            let at = Instant::now();
            let text: String = ev.payload_as()?;
            if tx.send((seq_of(text.as_bytes())?, at)).is_err() {
                break;
            }
        }
        Ok(())
    });

    let stream = db.stream(TOPIC);
    let mut published = Vec::with_capacity(n as usize);
    for seq in 0..n {
        stream.publish_with_key(&key(seq), &json_payload(seq))?;
        published.push(Instant::now());
        std::thread::sleep(crate::LIVE_GAP);
    }
    let mut received = Vec::with_capacity(n as usize);
    let deadline = Instant::now() + Duration::from_secs(10);
    while (received.len() as u64) < n {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(r) => received.push(r),
            Err(_) => break,
        }
    }
    if received.len() as u64 == n {
        // Let the subscriber drop (it saves its offset) before the file goes.
        reader.join().map_err(|_| "subscriber thread panicked")??;
    }
    R.latency(&published, &received)
}

pub fn run(scenarios: &[&'static str], c: Counts) -> Res<()> {
    print_settings()?;
    let mut failures = Vec::new();
    for &s in scenarios {
        eprintln!("stream-peers: honker: running {s}");
        let r = match s {
            "publish_single_4tasks" => publish_single_4tasks(c),
            "publish_batch_100" => publish_batch_100(c),
            "publish_batch_100_4tasks" => publish_batch_100_4tasks(c),
            "replay_1m" => replay_1m(c),
            "live_latency" => live_latency(c),
            _ => unreachable!(),
        };
        if let Err(e) = r {
            failures.push((s, e.to_string()));
        }
    }
    finish("honker", failures)
}
