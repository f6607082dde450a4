//! `alk bench queue`: throughput scenarios, each on a fresh database (a new
//! SQLite file, or a new PostgreSQL schema that is dropped afterwards).
//!
//! One line per scenario, machine-readable:
//! `bench peer=alkstore engine=sqlite scenario=NAME jobs=N secs=S jobs_per_s=R`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore::{AnyEngine, JobClaimParams, NewJob, QueueEngine, Result, Store, StoreUrl};
use clap::Args;

/// Where and what a scenario benchmark runs (`alk bench queue`, `alk bench
/// stream`).
#[derive(Debug, Args)]
pub(crate) struct ScenarioArgs {
    /// Where to run: a sqlite:// URL is ignored except for its engine (fresh
    /// temporary files are used); a postgres:// URL gets a fresh schema per
    /// scenario. Default: SQLite.
    #[arg(long = "on", default_value = "sqlite://bench.db")]
    pub(crate) on: String,
    /// Multiply every scenario's job or event count (for quick runs).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) scale: f64,
    /// Run only these scenarios (repeatable); default all.
    #[arg(long = "scenario")]
    pub(crate) scenarios: Vec<String>,
}

impl ScenarioArgs {
    /// The target, the checked scenario names, and a valid scale.
    pub(crate) fn resolve<'a>(&'a self, known: &[&'a str]) -> Result<(Target, Vec<&'a str>)> {
        if !(self.scale > 0.0 && self.scale <= 100.0) {
            return Err(alkstore::Error::invalid("scale", "must be in (0, 100]"));
        }
        Ok((
            Target::parse(&self.on)?,
            pick_scenarios(&self.scenarios, known)?,
        ))
    }
}

/// Arguments of `alk bench queue`.
pub(crate) type QueueBenchArgs = ScenarioArgs;

/// Jobs per statement in `insert_50k`.
const INSERT_BATCH: usize = 1_000;
/// Concurrent producers in `insert_50k`.
const INSERT_TASKS: usize = 2;

const SCENARIOS: &[&str] = &[
    "enqueue_single_4tasks",
    "enqueue_single_16tasks",
    "enqueue_batch_100",
    "claim_ack_single_20k",
    "claim128_batch_ack_100k",
    "end_to_end_1p2c",
    "insert_50k",
    "work_50k",
];

/// A fresh store per scenario, and how to clean it up.
pub(crate) enum Target {
    Sqlite {
        dir: tempfile::TempDir,
    },
    Postgres {
        conninfo: String,
        /// `pool_size` from `--on`, kept for every fresh store.
        pool_size: Option<usize>,
    },
}

pub(crate) struct Fresh {
    pub(crate) engine: AnyEngine,
    /// The store's URL, for worker processes the benchmark starts.
    pub(crate) url: String,
}

impl Fresh {
    /// Close the store and drop its PostgreSQL schema, if it made one.
    pub(crate) async fn cleanup(self) -> Result<()> {
        if let AnyEngine::Postgres(pg) = &self.engine {
            pg.drop_store().await?;
        }
        Ok(())
    }
}

/// The SQLite writer's counts so far: group commits, commands run in
/// them, time spent running them (`None` on PostgreSQL, which has no one
/// writer).
pub(crate) fn writer_counts(e: &AnyEngine) -> Option<(u64, u64, Duration)> {
    match e {
        AnyEngine::Sqlite(e) => {
            let (commits, commands) = e.commit_stats();
            Some((commits, commands, e.writer_busy()))
        }
        AnyEngine::Postgres(_) => None,
    }
}

/// The SQLite writer's work since `before` (from [`writer_counts`]) as
/// ` commits=N commands=M writer_busy_ms=T` for a scenario's line; empty on
/// PostgreSQL. Commands per commit is group commit at work; busy time
/// beside the scenario's wall time, how much the one writer was idle.
pub(crate) fn writer_work_since(e: &AnyEngine, before: Option<(u64, u64, Duration)>) -> String {
    let (Some(now), Some(before)) = (writer_counts(e), before) else {
        return String::new();
    };
    format!(
        " commits={} commands={} writer_busy_ms={:.1}",
        now.0 - before.0,
        now.1 - before.1,
        now.2.saturating_sub(before.2).as_secs_f64() * 1e3
    )
}

