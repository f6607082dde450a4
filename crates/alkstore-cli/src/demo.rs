//! `alk demo`: everything at once on one store, in one process. A worker
//! pool works two queues (some jobs fail once and are retried, a few die),
//! a 3-member consumer group reads an order stream, a schedule fires every
//! 5 s; a realistic load is enqueued and published at a steady rate for
//! `--duration` (a minute by default, long enough to watch the dashboard;
//! Ctrl-C stops it early) behind a progress bar while the dashboard is
//! served; then a summary of what ran. It ends by itself unless `--serve`
//! keeps the dashboard up.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use alkstore::group::{GroupEvent, GroupReport, GroupRunner};
use alkstore::schedule::{ScheduleOpts, Scheduler};
use alkstore::{queue::NewJob, Error, JobCtx, JobError, Result, Store, Worker, WorkerReport};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::watch;

/// Arguments of `alk demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Keep serving the dashboard after the load, until Ctrl-C.
    #[arg(long)]
    serve: bool,
    /// Where the dashboard listens (loopback; another free port is taken
    /// when this one is busy).
    #[arg(long, default_value = "127.0.0.1:7878")]
    listen: SocketAddr,
    /// Jobs to enqueue, spread evenly over `--duration`; as many order
    /// events are published.
    #[arg(long, default_value_t = 20_000)]
    jobs: usize,
    /// How long the load runs (Ctrl-C stops it early): `60s`, `5m`, or
    /// plain seconds.
    #[arg(long, value_name = "DURATION", default_value = "60s",
          value_parser = crate::commands::text::parse_duration)]
    duration: Duration,
}

/// The queues the demo's workers run, with their concurrency.
const QUEUES: [(&str, usize); 3] = [("emails", 64), ("thumbnails", 16), ("reports", 2)];
/// The consumer group's members.
const MEMBERS: [&str; 3] = ["billing-1", "billing-2", "billing-3"];

