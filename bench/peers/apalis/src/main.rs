//! Peer benchmark: apalis 1.0 (`apalis-sqlite`, `apalis-postgres`), for
//! comparison with alkstore. Standalone Cargo workspace: apalis brings
//! sqlx 0.9 and its own bundled SQLite, which must not be linked into the
//! alkstore workspace.
//!
//! Usage: apalis-bench sqlite [scenario ...]
//!        apalis-bench postgres URL [scenario ...]
//!
//! Output (stdout), one line per scenario:
//!   bench peer=apalis engine=<e> scenario=<name> jobs=<n> secs=<f3> jobs_per_s=<int>
//!   bench peer=apalis engine=<e> scenario=wake_latency samples=<n> p50_ms_from_call=..
//! Lines starting with `#` are comments. Everything else goes to stderr.
//!
//! Settings, as apalis's READMEs recommend for low latency:
//! - SQLite: the "hooked" storage (`SqliteStorage::connect_with_callback`,
//!   an SQLite update hook on every pooled connection) with a `Strategy` of
//!   the listener stream (`ready_chunks(batch_size)`) plus a 500 ms interval
//!   as a fallback. The file is fresh per scenario; apalis's own `setup()`
//!   (migrations, journal_mode=WAL, its pragmas) runs on it first, then
//!   every connection of the hooked pool gets synchronous=NORMAL and
//!   apalis's other pragmas (see `sqlite_options`).
//! - PostgreSQL: `with_pubsub()` (LISTEN on `apalis::job::insert`, a NOTIFY
//!   per inserted row from apalis's trigger) plus a 5 s interval fallback.
//!   A database of its own (`apalis_bench`), dropped and created anew for
//!   every scenario and dropped at the end.
//! - Workers: no concurrency limit (apalis runs every fetched task at once
//!   unless `.concurrency(n)` adds a tower limit), `batch_size` tasks per
//!   fetch, apalis's defaults otherwise (tasks locked while running,
//!   results persisted: the ack that marks a job Done).
//!
//! Every scenario has a fresh database, is bounded by 120 s, and checks
//! its jobs: enqueue scenarios count the distinct stored payloads, worker
//! scenarios count each job id in the handler (exactly once) and then
//! check that the store marked every job Done.
//!
//! Seen with apalis-sqlite 1.0: its ack (one UPDATE ... FROM json_each
//! per batch of results) costs time in proportion to the jobs the worker
//! has already finished, so work_50k slows down as it goes and may hit the
//! 120 s bound; with two workers (end_to_end_1p2c) a connection can wait
//! out sqlx's 5 s busy timeout and fail with "database is locked".
//!
//! Env: BENCH_SCALE (float, default 1.0) scales every job count.
//!      APALIS_SQLITE_WORK_JOBS sets SQLite work_50k's job count (default
//!      2,000, for the reason above).
//!      APALIS_BENCH_BATCH sets Config::batch_size (default 100 on SQLite,
//!      500 on PostgreSQL); APALIS_BENCH_WORKERS the workers of work_50k
//!      (default 1 on SQLite, 4 on PostgreSQL).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apalis::prelude::*;
use apalis_postgres::PostgresStorage;
use apalis_sqlite::callback::HookCallbackListener;
use apalis_sqlite::SqliteStorage;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const QUEUE: &str = "bench";
const PG_DATABASE: &str = "apalis_bench";
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);
/// Jobs per push when filling a queue before a timed run.
const PREFILL_BATCH: usize = 1_000;
/// Jobs per push, and concurrent producers, in PostgreSQL's insert_50k.
const INSERT_BATCH: usize = 1_000;
const INSERT_PRODUCERS: usize = 4;
const SQLITE_FALLBACK_POLL: Duration = Duration::from_millis(500);
const PG_FALLBACK_POLL: Duration = Duration::from_secs(5);

const SQLITE_SCENARIOS: &[&str] = &[
    "enqueue_single_4tasks",
    "enqueue_single_1thread",
    "enqueue_batch_100",
    "work_50k",
    "end_to_end_1p2c",
    "wake_latency",
];
const PG_SCENARIOS: &[&str] = &["insert_50k", "work_50k", "wake_latency"];

/// The job payload: `{"i": n}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Job {
    i: u64,
}