/// A schema name for one benchmark scenario, unique to this process and
/// call (PostgreSQL identifiers: at most 40 bytes here).
fn bench_schema() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "bench_{:x}_{nanos:x}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

impl Target {
    /// Where `alk bench --on URL` runs: fresh temporary SQLite files, or
    /// fresh schemas on the PostgreSQL server of the URL.
    pub(crate) fn parse(on: &str) -> Result<Target> {
        Ok(match StoreUrl::parse(on)? {
            StoreUrl::Sqlite { .. } => Target::Sqlite {
                dir: tempfile::tempdir()
                    .map_err(|e| alkstore::Error::database("bench temp dir", e))?,
            },
            StoreUrl::Postgres {
                conninfo,
                pool_size,
                ..
            } => Target::Postgres {
                conninfo,
                pool_size,
            },
        })
    }

    pub(crate) async fn fresh(&self, n: usize) -> Result<Fresh> {
        match self {
            Target::Sqlite { dir } => {
                let path = dir.path().join(format!("bench-{n}.db"));
                let url = format!("sqlite://{}", path.display());
                let store = Store::open(&url).await?;
                Ok(Fresh {
                    engine: store.engine().clone(),
                    url,
                })
            }
            Target::Postgres {
                conninfo,
                pool_size,
            } => {
                let schema = bench_schema();
                let sep = if conninfo.contains('?') { '&' } else { '?' };
                let mut url = format!("{conninfo}{sep}schema={schema}");
                if let Some(n) = pool_size {
                    url.push_str(&format!("&pool_size={n}"));
                }
                let store = Store::open(&url).await?;
                Ok(Fresh {
                    engine: store.engine().clone(),
                    url,
                })
            }
        }
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            Target::Sqlite { .. } => "sqlite",
            Target::Postgres { .. } => "postgres",
        }
    }
}

fn payload(i: usize) -> Vec<u8> {
    format!("{{\"n\":{i}}}").into_bytes()
}

fn jobs(range: std::ops::Range<usize>) -> Vec<NewJob> {
    range.map(|i| NewJob::new("bench", payload(i))).collect()
}

/// Enqueue jobs `0..n` in batches of `batch`, one batch after another.
async fn enqueue_in_batches(e: &AnyEngine, n: usize, batch: usize) -> Result<()> {
    let mut i = 0;
    while i < n {
        let end = (i + batch).min(n);
        e.job_enqueue(jobs(i..end)).await?;
        i = end;
    }
    Ok(())
}

/// Fill the queue before a timed drain.
pub(crate) async fn fill(e: &AnyEngine, n: usize) -> Result<()> {
    enqueue_in_batches(e, n, 5_000).await
}

/// Claim up to `batch` and ack them, until the queue is empty.
async fn drain(e: AnyEngine, worker: String, batch: u32) -> Result<usize> {
    let mut done = 0;
    loop {
        let got = e
            .job_claim(JobClaimParams::new("bench", worker.clone(), batch))
            .await?;
        if got.is_empty() {
            return Ok(done);
        }
        done += got.len();
        e.job_ack(got.iter().map(|j| j.claim()).collect::<Vec<_>>())
            .await?;
    }
}

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // scale is in (0, 100]
pub(crate) fn scaled(n: usize, scale: f64) -> usize {
    ((n as f64 * scale).round() as usize).max(1)
}

/// `n` jobs, one per enqueue call, from `callers` concurrent tasks (request
/// handlers of a web app, each enqueuing its own job).
async fn enqueue_one_per_call(e: &AnyEngine, n: usize, callers: usize) -> Result<()> {
    let mut tasks = Vec::new();
    for t in 0..callers {
        let e = e.clone();
        tasks.push(tokio::spawn(async move {
            for i in (t..n).step_by(callers) {
                e.job_enqueue(vec![NewJob::new("bench", payload(i))])
                    .await?;
            }
            Ok::<_, alkstore::Error>(())
        }));
    }
    for t in tasks {
        t.await.map_err(join_err)??;
    }
    Ok(())
}

