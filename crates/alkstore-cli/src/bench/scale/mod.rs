//! `alk bench scale`: how throughput and latency hold up as the store
//! grows, one point per line, each on a fresh store:
//!
//! - `curve=backlog`: `x` jobs waiting in one queue; a worker claims and
//!   acks them for `--secs` (no-op handlers, as many as it likes at once).
//! - `curve=queues`: the same number of jobs spread over `x` queues, one
//!   worker working all of them.
//! - `curve=processes`: `x` worker processes (`alk test-worker`, 32
//!   handlers each) on one store.
//!
//! - `curve=horizon` (PostgreSQL): a steady `--rate` of jobs for
//!   `--horizon-secs`, while from `--pin-at` for `--pin-secs` a
//!   transaction with an id stays open (`--pin-in same` database, or
//!   `other`), holding the xmin horizon. One line per tick: `t`, whether
//!   pinned, jobs/s, the jobs' enqueue-to-start p50/p99, the job table's
//!   dead tuples and sizes (`--tick-secs` apart, default 10). With the
//!   pin past the end it is a plain steady run (restart the server
//!   meanwhile to see how claims recover).
//!
//! Every line: `bench peer=alkstore engine=E scenario=scale curve=C x=N
//! jobs_per_s=R p50_ms=… p99_ms=… table_bytes=…`. The latency is from
//! enqueue to handler start of a probe job enqueued every 20 ms into a
//! queue of its own while the load runs (none on the processes curve,
//! whose handlers run in other processes). `bench/plot_scale.py` draws
//! the curves from these lines.

use alkstore::prelude::QueueAdmin as _;
use alkstore::Writes as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore::{queue::NewJob, AnyEngine, JobCtx, Result, Store, Worker};
use clap::Args;

use super::support::{job_table_sizes, join_err, percentile, Fresh, Target};

mod horizon;

/// Arguments of `alk bench scale`.
#[derive(Debug, Args)]
pub(crate) struct ScaleArgs {
    /// sqlite://… (fresh temporary files) or postgres://… (fresh schemas).
    #[arg(long = "on", default_value = "sqlite://bench.db")]
    on: String,
    /// Waiting jobs at each point of the backlog curve.
    #[arg(long, value_delimiter = ',', default_values_t = [10_000u64, 100_000, 1_000_000])]
    backlogs: Vec<u64>,
    /// Queue counts of the queues curve.
    #[arg(long, value_delimiter = ',', default_values_t = [1u64, 100, 10_000])]
    queues: Vec<u64>,
    /// Worker process counts of the processes curve.
    #[arg(long, value_delimiter = ',', default_values_t = [1u64, 4, 16, 32])]
    processes: Vec<u64>,
    /// Seconds each point is measured.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    secs: u64,
    /// Curves to run: `backlog`, `queues`, `processes`, `horizon`
    /// (repeatable; default all but `horizon`).
    #[arg(long = "curve")]
    curves: Vec<String>,
    /// The horizon curve: jobs enqueued per second.
    #[arg(long, default_value_t = 800, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    rate: u64,
    /// The horizon curve: seconds it runs.
    #[arg(long, default_value_t = 180, value_parser = clap::value_parser!(u64).range(10..=86_400))]
    horizon_secs: u64,
    /// The horizon curve: seconds in before the pin.
    #[arg(long, default_value_t = 30)]
    pin_at: u64,
    /// The horizon curve: seconds the pin holds.
    #[arg(long, default_value_t = 120)]
    pin_secs: u64,
    /// The horizon curve: where the pinning transaction runs: `same`
    /// (the store's database) or `other` (database `alkstore_bench_other`).
    #[arg(long, default_value = "same", value_parser = ["same", "other"])]
    pin_in: String,
    /// The horizon curve: seconds per line.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    tick_secs: u64,
}

const CURVES: [&str; 4] = ["backlog", "queues", "processes", "horizon"];

/// Jobs waiting on the queues and processes curves: enough that no point
/// runs dry within `secs` at the rates this machine reaches.
fn spread_backlog(secs: u64) -> u64 {
    (secs * 20_000).clamp(50_000, 2_000_000)
}

