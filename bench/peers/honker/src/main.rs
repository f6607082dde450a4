//! Peer benchmark: the `honker` crate (SQLite-backed job queue), for
//! comparison with alkstore. Standalone Cargo workspace: honker bundles
//! its own SQLite via `rusqlite/bundled`, which must not be linked into
//! the alkstore workspace.
//!
//! Output (stdout), one line per scenario:
//!   bench peer=honker scenario=<name> jobs=<n> secs=<f3> jobs_per_s=<int>
//! Lines starting with `#` are comments. Everything else goes to stderr.
//!
//! Settings: honker's own defaults, which already are WAL +
//! synchronous=NORMAL (plus busy_timeout=5000, cache_size=-32000,
//! temp_store=MEMORY, wal_autocheckpoint=10000, foreign_keys=ON).
//! One `Database` handle (one SQLite connection behind a mutex, plus
//! honker's 1 ms `PRAGMA data_version` poll thread) is shared by all
//! threads of a scenario; that is how honker is meant to be used
//! in-process (`Database` is `Clone + Send + Sync`).
//!
//! Usage: honker-bench [scenario ...]   (no args = all scenarios)
//! Env: BENCH_SCALE (float, default 1.0) scales every job count.
//!      HONKER_BENCH_CONN_PER_THREAD=1 makes enqueue_single_4tasks open
//!      one `Database` per thread on the same file instead of sharing one.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use honker::{Database, EnqueueOpts, Queue, QueueOpts};

const QUEUE: &str = "bench";
const CLAIM_BATCH: i64 = 128;
const ENQ_BATCH: usize = 100;
const PREFILL_BATCH: usize = 1000;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn payload(n: u64) -> serde_json::Value {
    serde_json::json!({ "n": n })
}

/// honker version as resolved in our Cargo.lock.
fn honker_version() -> String {
    let lock = include_str!("../Cargo.lock");
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l.trim() == "name = \"honker\"" {
            if let Some(v) = lines.next() {
                if let Some(v) = v.trim().strip_prefix("version = ") {
                    return v.trim_matches('"').to_string();
                }
            }
        }
    }
    "unknown".to_string()
}

fn scale() -> f64 {
    match std::env::var("BENCH_SCALE") {
        Ok(s) => s.trim().parse::<f64>().ok().filter(|v| *v > 0.0).unwrap_or_else(|| {
            eprintln!("honker-bench: ignoring bad BENCH_SCALE={s:?}");
            1.0
        }),
        Err(_) => 1.0,
    }
}

fn scaled(base: u64, s: f64) -> u64 {
    ((base as f64 * s).round() as u64).max(1)
}

/// A fresh database file in the temp dir; removed (with -wal/-shm) on drop.
struct TempDb {
    path: PathBuf,
}