async fn scenario(name: &str, e: &AnyEngine, scale: f64) -> Result<(usize, f64, String)> {
    let start;
    let before;
    let n;
    match name {
        "enqueue_single_4tasks" | "enqueue_single_16tasks" => {
            let callers = if name == "enqueue_single_4tasks" {
                4
            } else {
                16
            };
            n = scaled(20_000, scale);
            (start, before) = (Instant::now(), writer_counts(e));
            enqueue_one_per_call(e, n, callers).await?;
        }
        "enqueue_batch_100" => {
            n = scaled(100_000, scale);
            (start, before) = (Instant::now(), writer_counts(e));
            enqueue_in_batches(e, n, 100).await?;
        }
        "claim_ack_single_20k" => {
            n = scaled(20_000, scale);
            fill(e, n).await?;
            (start, before) = (Instant::now(), writer_counts(e));
            let done = drain(e.clone(), "w".into(), 1).await?;
            check(done, n)?;
        }
        "claim128_batch_ack_100k" => {
            n = scaled(100_000, scale);
            fill(e, n).await?;
            (start, before) = (Instant::now(), writer_counts(e));
            let done = drain(e.clone(), "w".into(), 128).await?;
            check(done, n)?;
        }
        "end_to_end_1p2c" => {
            n = scaled(50_000, scale);
            (start, before) = (Instant::now(), writer_counts(e));
            let acked = Arc::new(AtomicUsize::new(0));
            let producer = {
                let e = e.clone();
                tokio::spawn(async move { enqueue_in_batches(&e, n, 100).await })
            };
            let mut consumers = Vec::new();
            for w in 0..2 {
                let e = e.clone();
                let acked = acked.clone();
                consumers.push(tokio::spawn(async move {
                    let worker = format!("c{w}");
                    while acked.load(Ordering::Relaxed) < n {
                        let got = e
                            .job_claim(JobClaimParams::new("bench", worker.clone(), 128))
                            .await?;
                        if got.is_empty() {
                            tokio::task::yield_now().await;
                            continue;
                        }
                        let k = got.len();
                        e.job_ack(got.iter().map(|j| j.claim()).collect::<Vec<_>>())
                            .await?;
                        acked.fetch_add(k, Ordering::Relaxed);
                    }
                    Ok::<_, alkstore::Error>(())
                }));
            }
            producer.await.map_err(join_err)??;
            for c in consumers {
                c.await.map_err(join_err)??;
            }
            check(acked.load(Ordering::Relaxed), n)?;
        }
        "insert_50k" => {
            // Bulk insert as the peers' bulk APIs do it: statements of
            // INSERT_BATCH jobs from INSERT_TASKS concurrent producers.
            n = scaled(50_000, scale);
            let batch: usize = env_or("ALK_BENCH_BATCH", INSERT_BATCH);
            let tasks_n: usize = env_or("ALK_BENCH_TASKS", INSERT_TASKS);
            let chunks: Vec<Vec<NewJob>> = jobs(0..n).chunks(batch).map(|c| c.to_vec()).collect();
            let queue = Arc::new(std::sync::Mutex::new(chunks));
            (start, before) = (Instant::now(), writer_counts(e));
            let mut tasks = Vec::new();
            for _ in 0..tasks_n {
                let e = e.clone();
                let queue = queue.clone();
                tasks.push(tokio::spawn(async move {
                    loop {
                        let next = queue.lock().ok().and_then(|mut q| q.pop());
                        let Some(chunk) = next else {
                            return Ok::<_, alkstore::Error>(());
                        };
                        e.job_enqueue(chunk).await?;
                    }
                }));
            }
            for t in tasks {
                t.await.map_err(join_err)??;
            }
        }
        "work_50k" => {
            n = scaled(50_000, scale);
            fill(e, n).await?;
            (start, before) = (Instant::now(), writer_counts(e));
            // Claimers and claim size as the peers' high-throughput settings
            // have it (pg-boss: batches of 500; graphile-worker: a local queue).
            let workers: usize = env_or("ALK_BENCH_WORKERS", 4);
            let batch: u32 = env_or("ALK_BENCH_CLAIM", 500);
            let mut tasks = Vec::new();
            for w in 0..workers {
                tasks.push(tokio::spawn(drain(e.clone(), format!("w{w}"), batch)));
            }
            let mut done = 0;
            for t in tasks {
                done += t.await.map_err(join_err)??;
            }
            check(done, n)?;
        }
        other => {
            return Err(alkstore::Error::invalid(
                "scenario",
                format!("unknown {other:?}; known: {}", SCENARIOS.join(", ")),
            ))
        }
    }
    let secs = start.elapsed().as_secs_f64();
    Ok((n, secs, writer_work_since(e, before)))
}