fn jobs(range: std::ops::Range<u64>) -> Vec<Job> {
    range.map(|i| Job { i }).collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
        }
    }
}

/// What every scenario gets: the engine, the scale and the tuning.
#[derive(Clone)]
struct Env {
    engine: Engine,
    scale: f64,
    pg_url: String,
    batch: usize,
    workers: usize,
    /// When the running scenario gives up.
    deadline: Instant,
}

impl Env {
    fn scaled(&self, base: u64) -> u64 {
        ((base as f64 * self.scale).round() as u64).max(1)
    }

    fn sqlite_config(&self) -> apalis_sqlite::Config {
        apalis_sqlite::Config::default()
            .queue(QUEUE)
            .batch_size(self.batch)
    }

    fn pg_config(&self) -> apalis_postgres::Config {
        apalis_postgres::Config::default()
            .queue(QUEUE)
            .batch_size(self.batch)
    }

    fn report(&self, scenario: &str, n: u64, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let rate = if secs > 0.0 {
            (n as f64 / secs).round() as u64
        } else {
            0
        };
        println!(
            "bench peer=apalis engine={} scenario={scenario} jobs={n} secs={secs:.3} jobs_per_s={rate}",
            self.engine.name()
        );
    }
}

// ---------------------------------------------------------------------
// Counting in the handler
// ---------------------------------------------------------------------

/// Counts what the handler saw: each job id must come exactly once.
struct Tally {
    seen: Vec<AtomicU32>,
    done: AtomicU64,
    bad: AtomicU64,
    target: u64,
    finished: Notify,
    last_at: Mutex<Option<Instant>>,
    /// Where wake_latency wants each handler start time.
    starts: Option<mpsc::UnboundedSender<(u64, Instant)>>,
}

impl Tally {
    fn new(target: u64, starts: Option<mpsc::UnboundedSender<(u64, Instant)>>) -> Arc<Self> {
        Arc::new(Self {
            seen: (0..target).map(|_| AtomicU32::new(0)).collect(),
            done: AtomicU64::new(0),
            bad: AtomicU64::new(0),
            target,
            finished: Notify::new(),
            last_at: Mutex::new(None),
            starts,
        })
    }

    fn record(&self, i: u64, at: Instant) {
        match self.seen.get(i as usize) {
            Some(c) if c.fetch_add(1, Ordering::AcqRel) == 0 => {}
            _ => {
                self.bad.fetch_add(1, Ordering::AcqRel);
            }
        }
        if let Some(tx) = &self.starts {
            let _ = tx.send((i, at));
        }
        if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.target {
            *self.last_at.lock().unwrap() = Some(at);
            self.finished.notify_one();
        }
    }

    fn check(&self) -> Res<()> {
        let done = self.done.load(Ordering::Acquire);
        let bad = self.bad.load(Ordering::Acquire);
        let missing = self
            .seen
            .iter()
            .filter(|c| c.load(Ordering::Acquire) == 0)
            .count();
        if done != self.target || bad != 0 || missing != 0 {
            return Err(format!(
                "handler ran {done} times for {} jobs: {bad} duplicate or unknown, {missing} never seen",
                self.target
            )
            .into());
        }
        Ok(())
    }
}

/// The no-op job handler: count the job, nothing else.
async fn handle(job: Job, tally: Data<Arc<Tally>>) -> Result<(), BoxDynError> {
    tally.record(job.i, Instant::now());
    Ok(())
}

/// A spawned apalis worker.
struct Running {
    ctx: WorkerContext,
    handle: JoinHandle<Result<(), WorkerError>>,
}

/// Wait until the handler has run for every job; the time it last ran.
/// Fails early if a worker exits (apalis ends a worker on a backend
/// error), and at the scenario's deadline with the progress so far.
async fn run_to_completion(tally: &Tally, workers: &mut [Running], env: &Env) -> Res<Instant> {
    let exited = futures::future::select_all(workers.iter_mut().map(|w| &mut w.handle));
    tokio::select! {
        _ = tally.finished.notified() => {
            Ok(tally.last_at.lock().unwrap().expect("set before notify"))
        }
        (res, k, _) = exited => {
            let why = match res {
                Ok(Ok(())) => "no error".to_string(),
                Ok(Err(e)) => e.to_string(),
                Err(e) => e.to_string(),
            };
            Err(format!("worker {k} exited before the jobs were done: {why}").into())
        }
        _ = tokio::time::sleep_until(env.deadline.into()) => Err(format!(
            "gave up after {SCENARIO_TIMEOUT:?}: the handler had run {} of {} jobs",
            tally.done.load(Ordering::Acquire),
            tally.target
        )
        .into()),
    }
}