/// Run `alk bench scale`.
pub(crate) async fn run(args: ScaleArgs) -> Result<()> {
    let target = Target::parse(&args.on)?;
    let curves = if args.curves.is_empty() {
        CURVES[..3].to_vec()
    } else {
        super::support::pick_scenarios(&args.curves, &CURVES)?
    };
    let window = Duration::from_secs(args.secs);
    let mut n = 0;
    for curve in curves {
        if curve == "horizon" {
            n += 1;
            horizon::run(&target, n, &args).await?;
            continue;
        }
        let (points, backlog) = match curve {
            "backlog" => (args.backlogs.clone(), None),
            "queues" => (args.queues.clone(), Some(spread_backlog(args.secs))),
            _ => (args.processes.clone(), Some(spread_backlog(args.secs))),
        };
        for x in points {
            n += 1;
            let fresh = target.fresh(n).await?;
            let point = match curve {
                "processes" => {
                    let total = backlog.unwrap_or(x);
                    fill(&fresh.engine, total, 1).await?;
                    processes_point(&fresh, x, total, window).await?
                }
                "queues" => {
                    let total = backlog.unwrap_or(x);
                    fill(&fresh.engine, total, x).await?;
                    in_process_point(&fresh.engine, x, Load::Drain(total), window).await?
                }
                _ => {
                    fill(&fresh.engine, x, 1).await?;
                    in_process_point(&fresh.engine, 1, Load::KeepWaiting(x), window).await?
                }
            };
            let table = job_table_sizes(&fresh.engine).await?;
            println!(
                "bench peer=alkstore engine={} scenario=scale curve={curve} x={x} jobs_per_s={:.0} \
                 p50_ms={} p99_ms={} table_bytes={} index_bytes={}",
                target.name(),
                point.jobs_per_s,
                point.p50_ms.map_or("-".into(), |v| format!("{v:.2}")),
                point.p99_ms.map_or("-".into(), |v| format!("{v:.2}")),
                table.0,
                table.1,
            );
            fresh.cleanup().await?;
        }
    }
    Ok(())
}

/// What the in-process worker works through.
#[derive(Clone, Copy)]
enum Load {
    /// `x` jobs kept waiting in `q0` by a producer.
    KeepWaiting(u64),
    /// This many jobs, filled beforehand.
    Drain(u64),
}

/// A producer keeping about `x` jobs waiting in `q0` (the store holds
/// `x` when it starts): it enqueues a batch of 1000 whenever fewer wait.
fn keep_waiting(
    e: &AnyEngine,
    x: u64,
    done: Arc<AtomicU64>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<Result<()>> {
    let e = e.clone();
    tokio::spawn(async move {
        let mut enqueued = x;
        while !*stop.borrow() {
            if enqueued.saturating_sub(done.load(Ordering::Relaxed)) >= x {
                tokio::select! {
                    _ = stop.changed() => {}
                    () = tokio::time::sleep(Duration::from_millis(2)) => {}
                }
                continue;
            }
            e.job_enqueue(
                (0..1_000)
                    .map(|_| NewJob::new(queue_name(0), b"{}".to_vec()))
                    .collect::<Vec<_>>(),
            )
            .await?;
            enqueued += 1_000;
        }
        Ok(())
    })
}

/// One point's figures.
struct Point {
    jobs_per_s: f64,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
}

fn queue_name(i: u64) -> String {
    format!("q{i}")
}

/// `total` jobs spread over `queues` queues, in batches of 1000 (a batch
/// per queue at a time).
async fn fill(e: &AnyEngine, total: u64, queues: u64) -> Result<()> {
    let per_queue = total.div_ceil(queues.max(1));
    for q in 0..queues.max(1) {
        let name = queue_name(q);
        let mut left = per_queue;
        while left > 0 {
            let n = left.min(1_000);
            e.job_enqueue(
                (0..n)
                    .map(|_| NewJob::new(name.clone(), b"{}".to_vec()))
                    .collect::<Vec<_>>(),
            )
            .await?;
            left -= n;
        }
    }
    Ok(())
}

/// Push how long `job` waited, from the enqueue time (unix ms) its
/// payload carries to now, onto `into`.
fn record_latency(into: &Mutex<Vec<f64>>, job: &JobCtx<Vec<u8>>) {
    let started = now_ms();
    let sent = std::str::from_utf8(job.payload())
        .ok()
        .and_then(|s| s.parse::<f64>().ok());
    if let (Some(sent), Ok(mut l)) = (sent, into.lock()) {
        l.push(started - sent);
    }
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// A worker on queues `q0..q{queues}` and the probe queue for `window`:
/// jobs acked per second, and the probes' enqueue→start latency.
async fn in_process_point(
    e: &AnyEngine,
    queues: u64,
    load: Load,
    window: Duration,
) -> Result<Point> {
    let done = Arc::new(AtomicU64::new(0));
    let latencies = Arc::new(Mutex::new(Vec::<f64>::new()));
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    // Spread about 256 handlers over the queues, at least one each.
    let per_queue = usize::try_from((256 / queues.max(1)).max(1)).unwrap_or(1);
    let mut worker =
        Worker::new(Store::from_engine(e.clone())).opts(super::support::bench_worker_opts());
    for q in 0..queues.max(1) {
        let d = done.clone();
        let name = queue_name(q);
        worker = worker
            .queue_raw(name.clone(), move |_job: JobCtx<Vec<u8>>| {
                d.fetch_add(1, Ordering::Relaxed);
                async { Ok(()) }
            })
            .concurrency(&name, per_queue);
    }
    let seen = latencies.clone();
    worker = worker.queue_raw("probe", move |job: JobCtx<Vec<u8>>| {
        record_latency(&seen, &job);
        async { Ok(()) }
    });
    let mut rx = stop_rx.clone();
    let running = tokio::spawn(worker.run_until(async move {
        let _ = rx.wait_for(|s| *s).await;
    }));
    let prober = {
        let e = e.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            while !*stop.borrow() {
                tokio::select! {
                    _ = stop.changed() => {}
                    _ = tick.tick() => {
                        let sent = format!("{:.3}", now_ms());
                        e.job_enqueue(NewJob::new("probe", sent.into_bytes())).await?;
                    }
                }
            }
            Ok::<(), alkstore::Error>(())
        })
    };
    // On the backlog curve a producer keeps `x` jobs waiting (batches of
    // 1000), so the rate is the rate at that backlog, not a drain's.
    let topping = match load {
        Load::KeepWaiting(x) => Some(keep_waiting(e, x, done.clone(), stop_rx.clone())),
        Load::Drain(_) => None,
    };
    let total = match load {
        Load::KeepWaiting(_) => u64::MAX,
        Load::Drain(total) => total,
    };
    let jobs_per_s = rate(window, total, || {
        let done = done.clone();
        async move { Ok(done.load(Ordering::Relaxed)) }
    })
    .await?;
    if let Some(t) = topping {
        let _ = stop.send(true);
        t.await.map_err(join_err)??;
    }
    let _ = stop.send(true);
    prober.await.map_err(join_err)??;
    running.await.map_err(join_err)??;
    let mut l = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    l.sort_by(f64::total_cmp);
    Ok(Point {
        jobs_per_s,
        p50_ms: (!l.is_empty()).then(|| percentile(&l, 0.5)),
        p99_ms: (!l.is_empty()).then(|| percentile(&l, 0.99)),
    })
}