/// A tuning knob from the environment, for exploring settings.
pub(crate) fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub(crate) fn check(done: usize, n: usize) -> Result<()> {
    if done != n {
        return Err(alkstore::Error::database(
            "bench",
            format!("processed {done} jobs, expected {n}"),
        ));
    }
    Ok(())
}

pub(crate) fn join_err(e: tokio::task::JoinError) -> alkstore::Error {
    alkstore::Error::database("bench task", e.to_string())
}

/// The scenarios asked for (all of `known` when none), each checked.
pub(crate) fn pick_scenarios<'a>(asked: &'a [String], known: &[&'a str]) -> Result<Vec<&'a str>> {
    if asked.is_empty() {
        return Ok(known.to_vec());
    }
    asked
        .iter()
        .map(|name| {
            known.iter().copied().find(|k| k == name).ok_or_else(|| {
                alkstore::Error::invalid(
                    "scenario",
                    format!("unknown {name:?}; known: {}", known.join(", ")),
                )
            })
        })
        .collect()
}

/// Run `alk bench queue`.
pub(crate) async fn run_queue(args: QueueBenchArgs) -> Result<()> {
    let (target, wanted) = args.resolve(SCENARIOS)?;
    println!(
        "# alkstore {} engine={}",
        env!("CARGO_PKG_VERSION"),
        target.name()
    );
    for (i, name) in wanted.iter().enumerate() {
        let fresh = target.fresh(i).await?;
        let (n, secs, writer) = scenario(name, &fresh.engine, args.scale).await?;
        println!(
            "bench peer=alkstore engine={} scenario={name} jobs={n} secs={secs:.3} jobs_per_s={:.0}{writer}",
            target.name(),
            n as f64 / secs
        );
        fresh.cleanup().await?;
    }
    Ok(())
}

/// Arguments of `alk bench worker`.
#[derive(Debug, Args)]
pub(crate) struct WorkerBenchArgs {
    /// sqlite://… (fresh temporary files) or postgres://… (fresh schemas).
    #[arg(long = "on", default_value = "sqlite://bench.db")]
    on: String,
    /// Wake-latency samples.
    #[arg(long, default_value_t = 500)]
    samples: usize,
    /// Jobs for the throughput scenarios.
    #[arg(long, default_value_t = 50_000)]
    jobs: usize,
    /// Run only these scenarios (repeatable), in the usual order: any of
    /// wake_latency, wake_latency_xproc, raw_claim_ack, worker_50k,
    /// worker_retry_once, worker_tx (a fifth of `--jobs`, `--rounds`
    /// rounds). `worker_vs_raw` is printed when both of its throughputs
    /// ran.
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// Rounds of raw_claim_ack and worker_50k, alternating: each round is
    /// printed (`scenario=worker_50k.round2`), then the medians under the
    /// scenarios' own names, and worker_vs_raw as the median of the rounds'
    /// ratios (a pair of runs side by side shares the machine's mood).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    // p is in [0, 1]: the index is in range (and clamped below anyway).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The worker options the runtime throughput scenarios share (overridable
/// from the environment for experiments).
pub(crate) fn bench_worker_opts() -> alkstore::WorkerOpts {
    alkstore::WorkerOpts {
        max_claim: env_or("ALK_BENCH_CLAIM", 500),
        claimers: env_or("ALK_BENCH_CLAIMERS", 2),
        ..alkstore::WorkerOpts::default()
    }
}

/// `wake_latency_xproc`: an idle worker in this process, jobs enqueued one
/// at a time by another `alk` process; latency from the enqueuer's commit
/// (and call) to the handler's start, by this host's clock.
async fn wake_across_processes(target: &Target, samples: usize) -> Result<()> {
    use alkstore::{JobCtx, Worker};
    use std::collections::HashMap;
    use std::io::BufRead;
    let fresh = target.fresh(103).await?;
    let store = Store::from_engine(fresh.engine.clone());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(i64, i64)>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(
        Worker::new(store.clone())
            .queue_raw("wake_x", move |job: JobCtx<Vec<u8>>| {
                let _ = tx.send((job.id(), crate::testworker::unix_us()));
                async { Ok(()) }
            })
            .run_until(async move {
                let _ = stop_rx.await;
            }),
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let exe = std::env::current_exe().map_err(|e| alkstore::Error::database("bench", e))?;
    let url = fresh.url.clone();
    let lines = tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new(exe)
            .args(["--db", &url, "test-enqueue-timed", "--queue", "wake_x"])
            .args(["--count", &samples.to_string()])
            .env_remove("DATABASE_URL")
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| alkstore::Error::database("bench: run the enqueuer", e))?;
        if !out.status.success() {
            return Err(alkstore::Error::database("bench", "the enqueuer failed"));
        }
        Ok(out
            .stdout
            .lines()
            .map_while(std::result::Result::ok)
            .collect::<Vec<String>>())
    })
    .await
    .map_err(join_err)??;
    let mut started: HashMap<i64, i64> = HashMap::new();
    while started.len() < lines.len() {
        let got = tokio::time::timeout(std::time::Duration::from_secs(30), rx.recv()).await;
        let Ok(Some((id, at))) = got else {
            return Err(alkstore::Error::database(
                "bench",
                "jobs from the other process never ran",
            ));
        };
        started.insert(id, at);
    }
    let _ = stop_tx.send(());
    worker.await.map_err(join_err)??;
    let (mut from_commit, mut from_call) = (Vec::new(), Vec::new());
    for line in &lines {
        let f: Vec<i64> = line.split(' ').filter_map(|x| x.parse().ok()).collect();
        if let [id, call, commit] = f[..] {
            if let Some(at) = started.get(&id) {
                from_commit.push((at - commit) as f64 / 1e3);
                from_call.push((at - call) as f64 / 1e3);
            }
        }
    }
    from_commit.sort_by(f64::total_cmp);
    from_call.sort_by(f64::total_cmp);
    println!(
        "bench peer=alkstore engine={} scenario=wake_latency_xproc samples={} p50_ms_from_commit={:.3} p99_ms_from_commit={:.3} p50_ms_from_call={:.3} p99_ms_from_call={:.3}",
        target.name(),
        from_commit.len(),
        percentile(&from_commit, 0.5),
        percentile(&from_commit, 0.99),
        percentile(&from_call, 0.5),
        percentile(&from_call, 0.99),
    );
    fresh.cleanup().await
}