/// Stop the workers and wait for them to exit (they flush their pending
/// acks on the way out).
async fn stop_all(workers: Vec<Running>) -> Res<()> {
    for w in &workers {
        w.ctx
            .stop()
            .map_err(|e| format!("stop {}: {e}", w.ctx.name()))?;
    }
    for w in workers {
        w.handle
            .await
            .map_err(|e| format!("worker task: {e}"))?
            .map_err(|e| format!("worker: {e}"))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------
// SQLite
// ---------------------------------------------------------------------

/// A fresh directory in the temp dir; removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(scenario: &str) -> Res<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "apalis-bench-{scenario}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every connection of the hooked pool: synchronous=NORMAL (what alkstore
/// and honker run with: in WAL mode, durable across a process crash), plus
/// the other per-connection pragmas of apalis's `SqliteStorage::setup`
/// (temp_store, cache_size, journal_size_limit); that `setup` also sets
/// synchronous=OFF, but only on the one connection it happens to run on.
/// journal_mode=WAL is a property of the file: set once, by the setup pool
/// (sqlx sets no journal_mode by default, as changing it takes a lock that
/// busy_timeout cannot wait for).
fn sqlite_options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .synchronous(SqliteSynchronous::Normal)
        .pragma("temp_store", "MEMORY")
        .pragma("cache_size", "64000")
        .pragma("journal_size_limit", "67108864")
}

struct SqliteDb {
    pool: SqlitePool,
    listener: HookCallbackListener,
    env: Env,
    _dir: TempDir,
}

impl SqliteDb {
    async fn fresh(env: &Env, scenario: &str) -> Res<Self> {
        let dir = TempDir::new(scenario)?;
        let path = dir.0.join("apalis.db");
        let opts = sqlite_options(&path);
        // apalis's schema setup, on a pool of its own so that its
        // synchronous=OFF stays on a connection the benchmark never uses.
        let setup = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(
                opts.clone()
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal),
            )
            .await?;
        SqliteStorage::setup(&setup).await?;
        setup.close().await;
        // The hooked pool (lazy: no connection is open yet), told to open
        // its connections with our options.
        let url = format!("sqlite://{}", path.display());
        let (pool, listener) = SqliteStorage::connect_with_callback(&url)?;
        pool.set_connect_options(opts);
        Ok(Self {
            pool,
            listener,
            env: env.clone(),
            _dir: dir,
        })
    }

    fn storage(&self) -> SqliteStorage<Job> {
        SqliteStorage::new(&self.pool).with_config(self.env.sqlite_config())
    }

    fn spawn_worker(&self, name: &str, tally: Arc<Tally>) -> Running {
        // As in apalis-sqlite's "Event-Driven Worker (Hooked)" example: wake
        // on the update hook's insert events, poll every 500 ms as a fallback.
        let strategy = Strategy::new()
            .stream(self.listener.clone().ready_chunks(self.env.batch))
            .interval(SQLITE_FALLBACK_POLL);
        let backend = self.storage().poll_with_strategy(strategy);
        let ctx = WorkerContext::new(name);
        let worker = WorkerBuilder::new(&ctx)
            .backend(backend)
            .data(tally)
            .build(handle);
        Running {
            ctx,
            handle: tokio::spawn(worker.run()),
        }
    }

    async fn prefill(&self, n: u64) -> Res<()> {
        let mut s = self.storage();
        for chunk in jobs(0..n).chunks(PREFILL_BATCH) {
            s.push_bulk(chunk.to_vec()).await?;
        }
        Ok(())
    }

    /// `n` rows with `n` distinct payloads.
    async fn check_stored(&self, n: u64) -> Res<()> {
        let (rows, distinct): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), COUNT(DISTINCT json_extract(CAST(job AS TEXT), '$.i')) \
             FROM Jobs WHERE job_type = ?1",
        )
        .bind(QUEUE)
        .fetch_one(&self.pool)
        .await?;
        check_stored(n, rows, distinct)
    }

    async fn check_done(&self, n: u64) -> Res<()> {
        let (rows, done): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), COALESCE(SUM(status = 'Done'), 0) FROM Jobs WHERE job_type = ?1",
        )
        .bind(QUEUE)
        .fetch_one(&self.pool)
        .await?;
        check_done(n, rows, done)
    }
}