/// `processes` `alk test-worker` processes on queue `q0` for `window`:
/// jobs acked per second, from the queue's count before and after.
async fn processes_point(
    fresh: &Fresh,
    processes: u64,
    total: u64,
    window: Duration,
) -> Result<Point> {
    let exe = std::env::current_exe().map_err(|e| alkstore::Error::invalid("alk", e))?;
    let spawn = |_| {
        std::process::Command::new(&exe)
            .args(["--db", &fresh.url, "test-worker", "--queue", "q0"])
            .args(["--concurrency", "32", "--sleep-ms", "0"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| alkstore::Error::invalid("alk test-worker", e))
    };
    let mut children = (0..processes).map(spawn).collect::<Result<Vec<_>>>()?;
    let jobs_per_s = rate(window, total, || async {
        let live = fresh.engine.queue_stats("q0").await?.live();
        Ok(total.saturating_sub(live))
    })
    .await;
    for c in &mut children {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status();
    }
    for c in &mut children {
        let _ = c.wait();
    }
    Ok(Point {
        jobs_per_s: jobs_per_s?,
        p50_ms: None,
        p99_ms: None,
    })
}

/// Jobs per second from `done`, a count that only grows to `total`,
/// sampled every 50 ms: from the first sample that saw work done (so
/// start-up is not counted) until `window` later or until all `total` are
/// done, whichever comes first.
async fn rate<F, Fut>(window: Duration, total: u64, mut done: F) -> Result<f64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u64>>,
{
    let deadline = Instant::now() + window + Duration::from_secs(30);
    let (t0, d0) = loop {
        let d = done().await?;
        if d > 0 {
            break (Instant::now(), d);
        }
        if Instant::now() > deadline {
            return Ok(0.0);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut last = d0;
    while t0.elapsed() < window && last < total {
        tokio::time::sleep(Duration::from_millis(50)).await;
        last = done().await?;
    }
    #[allow(clippy::cast_precision_loss)]
    Ok((last - d0) as f64 / t0.elapsed().as_secs_f64().max(1e-3))
}