impl TempDb {
    fn new(scenario: &str) -> Self {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!(
            "honker-bench-{}-{}-{}-{}.db",
            scenario,
            std::process::id(),
            nanos,
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        Self { path }
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

fn open(tmp: &TempDb) -> Res<(Database, Queue)> {
    let db = Database::open(&tmp.path)?;
    let q = db.queue(QUEUE, QueueOpts::default());
    Ok((db, q))
}

fn live_count(db: &Database) -> Res<i64> {
    Ok(db.with_conn(|c| {
        c.query_row(
            "SELECT COUNT(*) FROM _honker_live WHERE queue = ?1",
            [QUEUE],
            |r| r.get::<_, i64>(0),
        )
    })?)
}

/// Enqueue `n` jobs, `batch` per transaction (untimed helper for prefill,
/// timed body for the batch scenario).
fn enqueue_batched(db: &Database, q: &Queue, start: u64, n: u64, batch: usize) -> Res<()> {
    let mut i = 0u64;
    while i < n {
        let end = (i + batch as u64).min(n);
        let tx = db.transaction()?;
        for k in i..end {
            q.enqueue_tx(&tx, &payload(start + k), EnqueueOpts::default())?;
        }
        tx.commit()?;
        i = end;
    }
    Ok(())
}

fn report(scenario: &str, jobs: u64, elapsed: Duration) {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { (jobs as f64 / secs).round() as u64 } else { 0 };
    println!("bench peer=honker scenario={scenario} jobs={jobs} secs={secs:.3} jobs_per_s={rate}");
}

// ---------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------

fn enqueue_single_4tasks(s: f64) -> Res<()> {
    let name = "enqueue_single_4tasks";
    let per = scaled(5_000, s);
    let threads = 4u64;
    let total = per * threads;
    let tmp = TempDb::new(name);
    let (db, q) = open(&tmp)?;

    let per_thread = std::env::var("HONKER_BENCH_CONN_PER_THREAD").is_ok_and(|v| v == "1");
    let mut handles_db = Vec::new();
    for _ in 0..threads {
        handles_db.push(if per_thread { open(&tmp)?.1 } else { q.clone() });
    }
    if per_thread {
        eprintln!("honker-bench: {name}: one Database per thread");
    }

    let t0 = Instant::now();
    let handles: Vec<_> = handles_db
        .into_iter()
        .zip(0..threads)
        .map(|(q, t)| {
            std::thread::spawn(move || -> Res<()> {
                for k in 0..per {
                    // One job per call: honker's `enqueue` runs a single
                    // INSERT in autocommit mode = one transaction.
                    q.enqueue(&payload(t * per + k), EnqueueOpts::default())?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "enqueue thread panicked")??;
    }
    let el = t0.elapsed();

    let got = live_count(&db)?;
    if got != total as i64 {
        return Err(format!("{name}: expected {total} rows, found {got}").into());
    }
    report(name, total, el);
    Ok(())
}

/// One job per call from one thread: honker's fastest single-job enqueue
/// (its 4-thread run contends for the one connection's mutex).
fn enqueue_single_1thread(s: f64) -> Res<()> {
    let name = "enqueue_single_1thread";
    let total = scaled(20_000, s);
    let tmp = TempDb::new(name);
    let (db, q) = open(&tmp)?;
    let t0 = Instant::now();
    for k in 0..total {
        q.enqueue(&payload(k), EnqueueOpts::default())?;
    }
    let el = t0.elapsed();
    let got = live_count(&db)?;
    if got != total as i64 {
        return Err(format!("{name}: expected {total} rows, found {got}").into());
    }
    report(name, total, el);
    Ok(())
}

fn enqueue_batch_100(s: f64) -> Res<()> {
    let name = "enqueue_batch_100";
    let n = scaled(100_000, s);
    let tmp = TempDb::new(name);
    let (db, q) = open(&tmp)?;

    let t0 = Instant::now();
    enqueue_batched(&db, &q, 0, n, ENQ_BATCH)?;
    let el = t0.elapsed();

    let got = live_count(&db)?;
    if got != n as i64 {
        return Err(format!("{name}: expected {n} rows, found {got}").into());
    }
    report(name, n, el);
    Ok(())
}

fn explain_claim(db: &Database) {
    // Show SQLite's plan for the two statements honker runs on every
    // claim (dead-letter sweep, then the claim UPDATE), with the bound
    // parameters inlined as literals (queue name is QUEUE). stderr only.
    let stmts = [
        (
            "dead-letter sweep (runs before every claim)",
            "DELETE FROM _honker_live
             WHERE queue = 'bench'
               AND attempts >= max_attempts
               AND (expires_at IS NULL OR expires_at > unixepoch())
               AND ((state = 'pending' AND run_at <= unixepoch())
                 OR (state = 'processing' AND claim_expires_at < unixepoch()))",
        ),
        (
            "claim UPDATE",
            "UPDATE _honker_live
             SET state = 'processing', worker_id = 'w1',
                 claim_expires_at = unixepoch() + 300, attempts = attempts + 1
             WHERE id IN (
               SELECT id FROM _honker_live
               WHERE queue = 'bench'
                 AND state IN ('pending', 'processing')
                 AND attempts < max_attempts
                 AND (expires_at IS NULL OR expires_at > unixepoch())
                 AND ((state = 'pending' AND run_at <= unixepoch())
                   OR (state = 'processing' AND claim_expires_at < unixepoch()))
               ORDER BY priority DESC, run_at ASC, id ASC
               LIMIT 1)",
        ),
    ];
    db.with_conn(|c| {
        for (label, sql) in stmts {
            let plan: Vec<String> = match c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")) {
                Ok(mut st) => st
                    .query_map([], |r| r.get::<_, String>(3))
                    .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                    .unwrap_or_default(),
                Err(e) => vec![format!("(explain failed: {e})")],
            };
            eprintln!("honker-bench: plan for {label}:");
            for line in plan {
                eprintln!("honker-bench:   {line}");
            }
        }
    });
}

fn claim_ack_single_20k(s: f64) -> Res<()> {
    let name = "claim_ack_single_20k";
    let n = scaled(20_000, s);
    let tmp = TempDb::new(name);
    let (db, q) = open(&tmp)?;
    enqueue_batched(&db, &q, 0, n, PREFILL_BATCH)?;
    explain_claim(&db);

    let worker = "w1";
    let mut done = 0u64;
    let t0 = Instant::now();
    while let Some(job) = q.claim_one(worker)? {
        if !job.ack()? {
            return Err(format!("{name}: ack of job {} failed", job.id).into());
        }
        done += 1;
    }
    let el = t0.elapsed();

    let left = live_count(&db)?;
    if done != n || left != 0 {
        return Err(format!("{name}: acked {done} of {n}, {left} left").into());
    }
    report(name, n, el);
    Ok(())
}

fn claim128_batch_ack_100k(s: f64) -> Res<()> {
    let name = "claim128_batch_ack_100k";
    let n = scaled(100_000, s);
    let tmp = TempDb::new(name);
    let (db, q) = open(&tmp)?;
    enqueue_batched(&db, &q, 0, n, PREFILL_BATCH)?;

    let worker = "w1";
    let mut done = 0u64;
    let mut ids: Vec<i64> = Vec::with_capacity(CLAIM_BATCH as usize);
    let t0 = Instant::now();
    loop {
        let jobs = q.claim_batch(worker, CLAIM_BATCH)?;
        if jobs.is_empty() {
            break;
        }
        ids.clear();
        ids.extend(jobs.iter().map(|j| j.id));
        let acked = q.ack_batch(&ids, worker)?;
        if acked as usize != ids.len() {
            return Err(format!("{name}: acked {acked} of {} claimed", ids.len()).into());
        }
        done += acked as u64;
    }
    let el = t0.elapsed();

    let left = live_count(&db)?;
    if done != n || left != 0 {
        return Err(format!("{name}: acked {done} of {n}, {left} left").into());
    }
    report(name, n, el);
    Ok(())
}

fn end_to_end_1p2c(s: f64) -> Res<()> {
    let name = "end_to_end_1p2c";
    let n = scaled(50_000, s);
    let tmp = TempDb::new(name);
    let (db, q) = open(&tmp)?;
    let acked = Arc::new(AtomicU64::new(0));

    let t0 = Instant::now();
    let producer = {
        let (db, q) = (db.clone(), q.clone());
        std::thread::spawn(move || enqueue_batched(&db, &q, 0, n, ENQ_BATCH))
    };
    let consumers: Vec<_> = (0..2)
        .map(|c| {
            let (db, q, acked) = (db.clone(), q.clone(), acked.clone());
            std::thread::spawn(move || -> Res<()> {
                let worker = format!("w{c}");
                // honker's wake-up primitive: fires on any commit to the
                // file (1 ms PRAGMA data_version poll). Used only when idle.
                let events = db.update_events();
                let mut ids: Vec<i64> = Vec::with_capacity(CLAIM_BATCH as usize);
                while acked.load(Ordering::Acquire) < n {
                    let jobs = q.claim_batch(&worker, CLAIM_BATCH)?;
                    if jobs.is_empty() {
                        events.recv_timeout(Duration::from_millis(20))?;
                        continue;
                    }
                    ids.clear();
                    ids.extend(jobs.iter().map(|j| j.id));
                    let k = q.ack_batch(&ids, &worker)?;
                    if k as usize != ids.len() {
                        return Err(format!("acked {k} of {} claimed", ids.len()).into());
                    }
                    acked.fetch_add(k as u64, Ordering::AcqRel);
                }
                Ok(())
            })
        })
        .collect();
    producer.join().map_err(|_| "producer panicked")??;
    for h in consumers {
        h.join().map_err(|_| "consumer panicked")??;
    }
    let el = t0.elapsed();

    let done = acked.load(Ordering::Acquire);
    let left = live_count(&db)?;
    if done != n || left != 0 {
        return Err(format!("{name}: acked {done} of {n}, {left} left").into());
    }
    report(name, n, el);
    Ok(())
}

fn unix_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// The enqueuer of `wake_latency_xproc`, run as a child process
/// (`honker-bench enqueue-timed PATH COUNT`): one job every 5 ms, printing
/// `id call_us commit_us` per job once all are in (as alkstore's enqueuer:
/// a line per job would wake the measuring process's pipe reader just as
/// its consumer wakes).
fn enqueue_timed(path: &str, count: u64) -> Res<()> {
    use std::io::Write;
    let db = Database::open(path)?;
    let q = db.queue(QUEUE, QueueOpts::default());
    let mut lines = Vec::new();
    for n in 0..count {
        std::thread::sleep(Duration::from_millis(5));
        let call = unix_us();
        let id = q.enqueue(&payload(n), EnqueueOpts::default())?;
        let commit = unix_us();
        lines.push((id, call, commit));
    }
    let mut out = std::io::stdout().lock();
    for (id, call, commit) in lines {
        writeln!(out, "{id} {call} {commit}")?;
    }
    out.flush()?;
    Ok(())
}

/// `wake_latency_xproc`: an idle honker consumer in this process (claim,
/// else wait on honker's `update_events`, its 1 ms data_version poll), jobs
/// enqueued one at a time by another process; latency from the enqueuer's
/// commit (and call) to the claim returning the job.
fn wake_latency_xproc(s: f64) -> Res<()> {
    let samples = scaled(500, s.min(1.0));
    let tmp = TempDb::new("wake_xproc");
    let (db, q) = open(&tmp)?;
    let stop = Arc::new(AtomicU64::new(0));
    let consumer = {
        let (db, q, stop) = (db.clone(), q.clone(), stop.clone());
        std::thread::spawn(move || -> Res<Vec<(i64, i64)>> {
            let events = db.update_events();
            let mut seen = Vec::new();
            while stop.load(Ordering::Acquire) == 0 {
                match q.claim_one("w")? {
                    Some(job) => {
                        seen.push((job.id, unix_us()));
                        q.ack_batch(&[job.id], "w")?;
                    }
                    None => {
                        let _ = events.recv_timeout(Duration::from_millis(20));
                    }
                }
            }
            Ok(seen)
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let out = std::process::Command::new(std::env::current_exe()?)
        .arg("enqueue-timed")
        .arg(&tmp.path)
        .arg(samples.to_string())
        .output()?;
    if !out.status.success() {
        return Err("the enqueuer failed".into());
    }
    std::thread::sleep(Duration::from_millis(100));
    stop.store(1, Ordering::Release);
    let seen: std::collections::HashMap<i64, i64> =
        consumer.join().map_err(|_| "consumer panicked")??.into_iter().collect();
    let (mut commit, mut call) = (Vec::new(), Vec::new());
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<i64> = line.split(' ').filter_map(|x| x.parse().ok()).collect();
        if let [id, c0, c1] = f[..] {
            if let Some(at) = seen.get(&id) {
                call.push((at - c0) as f64 / 1e3);
                commit.push((at - c1) as f64 / 1e3);
            }
        }
    }
    commit.sort_by(f64::total_cmp);
    call.sort_by(f64::total_cmp);
    let pct = |v: &[f64], p: f64| v.get(((v.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN);
    println!(
        "bench peer=honker scenario=wake_latency_xproc samples={} p50_ms_from_commit={:.3} p99_ms_from_commit={:.3} p50_ms_from_call={:.3} p99_ms_from_call={:.3}",
        commit.len(),
        pct(&commit, 0.5),
        pct(&commit, 0.99),
        pct(&call, 0.5),
        pct(&call, 0.99)
    );
    Ok(())
}

fn print_settings() -> Res<()> {
    let tmp = TempDb::new("settings");
    let (db, _q) = open(&tmp)?;
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
        "# sqlite {sqlite} (bundled) journal_mode={journal} synchronous={sync_name} (honker defaults)"
    );
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("enqueue-timed") {
        let (path, count) = (args.get(2).cloned().unwrap_or_default(), args.get(3).and_then(|c| c.parse().ok()).unwrap_or(0));
        if let Err(e) = enqueue_timed(&path, count) {
            eprintln!("honker-bench: enqueue-timed failed: {e}");
            std::process::exit(1);
        }
        return;
    }
    println!("# honker {}", honker_version());
    let s = scale();
    if let Err(e) = print_settings() {
        eprintln!("honker-bench: could not read settings: {e}");
    }
    eprintln!("honker-bench: BENCH_SCALE={s}");

    let scenarios: [(&str, fn(f64) -> Res<()>); 7] = [
        ("enqueue_single_4tasks", enqueue_single_4tasks),
        ("enqueue_single_1thread", enqueue_single_1thread),
        ("enqueue_batch_100", enqueue_batch_100),
        ("claim_ack_single_20k", claim_ack_single_20k),
        ("claim128_batch_ack_100k", claim128_batch_ack_100k),
        ("end_to_end_1p2c", end_to_end_1p2c),
        ("wake_latency_xproc", wake_latency_xproc),
    ];
    // Optional positional args: run only the named scenarios.
    let only: Vec<String> = std::env::args().skip(1).collect();
    for o in &only {
        if !scenarios.iter().any(|(n, _)| n == o) {
            eprintln!("honker-bench: unknown scenario {o:?}");
            std::process::exit(2);
        }
    }
    let mut failed = false;
    for (name, f) in scenarios {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        eprintln!("honker-bench: running {name}");
        if let Err(e) = f(s) {
            eprintln!("honker-bench: scenario {name} failed: {e}");
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}