fn check_stored(n: u64, rows: i64, distinct: i64) -> Res<()> {
    if rows != n as i64 || distinct != n as i64 {
        return Err(format!("expected {n} jobs, found {rows} rows, {distinct} distinct").into());
    }
    Ok(())
}

fn check_done(n: u64, rows: i64, done: i64) -> Res<()> {
    if rows != n as i64 || done != n as i64 {
        return Err(format!("expected {n} jobs Done, found {rows} rows, {done} Done").into());
    }
    Ok(())
}

async fn sqlite_enqueue_single(env: &Env, name: &str, tasks: u64) -> Res<()> {
    let per = env.scaled(20_000 / tasks);
    let n = per * tasks;
    let db = SqliteDb::fresh(env, name).await?;
    let t0 = Instant::now();
    let producers: Vec<_> = (0..tasks)
        .map(|t| {
            let mut s = db.storage();
            tokio::spawn(async move {
                for i in t * per..(t + 1) * per {
                    // One job per call: one transaction per push.
                    s.push(Job { i }).await?;
                }
                Ok::<_, TaskSinkError<apalis_sqlite::Error>>(())
            })
        })
        .collect();
    for p in producers {
        p.await??;
    }
    let el = t0.elapsed();
    db.check_stored(n).await?;
    env.report(name, n, el);
    Ok(())
}

async fn sqlite_enqueue_batch_100(env: &Env) -> Res<()> {
    let n = env.scaled(100_000);
    let db = SqliteDb::fresh(env, "enqueue_batch_100").await?;
    let mut s = db.storage();
    let all = jobs(0..n);
    let t0 = Instant::now();
    for chunk in all.chunks(100) {
        // apalis's batch API: one transaction for the whole Vec.
        s.push_bulk(chunk.to_vec()).await?;
    }
    let el = t0.elapsed();
    db.check_stored(n).await?;
    env.report("enqueue_batch_100", n, el);
    Ok(())
}