/// Run `alk bench worker`.
pub(crate) async fn run_worker(args: WorkerBenchArgs) -> Result<()> {
    if args.samples == 0 || args.jobs == 0 || args.rounds == 0 {
        return Err(alkstore::Error::invalid(
            "samples/jobs/rounds",
            "must be at least 1",
        ));
    }
    let target = Target::parse(&args.on)?;
    // In the usual order whatever the order asked: the raw baseline runs
    // before the worker figure it is compared with.
    let asked = pick_scenarios(&args.scenarios, WORKER_SCENARIOS)?;
    let scenarios = WORKER_SCENARIOS.iter().filter(|s| asked.contains(s));
    println!(
        "# alkstore {} engine={}",
        env!("CARGO_PKG_VERSION"),
        target.name()
    );
    let (raw, worker) = (
        asked.contains(&"raw_claim_ack"),
        asked.contains(&"worker_50k"),
    );
    for name in scenarios {
        match *name {
            "wake_latency" => wake_in_process(&target, args.samples).await?,
            "wake_latency_xproc" => wake_across_processes(&target, args.samples).await?,
            // Both in one place: their rounds alternate.
            "raw_claim_ack" => {
                throughput_rounds(&target, args.jobs, args.rounds, raw, worker).await?
            }
            "worker_50k" if !raw => {
                throughput_rounds(&target, args.jobs, args.rounds, false, true).await?
            }
            "worker_retry_once" => worker_retry_once(&target, args.jobs).await?,
            "worker_tx" => {
                crate::bench_tx::worker_tx(&target, (args.jobs / 5).max(1), args.rounds).await?
            }
            _ => {} // pick_scenarios admits only the names above
        }
    }
    Ok(())
}

