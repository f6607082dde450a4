//! `alk bench worker`: the worker runtime, each scenario on a fresh store:
//! wake latency (in this process and from another), throughput through the
//! runtime beside the engine alone (`raw_claim_ack`), a retry per job, and
//! the transactional handler (`worker_tx`, in `tx.rs`).
//!
//! One line per scenario (and per round), machine-readable:
//! `bench peer=alkstore engine=E scenario=NAME jobs=N secs=S jobs_per_s=R …`,
//! and for the wake latencies
//! `bench peer=alkstore engine=E scenario=wake_latency samples=N p50_ms_from_commit=… p99_ms_from_commit=… p50_ms_from_call=… p99_ms_from_call=…`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use alkstore::{Result, Store};
use clap::Args;

use super::support::{
    bench_worker_opts, check, drain, env_or, fill, join_err, percentile, pick_scenarios,
    writer_counts, writer_work_since, Target,
};

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
                super::tx::worker_tx(&target, (args.jobs / 5).max(1), args.rounds).await?
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
        q.enqueue_bytes(b"{}".to_vec(), alkstore::queue::EnqueueOpts::default())
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