async fn sqlite_work_50k(env: &Env) -> Res<()> {
    // 2,000 jobs, not 50,000: apalis-sqlite's ack slows with every job the
    // worker has finished (see the top of this file), so at 50,000 it does
    // not finish within the bound. A short run flatters it, never us; the
    // line's jobs= field says how many ran.
    let n = std::env::var("APALIS_SQLITE_WORK_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| env.scaled(2_000));
    let db = SqliteDb::fresh(env, "work_50k").await?;
    db.prefill(n).await?;
    let tally = Tally::new(n, None);
    let t0 = Instant::now();
    let mut workers: Vec<_> = (0..env.workers)
        .map(|w| db.spawn_worker(&format!("w{w}"), tally.clone()))
        .collect();
    let last = run_to_completion(&tally, &mut workers, env).await?;
    stop_all(workers).await?;
    let acked = t0.elapsed();
    tally.check()?;
    db.check_done(n).await?;
    env.report("work_50k", n, last - t0);
    println!(
        "# apalis engine=sqlite scenario=work_50k workers={} all_acked_secs={:.3}",
        env.workers,
        acked.as_secs_f64()
    );
    Ok(())
}

async fn sqlite_end_to_end_1p2c(env: &Env) -> Res<()> {
    let n = env.scaled(50_000);
    let db = SqliteDb::fresh(env, "end_to_end_1p2c").await?;
    let tally = Tally::new(n, None);
    let all = jobs(0..n);
    let t0 = Instant::now();
    let mut workers: Vec<_> = (0..2)
        .map(|w| db.spawn_worker(&format!("c{w}"), tally.clone()))
        .collect();
    let mut s = db.storage();
    let producer = tokio::spawn(async move {
        for chunk in all.chunks(100) {
            s.push_bulk(chunk.to_vec()).await?;
        }
        Ok::<_, TaskSinkError<apalis_sqlite::Error>>(())
    });
    producer.await??;
    let last = run_to_completion(&tally, &mut workers, env).await?;
    stop_all(workers).await?;
    let acked = t0.elapsed();
    tally.check()?;
    db.check_done(n).await?;
    env.report("end_to_end_1p2c", n, last - t0);
    println!(
        "# apalis engine=sqlite scenario=end_to_end_1p2c all_acked_secs={:.3}",
        acked.as_secs_f64()
    );
    Ok(())
}

async fn sqlite_wake_latency(env: &Env) -> Res<()> {
    let db = SqliteDb::fresh(env, "wake_latency").await?;
    let samples = env.scaled(200).min(200);
    let (tx, rx) = mpsc::unbounded_channel();
    let tally = Tally::new(samples, Some(tx));
    let worker = db.spawn_worker("wake", tally.clone());
    let mut s = db.storage();
    let lat = measure_wake(&mut s, rx, samples).await?;
    stop_all(vec![worker]).await?;
    tally.check()?;
    db.check_done(samples).await?;
    lat.report(env);
    Ok(())
}

// ---------------------------------------------------------------------
// PostgreSQL
// ---------------------------------------------------------------------

struct PgDb {
    pool: PgPool,
    env: Env,
}

/// Drop and create the benchmark's own database; returns options for it.
async fn pg_recreate(url: &str) -> Res<PgConnectOptions> {
    let admin_opts = PgConnectOptions::from_str(url)?;
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(admin_opts.clone())
        .await?;
    sqlx::query("DROP DATABASE IF EXISTS apalis_bench WITH (FORCE)")
        .execute(&admin)
        .await?;
    sqlx::query("CREATE DATABASE apalis_bench")
        .execute(&admin)
        .await?;
    admin.close().await;
    Ok(admin_opts.database(PG_DATABASE))
}

async fn pg_drop(url: &str) -> Res<()> {
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(PgConnectOptions::from_str(url)?)
        .await?;
    sqlx::query("DROP DATABASE IF EXISTS apalis_bench WITH (FORCE)")
        .execute(&admin)
        .await?;
    admin.close().await;
    Ok(())
}

impl PgDb {
    async fn fresh(env: &Env) -> Res<Self> {
        let opts = pg_recreate(&env.pg_url).await?;
        // sqlx's default pool (10 connections), as apalis's examples use.
        let pool = PgPool::connect_with(opts).await?;
        PostgresStorage::setup(&pool).await?;
        Ok(Self {
            pool,
            env: env.clone(),
        })
    }

    fn storage(&self) -> PostgresStorage<Job> {
        PostgresStorage::new(&self.pool).with_config(self.env.pg_config())
    }

    fn spawn_worker(&self, name: &str, tally: Arc<Tally>) -> Running {
        // As in apalis-postgres's "Pubsub listener example": LISTEN/NOTIFY,
        // with a lazy interval as a fallback.
        let backend = self
            .storage()
            .with_pubsub()
            .poll_with_strategy(Strategy::new().interval(PG_FALLBACK_POLL));
        let ctx = WorkerContext::new(name);
        let worker = WorkerBuilder::new(&ctx)
            .backend(backend)
            .data(tally)
            .build(handle);
        Running {
            ctx,
            handle: tokio::spawn(worker.run()),
        }
    }

    async fn check_stored(&self, n: u64) -> Res<()> {
        let (rows, distinct): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), COUNT(DISTINCT convert_from(job, 'UTF8')::jsonb ->> 'i') \
             FROM apalis.jobs WHERE job_type = $1",
        )
        .bind(QUEUE)
        .fetch_one(&self.pool)
        .await?;
        check_stored(n, rows, distinct)
    }

    async fn check_done(&self, n: u64) -> Res<()> {
        let (rows, done): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE status = 'Done') \
             FROM apalis.jobs WHERE job_type = $1",
        )
        .bind(QUEUE)
        .fetch_one(&self.pool)
        .await?;
        check_done(n, rows, done)
    }
}

