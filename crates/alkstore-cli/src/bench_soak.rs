//! `alk bench soak`: steady enqueue and work for N minutes on one store, to
//! show decay (dead tuples, index bloat) as it happens.
//!
//! A producer keeps about `--backlog` jobs waiting (batches of 500); a
//! worker with no-op handlers drains them. One line per minute,
//! `bench peer=alkstore engine=E scenario=soak minute=M jobs=N jobs_per_s=R table_bytes=T index_bytes=I`,
//! then `bench … scenario=soak_summary first_jobs_per_s=… last_jobs_per_s=… last_over_first=…`
//! (the job table's and its indexes' sizes on PostgreSQL; the database
//! file's size, as `table_bytes`, on SQLite).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore::{AnyEngine, EnqueueOpts, JobCtx, NewJob, QueueEngine, Result, Store, Worker};
use clap::Args;

use crate::bench::{join_err, Target};

/// Arguments of `alk bench soak`.
#[derive(Debug, Args)]
pub(crate) struct SoakArgs {
    /// sqlite://… (a fresh temporary file) or postgres://… (a fresh schema).
    #[arg(long = "on", default_value = "sqlite://bench.db")]
    on: String,
    /// How long to run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1440))]
    minutes: u64,
    /// Jobs the producer keeps waiting.
    #[arg(long, default_value_t = 10_000)]
    backlog: u64,
}

/// (job table bytes, its indexes' bytes) of the store behind `e`.
async fn sizes(e: &AnyEngine) -> Result<(i64, i64)> {
    match e {
        AnyEngine::Postgres(pg) => {
            let client = pg.client().await?;
            let row = client
                .query_one(
                    "SELECT pg_table_size(t), pg_indexes_size(t) \
                     FROM (SELECT format('%I.job', $1::text)::regclass AS t) j",
                    &[&pg.schema()],
                )
                .await
                .map_err(|e| alkstore::Error::database("bench soak sizes", e))?;
            Ok((row.get(0), row.get(1)))
        }
        AnyEngine::Sqlite(s) => {
            let file = std::fs::metadata(s.path()).map(|m| m.len()).unwrap_or(0);
            let mut wal = s.path().as_os_str().to_owned();
            wal.push("-wal");
            let wal = std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0);
            Ok((i64::try_from(file + wal).unwrap_or(i64::MAX), 0))
        }
    }
}

/// Run `alk bench soak`.
pub(crate) async fn run(args: SoakArgs) -> Result<()> {
    let target = Target::parse(&args.on)?;
    let engine = target.name();
    let fresh = target.fresh(500).await?;
    println!(
        "# alkstore {} engine={engine} soak: {} minutes, backlog {}",
        env!("CARGO_PKG_VERSION"),
        args.minutes,
        args.backlog
    );
    let store = Store::from_engine(fresh.engine.clone());
    let done = Arc::new(AtomicU64::new(0));
    let enqueued = Arc::new(AtomicU64::new(0));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let producer = {
        let (e, done, enqueued, mut stop) = (
            fresh.engine.clone(),
            done.clone(),
            enqueued.clone(),
            stop_rx.clone(),
        );
        tokio::spawn(async move {
            while !*stop.borrow() {
                let waiting = enqueued.load(Ordering::Relaxed) - done.load(Ordering::Relaxed);
                if waiting >= args.backlog {
                    tokio::select! {
                        _ = stop.changed() => {}
                        () = tokio::time::sleep(Duration::from_millis(5)) => {}
                    }
                    continue;
                }
                let batch: Vec<NewJob> = (0..500)
                    .map(|_| NewJob::new("soak", b"{}".to_vec()).with_opts(EnqueueOpts::default()))
                    .collect();
                e.job_enqueue(batch).await?;
                enqueued.fetch_add(500, Ordering::Relaxed);
            }
            Ok::<(), alkstore::Error>(())
        })
    };
    let d = done.clone();
    let mut stop_worker = stop_rx.clone();
    let worker = tokio::spawn(
        Worker::new(store)
            .queue_raw("soak", move |_job: JobCtx<Vec<u8>>| {
                d.fetch_add(1, Ordering::Relaxed);
                async { Ok(()) }
            })
            .concurrency("soak", 1_000)
            .opts(crate::bench::bench_worker_opts())
            .run_until(async move {
                let _ = stop_worker.wait_for(|s| *s).await;
            }),
    );
    let (t0, i0) = sizes(&fresh.engine).await?;
    println!(
        "bench peer=alkstore engine={engine} scenario=soak minute=0 jobs=0 jobs_per_s=0 table_bytes={t0} index_bytes={i0}"
    );
    let mut rates = Vec::new();
    let mut last = 0;
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_secs(60),
        Duration::from_secs(60),
    );
    let started = Instant::now();
    for minute in 1..=args.minutes {
        tick.tick().await;
        let now = done.load(Ordering::Relaxed);
        let rate = (now - last) as f64 / 60.0;
        last = now;
        rates.push(rate);
        let (t, i) = sizes(&fresh.engine).await?;
        println!(
            "bench peer=alkstore engine={engine} scenario=soak minute={minute} jobs={now} jobs_per_s={rate:.0} table_bytes={t} index_bytes={i}"
        );
    }
    let _ = stop_tx.send(true);
    producer.await.map_err(join_err)??;
    worker.await.map_err(join_err)??;
    let (first, last) = (
        rates.first().copied().unwrap_or(0.0),
        rates.last().copied().unwrap_or(0.0),
    );
    println!(
        "bench peer=alkstore engine={engine} scenario=soak_summary minutes={} jobs={} first_jobs_per_s={first:.0} last_jobs_per_s={last:.0} last_over_first={:.3} secs={:.0}",
        args.minutes,
        done.load(Ordering::Relaxed),
        if first > 0.0 { last / first } else { 0.0 },
        started.elapsed().as_secs_f64()
    );
    fresh.cleanup().await
}