/// Run the demo on `db`.
pub(crate) async fn run(db: &str, args: DemoArgs) -> Result<()> {
    if args.jobs == 0 {
        return Err(Error::invalid("--jobs", "must be at least 1"));
    }
    alkstore_http::check_bind(args.listen, None)
        .map_err(|e| Error::invalid("--listen", e.to_string()))?;
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .map_err(|e| Error::database("demo: install the metrics recorder", e))?;
    let store = Store::open(db).await?;
    let listener = match tokio::net::TcpListener::bind(args.listen).await {
        Ok(l) => l,
        Err(_) => tokio::net::TcpListener::bind((args.listen.ip(), 0))
            .await
            .map_err(|e| Error::database("demo: listen", e))?,
    };
    let addr = listener
        .local_addr()
        .map_err(|e| Error::database("demo: listen", e))?;
    let app = alkstore_http::router(
        store.clone(),
        alkstore_http::ServeOptions {
            prometheus: Some(prometheus),
            store_url: Some(db.to_string()),
            ..alkstore_http::ServeOptions::default()
        },
    );
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    // Ctrl-C or SIGTERM: end the load early (and `--serve`'s wait). Polled
    // once here, so its handlers are in place before the URL is printed.
    let (interrupt_tx, interrupted) = watch::channel(false);
    let mut signal = Box::pin(alkstore::shutdown_signal());
    tokio::select! {
        biased;
        () = &mut signal => { let _ = interrupt_tx.send(true); }
        () = std::future::ready(()) => {}
    }
    tokio::spawn(async move {
        signal.await;
        let _ = interrupt_tx.send(true);
    });
    println!("alk demo on {db}");
    println!("dashboard: http://{addr}/");
    println!(
        "load: {} jobs and as many events over {} (Ctrl-C stops early)",
        args.jobs,
        humantime::format_duration(args.duration)
    );

    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let worker = tokio::spawn(workers(store.clone(), stopped()));
    // The group exists before its members start: `settle` reads its lag at
    // once, and a Ctrl-C can come before any member has run.
    store.group("billing").ensure("orders", 12).await?;
    let mut members = Vec::new();
    for name in MEMBERS {
        let runner = GroupRunner::new(store.clone(), "billing", "orders")
            .buckets(12)
            .worker_id(name);
        let until = stopped();
        members.push(tokio::spawn(async move {
            runner
                .handler_raw(move |e: GroupEvent<Vec<u8>>| {
                    let work =
                        Duration::from_micros(200 + e.offset().rem_euclid(5).unsigned_abs() * 100);
                    async move {
                        tokio::time::sleep(work).await;
                        Ok::<(), std::io::Error>(())
                    }
                })
                .run_until(until)
                .await
        }));
    }
    store
        .schedule("digest")
        .set_with(
            "@every 5s",
            "reports",
            ScheduleOpts::default().payload(br#"{"report": "digest"}"#.to_vec()),
        )
        .await?;
    let scheduler = tokio::spawn(Scheduler::new(store.clone()).run_until(stopped()));

    let started = Instant::now();
    let jobs = load(&store, args.jobs, args.duration, interrupted.clone()).await?;
    settle(&store, jobs).await?;
    let elapsed = started.elapsed();

    let _ = stop_tx.send(true);
    let report = worker.await.map_err(crate::bench::support::join_err)??;
    let mut group_reports = Vec::new();
    for m in members {
        group_reports.push(
            m.await
                .map_err(crate::bench::support::join_err)?
                .map_err(|e| Error::database("demo: consumer group", e))?,
        );
    }
    let fired = scheduler
        .await
        .map_err(crate::bench::support::join_err)??
        .fired;
    summary(&store, &report, &group_reports, fired, elapsed, jobs).await?;

    if args.serve && !*interrupted.borrow() {
        println!("serving the dashboard at http://{addr}/ until Ctrl-C");
        let mut interrupted = interrupted;
        let _ = interrupted.wait_for(|i| *i).await;
    }
    server.abort();
    Ok(())
}

/// The worker pool: emails fail once in 50 (retried after a second) and die
/// once in 500; thumbnails take a little longer; reports are the schedule's.
async fn workers(
    store: Store,
    until: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<WorkerReport> {
    let mut w = Worker::new(store);
    for (queue, concurrency) in QUEUES {
        w = w
            .queue_raw(queue, move |job: JobCtx<Vec<u8>>| {
                let (id, attempt) = (job.id(), job.attempt());
                async move {
                    let work_us = match queue {
                        "thumbnails" => 2_000 + id.rem_euclid(7).unsigned_abs() * 500,
                        _ => 300 + id.rem_euclid(5).unsigned_abs() * 200,
                    };
                    tokio::time::sleep(Duration::from_micros(work_us)).await;
                    if queue == "emails" && id % 500 == 7 {
                        return Err(JobError::fail("550 mailbox does not exist"));
                    }
                    if queue == "emails" && id % 50 == 3 && attempt == 1 {
                        return Err(JobError::retry_after(
                            "421 try again later",
                            Duration::from_secs(1),
                        ));
                    }
                    Ok(())
                }
            })
            .concurrency(queue, concurrency);
    }
    w.run_until(until).await
}

fn bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:<12} [{bar:40}] {pos}/{len} {per_sec} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

/// How often the load enqueues and publishes what has come due.
const LOAD_TICK: Duration = Duration::from_millis(100);

/// Enqueue `jobs` jobs (7 in 10 emails, the rest thumbnails) and publish as
/// many orders from 200 customers, at a steady rate over `duration` (each
/// tick what has come due, in batches of at most 200, alternating), until
/// done or `interrupted`; returns how many jobs (and orders) went in.
async fn load(
    store: &Store,
    jobs: usize,
    duration: Duration,
    mut interrupted: watch::Receiver<bool>,
) -> Result<usize> {
    let bar = bar(2 * jobs as u64, "enqueue");
    let orders = store.stream("orders");
    let started = Instant::now();
    let mut tick = tokio::time::interval(LOAD_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut i = 0;
    while i < jobs {
        tokio::select! {
            _ = tick.tick() => {}
            _ = interrupted.wait_for(|i| *i) => break,
        }
        // Due by now: the share of `duration` elapsed (all once it has).
        let elapsed = started.elapsed().as_millis();
        let due = usize::try_from(jobs as u128 * elapsed / duration.as_millis().max(1))
            .map_or(jobs, |due| due.min(jobs));
        while i < due {
            let end = (i + 200).min(due);
            let batch: Vec<NewJob> = (i..end)
                .map(|n| {
                    let queue = if n % 10 < 7 { "emails" } else { "thumbnails" };
                    let payload = format!(r#"{{"n": {n}, "to": "user{}@example.com"}}"#, n % 1000);
                    NewJob::new(queue, payload.into_bytes())
                })
                .collect();
            store.jobs().enqueue(batch).await?;
            orders
                .publish_batch_raw((i..end).map(|n| {
                    (
                        Some(format!("customer-{}", n % 200)),
                        format!(r#"{{"order": {n}, "amount": {}}}"#, 10 + n % 90).into_bytes(),
                    )
                }))
                .await?;
            bar.inc(2 * (end - i) as u64);
            i = end;
        }
    }
    bar.finish();
    Ok(i)
}

/// Wait until the jobs and the group's lag are worked off.
async fn settle(store: &Store, jobs: usize) -> Result<()> {
    let bar = bar(2 * jobs as u64, "process");
    loop {
        let mut left = 0;
        for (queue, _) in QUEUES.iter().take(2) {
            left += store.queue(*queue).stats().await?.live();
        }
        let lag: u64 = store
            .group("billing")
            .status()
            .await?
            .buckets
            .iter()
            .map(|b| b.lag)
            .sum();
        bar.set_position((2 * jobs as u64).saturating_sub(left + lag));
        if left == 0 && lag == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bar.finish();
    Ok(())
}

async fn summary(
    store: &Store,
    report: &WorkerReport,
    groups: &[GroupReport],
    fired: u64,
    elapsed: Duration,
    jobs: usize,
) -> Result<()> {
    let secs = elapsed.as_secs_f64().max(0.001);
    println!();
    println!(
        "jobs:     {} completed, {} retried, {} dead ({:.0} jobs/s)",
        report.completed,
        report.retried,
        report.dead,
        report.completed as f64 / secs
    );
    let handled: Vec<String> = MEMBERS
        .iter()
        .zip(groups)
        .map(|(m, g)| format!("{m} {}", g.handled))
        .collect();
    println!(
        "events:   {jobs} orders consumed by group billing ({})",
        handled.join(", ")
    );
    println!("schedule: digest fired {fired} times (@every 5s)");
    let dead = store
        .jobs()
        .dead_count(alkstore::queue::DeadSelect::all())
        .await?;
    println!("dead letters waiting: {dead} (requeue or purge them on the dashboard)");
    println!("took {:.1} s", secs);
    Ok(())
}