async fn pg_insert_50k(env: &Env) -> Res<()> {
    let n = env.scaled(50_000);
    let db = PgDb::fresh(env).await?;
    // Batches of INSERT_BATCH from INSERT_PRODUCERS concurrent producers;
    // apalis inserts a whole batch with one INSERT ... SELECT unnest(...).
    let chunks: Vec<Vec<Job>> = jobs(0..n)
        .chunks(INSERT_BATCH)
        .map(|c| c.to_vec())
        .collect();
    let queue = Arc::new(Mutex::new(chunks));
    let t0 = Instant::now();
    let producers: Vec<_> = (0..INSERT_PRODUCERS)
        .map(|_| {
            let (mut s, queue) = (db.storage(), queue.clone());
            tokio::spawn(async move {
                loop {
                    let next = queue.lock().unwrap().pop();
                    let Some(chunk) = next else {
                        return Ok::<_, TaskSinkError<apalis_postgres::Error>>(());
                    };
                    s.push_bulk(chunk).await?;
                }
            })
        })
        .collect();
    for p in producers {
        p.await??;
    }
    let el = t0.elapsed();
    db.check_stored(n).await?;
    env.report("insert_50k", n, el);
    Ok(())
}

async fn pg_work_50k(env: &Env) -> Res<()> {
    let n = env.scaled(50_000);
    let db = PgDb::fresh(env).await?;
    let mut s = db.storage();
    for chunk in jobs(0..n).chunks(PREFILL_BATCH) {
        s.push_bulk(chunk.to_vec()).await?;
    }
    let tally = Tally::new(n, None);
    let t0 = Instant::now();
    let mut workers: Vec<_> = (0..env.workers)
        .map(|w| db.spawn_worker(&format!("w{w}"), tally.clone()))
        .collect();
    let last = run_to_completion(&tally, &mut workers, env).await?;
    stop_all(workers).await?;
    let acked = t0.elapsed();
    tally.check()?;
    db.check_done(n).await?;
    env.report("work_50k", n, last - t0);
    println!(
        "# apalis engine=postgres scenario=work_50k workers={} all_acked_secs={:.3}",
        env.workers,
        acked.as_secs_f64()
    );
    Ok(())
}

async fn pg_wake_latency(env: &Env) -> Res<()> {
    let db = PgDb::fresh(env).await?;
    let samples = env.scaled(200).min(200);
    let (tx, rx) = mpsc::unbounded_channel();
    let tally = Tally::new(samples, Some(tx));
    let worker = db.spawn_worker("wake", tally.clone());
    let mut s = db.storage();
    let lat = measure_wake(&mut s, rx, samples).await?;
    stop_all(vec![worker]).await?;
    tally.check()?;
    db.check_done(samples).await?;
    lat.report(env);
    Ok(())
}

// ---------------------------------------------------------------------
// Wake latency
// ---------------------------------------------------------------------

struct Latencies {
    from_call: Vec<f64>,
    from_commit: Vec<f64>,
}

/// One job at a time into an idle worker's queue: the time from the push
/// call (and from its return, the commit) to the handler starting.
async fn measure_wake<S, K>(
    sink: &mut S,
    mut starts: mpsc::UnboundedReceiver<(u64, Instant)>,
    samples: u64,
) -> Res<Latencies>
where
    S: TaskSink<Job, K>,
    S::Error: std::fmt::Display,
{
    // Let the worker register and reach its idle wait (and, on
    // PostgreSQL, connect its listener).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut lat = Latencies {
        from_call: Vec::new(),
        from_commit: Vec::new(),
    };
    for i in 0..samples {
        let t0 = Instant::now();
        sink.push(Job { i })
            .await
            .map_err(|e| format!("push: {e}"))?;
        let t1 = Instant::now();
        let (got, started) = tokio::time::timeout(Duration::from_secs(10), starts.recv())
            .await
            .map_err(|_| format!("job {i}: the handler did not start within 10 s"))?
            .ok_or("the worker stopped")?;
        if got != i {
            return Err(format!("expected job {i}, the handler got {got}").into());
        }
        lat.from_call
            .push(started.saturating_duration_since(t0).as_secs_f64() * 1e3);
        lat.from_commit
            .push(started.saturating_duration_since(t1).as_secs_f64() * 1e3);
        // Let the worker write its lock and ack and go idle again.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    lat.from_call.sort_by(f64::total_cmp);
    lat.from_commit.sort_by(f64::total_cmp);
    Ok(lat)
}