/// `raw_claim_ack` and `worker_50k` (those asked) in `rounds` alternating
/// rounds; with more than one, their medians and the median of the rounds'
/// ratios (`worker_vs_raw`).
async fn throughput_rounds(
    target: &Target,
    jobs: usize,
    rounds: usize,
    raw: bool,
    worker: bool,
) -> Result<()> {
    let (mut raws, mut workers, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=rounds {
        let label = |name: &str| {
            if rounds == 1 {
                name.to_string()
            } else {
                format!("{name}.round{round}")
            }
        };
        let r = match raw {
            true => Some(raw_claim_ack(target, jobs, &label("raw_claim_ack")).await?),
            false => None,
        };
        let w = match worker {
            true => Some(worker_throughput(target, jobs, &label("worker_50k")).await?),
            false => None,
        };
        raws.extend(r);
        workers.extend(w);
        if let (Some(r), Some(w)) = (r, w) {
            ratios.push(100.0 * w / r);
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        percentile(&v, 0.5)
    };
    let (raw_median, worker_median) = (median(raws.clone()), median(workers.clone()));
    let engine = target.name();
    if rounds > 1 {
        for (name, values, m) in [
            ("raw_claim_ack", &raws, raw_median),
            ("worker_50k", &workers, worker_median),
        ] {
            if !values.is_empty() {
                println!(
                    "bench peer=alkstore engine={engine} scenario={name} jobs={jobs} rounds={rounds} jobs_per_s={m:.0} (median)"
                );
            }
        }
    }
    if !ratios.is_empty() {
        println!(
            "bench peer=alkstore engine={engine} scenario=worker_vs_raw worker_jobs_per_s={worker_median:.0} raw_jobs_per_s={raw_median:.0} percent={:.1} rounds={rounds}",
            median(ratios)
        );
    }
    Ok(())
}

/// The scenarios of `alk bench worker`, in the order they run.
const WORKER_SCENARIOS: &[&str] = &[
    "wake_latency",
    "wake_latency_xproc",
    "raw_claim_ack",
    "worker_50k",
    "worker_retry_once",
    "worker_tx",
];

/// `wake_latency`: an idle worker, one job at a time, enqueued in this
/// process.
async fn wake_in_process(target: &Target, samples: usize) -> Result<()> {
    use alkstore::{JobCtx, Worker};
    let fresh = target.fresh(100).await?;
    let store = Store::from_engine(fresh.engine.clone());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(
        Worker::new(store.clone())
            .queue_raw("wake", move |_job: JobCtx<Vec<u8>>| {
                let started = Instant::now();
                let _ = tx.send(started);
                async { Ok(()) }
            })
            .run_until(async move {
                let _ = stop_rx.await;
            }),
    );
    let q = store.queue("wake");
    // Let the worker reach its idle wait (and PostgreSQL's LISTEN connect).
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let (mut from_commit, mut from_call) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        let t0 = Instant::now();
        q.enqueue_bytes(b"{}".to_vec(), alkstore::EnqueueOpts::default())
            .await?;
        let t1 = Instant::now();
        let started = rx
            .recv()
            .await
            .ok_or_else(|| alkstore::Error::database("bench", "worker stopped"))?;
        from_call.push(started.saturating_duration_since(t0).as_secs_f64() * 1e3);
        from_commit.push(started.saturating_duration_since(t1).as_secs_f64() * 1e3);
        // Let the worker finish the ack and go idle again.
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    let _ = stop_tx.send(());
    worker.await.map_err(join_err)??;
    from_commit.sort_by(f64::total_cmp);
    from_call.sort_by(f64::total_cmp);
    println!(
        "bench peer=alkstore engine={} scenario=wake_latency samples={} p50_ms_from_commit={:.3} p99_ms_from_commit={:.3} p50_ms_from_call={:.3} p99_ms_from_call={:.3}",
        target.name(),
        samples,
        percentile(&from_commit, 0.5),
        percentile(&from_commit, 0.99),
        percentile(&from_call, 0.5),
        percentile(&from_call, 0.99),
    );
    fresh.cleanup().await
}

/// `raw_claim_ack`: the engine alone, one task claiming as many jobs at a
/// time as the runtime does and acking each claim in one call: the ceiling
/// `worker_50k` is measured against (same queue size, same run).
async fn raw_claim_ack(target: &Target, jobs: usize, label: &str) -> Result<f64> {
    let fresh = target.fresh(104).await?;
    fill(&fresh.engine, jobs).await?;
    let commits = writer_counts(&fresh.engine);
    let start = Instant::now();
    let done = drain(
        fresh.engine.clone(),
        "raw".into(),
        bench_worker_opts().max_claim,
    )
    .await?;
    let secs = start.elapsed().as_secs_f64();
    check(done, jobs)?;
    let rate = jobs as f64 / secs;
    println!(
        "bench peer=alkstore engine={} scenario={label} jobs={jobs} secs={secs:.3} jobs_per_s={rate:.0}{}",
        target.name(),
        writer_work_since(&fresh.engine, commits),
    );
    fresh.cleanup().await?;
    Ok(rate)
}

/// `worker_50k`: throughput through the runtime, no-op handlers over a full
/// queue; returns jobs/s.
async fn worker_throughput(target: &Target, jobs: usize, label: &str) -> Result<f64> {
    use alkstore::{JobCtx, Worker};
    // Throughput through the runtime: no-op handlers over a full queue.
    let fresh = target.fresh(101).await?;
    fill(&fresh.engine, jobs).await?;
    let store = Store::from_engine(fresh.engine.clone());
    let done = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(tokio::sync::Notify::new());
    let (d, n, total) = (done.clone(), notify.clone(), jobs);
    let commits = writer_counts(&fresh.engine);
    let start = Instant::now();
    let report = Worker::new(store)
        .queue_raw("bench", move |_job: JobCtx<Vec<u8>>| {
            if d.fetch_add(1, Ordering::Relaxed) + 1 == total {
                n.notify_one();
            }
            async { Ok(()) }
        })
        .concurrency("bench", env_or("ALK_BENCH_CONCURRENCY", 1_000))
        .opts(bench_worker_opts())
        .run_until(async move {
            while done.load(Ordering::Relaxed) < total {
                notify.notified().await;
            }
        })
        .await?;
    let secs = start.elapsed().as_secs_f64();
    check(
        usize::try_from(report.completed).unwrap_or(usize::MAX),
        jobs,
    )?;
    println!(
        "bench peer=alkstore engine={} scenario={label} jobs={} secs={secs:.3} jobs_per_s={:.0} claims={}{}",
        target.name(),
        jobs,
        jobs as f64 / secs,
        report.claims,
        writer_work_since(&fresh.engine, commits),
    );
    fresh.cleanup().await?;
    Ok(jobs as f64 / secs)
}

/// `worker_retry_once`: every job fails its first attempt (retried at once),
/// then succeeds, so half the outcomes are retries.
async fn worker_retry_once(target: &Target, jobs: usize) -> Result<()> {
    use alkstore::{JobCtx, Worker};
    let jobs = (jobs / 5).max(1);
    let fresh = target.fresh(102).await?;
    fill(&fresh.engine, jobs).await?;
    let store = Store::from_engine(fresh.engine.clone());
    let done = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(tokio::sync::Notify::new());
    let (d, n) = (done.clone(), notify.clone());
    let start = Instant::now();
    let report = Worker::new(store)
        .queue_raw("bench", move |job: JobCtx<Vec<u8>>| {
            let first = job.attempt() == 1;
            if !first && d.fetch_add(1, Ordering::Relaxed) + 1 == jobs {
                n.notify_one();
            }
            async move {
                if first {
                    return Err(alkstore::JobError::retry_after(
                        "first attempt fails",
                        std::time::Duration::ZERO,
                    ));
                }
                Ok(())
            }
        })
        .concurrency("bench", env_or("ALK_BENCH_CONCURRENCY", 1_000))
        .opts(bench_worker_opts())
        .run_until(async move {
            while done.load(Ordering::Relaxed) < jobs {
                notify.notified().await;
            }
        })
        .await?;
    let secs = start.elapsed().as_secs_f64();
    check(
        usize::try_from(report.completed).unwrap_or(usize::MAX),
        jobs,
    )?;
    println!(
        "bench peer=alkstore engine={} scenario=worker_retry_once jobs={jobs} secs={secs:.3} jobs_per_s={:.0} attempts_per_s={:.0}",
        target.name(),
        jobs as f64 / secs,
        (2 * jobs) as f64 / secs
    );
    fresh.cleanup().await?;
    Ok(())
}