impl Latencies {
    fn report(&self, env: &Env) {
        let pct = |v: &[f64], p: f64| {
            v.get(((v.len() as f64 - 1.0) * p).round() as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        println!(
            "bench peer=apalis engine={} scenario=wake_latency samples={} p50_ms_from_call={:.3} p99_ms_from_call={:.3} p50_ms_from_commit={:.3} p99_ms_from_commit={:.3}",
            env.engine.name(),
            self.from_call.len(),
            pct(&self.from_call, 0.5),
            pct(&self.from_call, 0.99),
            pct(&self.from_commit, 0.5),
            pct(&self.from_commit, 0.99),
        );
    }
}

// ---------------------------------------------------------------------
// Settings and main
// ---------------------------------------------------------------------

/// Versions as resolved in our Cargo.lock.
fn lock_version(name: &str) -> String {
    let lock = include_str!("../Cargo.lock");
    let mut lines = lock.lines();
    let want = format!("name = \"{name}\"");
    while let Some(l) = lines.next() {
        if l.trim() == want {
            if let Some(v) = lines
                .next()
                .and_then(|v| v.trim().strip_prefix("version = "))
            {
                return v.trim_matches('"').to_string();
            }
        }
    }
    "unknown".to_string()
}

/// Print the settings in force, read back from a fresh database.
async fn print_settings(env: &Env) -> Res<()> {
    match env.engine {
        Engine::Sqlite => {
            let db = SqliteDb::fresh(env, "settings").await?;
            let (journal, sync, version): (String, i64, String) = {
                let mut c = db.pool.acquire().await?;
                let j = sqlx::query_scalar("PRAGMA journal_mode")
                    .fetch_one(&mut *c)
                    .await?;
                let s = sqlx::query_scalar("PRAGMA synchronous")
                    .fetch_one(&mut *c)
                    .await?;
                let v = sqlx::query_scalar("SELECT sqlite_version()")
                    .fetch_one(&mut *c)
                    .await?;
                (j, s, v)
            };
            let sync = ["OFF", "NORMAL", "FULL", "EXTRA"]
                .get(sync as usize)
                .unwrap_or(&"?");
            println!(
                "# apalis config: engine=sqlite sqlite={version} (bundled) storage=SqliteStorage::connect_with_callback (update hook) \
                 strategy=stream(listener.ready_chunks({b}))+interval({fb}ms) batch_size={b} \
                 workers: work_50k={w} end_to_end_1p2c=2, concurrency=unlimited lock_tasks=true persist_results=true \
                 journal_mode={journal} synchronous={sync} temp_store=MEMORY cache_size=64000 \
                 pool=sqlx default (10 connections) file=fresh per scenario",
                b = env.batch,
                fb = SQLITE_FALLBACK_POLL.as_millis(),
                w = env.workers,
            );
        }
        Engine::Postgres => {
            let db = PgDb::fresh(env).await?;
            let (version, sync): (String, String) = sqlx::query_as(
                "SELECT current_setting('server_version'), current_setting('synchronous_commit')",
            )
            .fetch_one(&db.pool)
            .await?;
            println!(
                "# apalis config: engine=postgres server={version} synchronous_commit={sync} storage=PostgresStorage::with_pubsub (LISTEN/NOTIFY) \
                 strategy=interval({fb}s) fallback batch_size={b} workers: work_50k={w}, concurrency=unlimited \
                 lock_tasks=true persist_results=true insert_50k: {ip} producers x push_bulk({p}) \
                 pool=sqlx default (10 connections) database={PG_DATABASE} fresh per scenario",
                fb = PG_FALLBACK_POLL.as_secs(),
                b = env.batch,
                w = env.workers,
                ip = INSERT_PRODUCERS,
                p = INSERT_BATCH,
            );
        }
    }
    Ok(())
}

async fn run_scenario(env: &Env, name: &str) -> Res<()> {
    let env = &Env {
        deadline: Instant::now() + SCENARIO_TIMEOUT,
        ..env.clone()
    };
    match (env.engine, name) {
        (Engine::Sqlite, "enqueue_single_4tasks") => sqlite_enqueue_single(env, name, 4).await,
        (Engine::Sqlite, "enqueue_single_1thread") => sqlite_enqueue_single(env, name, 1).await,
        (Engine::Sqlite, "enqueue_batch_100") => sqlite_enqueue_batch_100(env).await,
        (Engine::Sqlite, "work_50k") => sqlite_work_50k(env).await,
        (Engine::Sqlite, "end_to_end_1p2c") => sqlite_end_to_end_1p2c(env).await,
        (Engine::Sqlite, "wake_latency") => sqlite_wake_latency(env).await,
        (Engine::Postgres, "insert_50k") => pg_insert_50k(env).await,
        (Engine::Postgres, "work_50k") => pg_work_50k(env).await,
        (Engine::Postgres, "wake_latency") => pg_wake_latency(env).await,
        _ => Err(format!("unknown scenario {name:?}").into()),
    }
}

/// Run `f` on a runtime of its own, bounded by `SCENARIO_TIMEOUT` (plus a
/// little, for a scenario that reports its own progress at its deadline);
/// dropping the runtime afterwards ends whatever a failed scenario left
/// running.
fn on_fresh_runtime<F: Future<Output = Res<()>>>(f: F) -> Res<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let res = rt.block_on(async {
        tokio::time::timeout(SCENARIO_TIMEOUT + Duration::from_secs(10), f)
            .await
            .unwrap_or_else(|_| Err(format!("timed out after {SCENARIO_TIMEOUT:?}").into()))
    });
    rt.shutdown_timeout(Duration::from_secs(5));
    res
}

fn env_or<T: FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!("apalis-bench: ignoring bad {name}={v:?}");
            default
        }),
        Err(_) => default,
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: apalis-bench sqlite [scenario ...] | apalis-bench postgres URL [scenario ...]"
    );
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (engine, pg_url, only) = match args.first().map(String::as_str) {
        Some("sqlite") => (Engine::Sqlite, String::new(), &args[1..]),
        Some("postgres") if args.len() >= 2 => (Engine::Postgres, args[1].clone(), &args[2..]),
        _ => usage(),
    };
    let known = match engine {
        Engine::Sqlite => SQLITE_SCENARIOS,
        Engine::Postgres => PG_SCENARIOS,
    };
    for o in only {
        if !known.contains(&o.as_str()) {
            eprintln!(
                "apalis-bench: unknown scenario {o:?}; known: {}",
                known.join(", ")
            );
            std::process::exit(2);
        }
    }
    let scale = env_or("BENCH_SCALE", 1.0f64);
    let scale = if scale > 0.0 { scale } else { 1.0 };
    let (batch, workers) = match engine {
        Engine::Sqlite => (100, 1),
        Engine::Postgres => (500, 4),
    };
    let env = Env {
        engine,
        scale,
        pg_url,
        batch: env_or("APALIS_BENCH_BATCH", batch).max(1),
        workers: env_or("APALIS_BENCH_WORKERS", workers).max(1),
        deadline: Instant::now() + SCENARIO_TIMEOUT,
    };

    println!(
        "# apalis {} apalis-core {} apalis-{} {} sqlx {}",
        lock_version("apalis"),
        lock_version("apalis-core"),
        engine.name(),
        lock_version(match engine {
            Engine::Sqlite => "apalis-sqlite",
            Engine::Postgres => "apalis-postgres",
        }),
        lock_version("sqlx"),
    );
    eprintln!("apalis-bench: BENCH_SCALE={scale}");
    if let Err(e) = on_fresh_runtime(print_settings(&env)) {
        eprintln!("apalis-bench: could not set up {}: {e}", engine.name());
        std::process::exit(1);
    }

    let mut failed = false;
    for &name in known {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        eprintln!("apalis-bench: running {} {name}", engine.name());
        if let Err(e) = on_fresh_runtime(run_scenario(&env, name)) {
            eprintln!("apalis-bench: scenario {name} failed: {e}");
            failed = true;
        }
    }
    if engine == Engine::Postgres {
        if let Err(e) = on_fresh_runtime(pg_drop(&env.pg_url)) {
            eprintln!("apalis-bench: could not drop database {PG_DATABASE}: {e}");
        }
    }
    if failed {
        std::process::exit(1);
    }
}
