//! `alk bench soak`: steady enqueue and work for N minutes on one store, to
//! show decay (dead tuples, index bloat) as it happens.
//!
//! A producer keeps about `--backlog` jobs waiting (batches of 500); a
//! worker with no-op handlers drains them. One line per minute,
//! `bench peer=alkstore engine=E scenario=soak minute=M jobs=N jobs_per_s=R table_bytes=T index_bytes=I`,
//! then `bench … scenario=soak_summary first_jobs_per_s=… last_jobs_per_s=… last_over_first=…`
//! (the job table's and its indexes' sizes on PostgreSQL; the database
//! file's size, as `table_bytes`, on SQLite).
//!
//! On PostgreSQL each minute also prints the work the server did per job:
//! `buffers_per_job` (the job table's and its indexes' buffer reads, vacuums
//! included, from `pg_statio_user_tables`) and `wal_bytes_per_job` (from
//! `pg_stat_wal`), and the summary compares the last minute's with the
//! first's. Throughput follows the machine's speed, which on a shared host
//! drifts by tens of percent over minutes; these counts do not, so decay
//! from dead tuples and index bloat shows in them whatever the host does.
//!
//! And after each minute (both engines) the soak pauses, the same load runs
//! `--reference-secs` on a fresh store, and the minute's line adds
//! `fresh_jobs_per_s` and `vs_fresh` (the soak's jobs/s over the fresh
//! store's, measured a minute apart at most): the summary's
//! `vs_fresh_last_over_first` is the decay with the host's drift divided out.

use alkstore::Writes as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore::{
    queue::{EnqueueOpts, NewJob},
    AnyEngine, JobCtx, Result, Store, Worker,
};
use clap::Args;

use super::support::{job_table_sizes, join_err, Target};

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
    /// After each minute, run the same load this many seconds on a fresh
    /// store (the soak paused meanwhile) and print the soak's throughput
    /// against it (`vs_fresh`); 0: no reference.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=60))]
    reference_secs: u64,
}

/// The server's work on the store so far, on PostgreSQL: buffer reads of
/// the job table and its indexes, and WAL bytes written (by the whole
/// server: the soak is its only writer).
#[derive(Debug, Clone, Copy)]
struct ServerWork {
    buffers: i64,
    wal_bytes: i64,
}

impl ServerWork {
    /// `(buffers, wal bytes)` per job between `self` and the later `now`.
    fn per_job(self, now: ServerWork, jobs: u64) -> (f64, f64) {
        let jobs = jobs.max(1) as f64;
        (
            (now.buffers - self.buffers) as f64 / jobs,
            (now.wal_bytes - self.wal_bytes) as f64 / jobs,
        )
    }
}

/// [`ServerWork`] of the store behind `e`; `None` on SQLite.
async fn server_work(e: &AnyEngine) -> Result<Option<ServerWork>> {
    let AnyEngine::Postgres(pg) = e else {
        return Ok(None);
    };
    let client = pg.client().await?;
    // Each statement outside a transaction reads fresh statistics (backends
    // flush theirs at least once a second while busy).
    let row = client
        .query_one(
            "SELECT (COALESCE(heap_blks_hit, 0) + COALESCE(heap_blks_read, 0) \
                   + COALESCE(idx_blks_hit, 0) + COALESCE(idx_blks_read, 0))::bigint, \
               (SELECT wal_bytes FROM pg_stat_wal)::bigint \
             FROM pg_statio_user_tables WHERE relid = format('%I.job', $1::text)::regclass",
            &[&pg.schema()],
        )
        .await
        .map_err(|e| alkstore::Error::database("bench soak server work", e))?;
    Ok(Some(ServerWork {
        buffers: row.get(0),
        wal_bytes: row.get(1),
    }))
}

/// ` buffers_per_job=… wal_bytes_per_job=…` (empty on SQLite).
fn work_fields(per_job: Option<(f64, f64)>) -> String {
    per_job.map_or_else(String::new, |(b, w)| {
        format!(" buffers_per_job={b:.2} wal_bytes_per_job={w:.0}")
    })
}

/// The soak's load on one store: a producer keeping about `backlog` jobs
/// waiting in queue `soak` (batches of 500) and a Worker draining them with
/// no-op handlers.
struct Load {
    done: Arc<AtomicU64>,
    enqueued: Arc<AtomicU64>,
    /// While set, the producer enqueues nothing.
    paused: Arc<AtomicBool>,
    stop: tokio::sync::watch::Sender<bool>,
    producer: tokio::task::JoinHandle<Result<()>>,
    worker: tokio::task::JoinHandle<Result<alkstore::WorkerReport>>,
}

impl Load {
    fn start(engine: &AnyEngine, backlog: u64) -> Load {
        let done = Arc::new(AtomicU64::new(0));
        let enqueued = Arc::new(AtomicU64::new(0));
        let paused = Arc::new(AtomicBool::new(false));
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let producer = {
            let (e, done, enqueued, paused, mut stop) = (
                engine.clone(),
                done.clone(),
                enqueued.clone(),
                paused.clone(),
                stop_rx.clone(),
            );
            tokio::spawn(async move {
                while !*stop.borrow() {
                    let waiting = enqueued.load(Ordering::Relaxed) - done.load(Ordering::Relaxed);
                    if waiting >= backlog || paused.load(Ordering::Relaxed) {
                        tokio::select! {
                            _ = stop.changed() => {}
                            () = tokio::time::sleep(Duration::from_millis(5)) => {}
                        }
                        continue;
                    }
                    let batch: Vec<NewJob> = (0..500)
                        .map(|_| {
                            NewJob::new("soak", b"{}".to_vec()).with_opts(EnqueueOpts::default())
                        })
                        .collect();
                    e.job_enqueue(batch).await?;
                    enqueued.fetch_add(500, Ordering::Relaxed);
                }
                Ok::<(), alkstore::Error>(())
            })
        };
        let d = done.clone();
        let mut stop_worker = stop_rx;
        let worker = tokio::spawn(
            Worker::new(Store::from_engine(engine.clone()))
                .queue_raw("soak", move |_job: JobCtx<Vec<u8>>| {
                    d.fetch_add(1, Ordering::Relaxed);
                    async { Ok(()) }
                })
                .concurrency("soak", 1_000)
                .opts(super::support::bench_worker_opts())
                .run_until(async move {
                    let _ = stop_worker.wait_for(|s| *s).await;
                }),
        );
        Load {
            done,
            enqueued,
            paused,
            stop,
            producer,
            worker,
        }
    }

    fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Stop enqueueing and wait (up to `limit`) until the backlog is worked.
    async fn pause(&self, limit: Duration) {
        self.paused.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + limit;
        while self.enqueued.load(Ordering::Relaxed) > self.done() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn resume(&self) {
        self.paused.store(false, Ordering::Relaxed);
    }

    async fn stop(self) -> Result<()> {
        let _ = self.stop.send(true);
        self.producer.await.map_err(join_err)??;
        self.worker.await.map_err(join_err)??;
        Ok(())
    }
}

/// Jobs/s of the soak's load on a fresh store (`n` names its file on
/// SQLite), over `secs` after a second of warm-up.
async fn fresh_rate(target: &Target, n: usize, backlog: u64, secs: u64) -> Result<f64> {
    let fresh = target.fresh(n).await?;
    let load = Load::start(&fresh.engine, backlog);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (before, started) = (load.done(), Instant::now());
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let rate = (load.done() - before) as f64 / started.elapsed().as_secs_f64();
    load.stop().await?;
    fresh.cleanup().await?;
    Ok(rate)
}

/// `a / b`, or 0 when `b` is not positive.
fn over(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Run `alk bench soak`.
pub(crate) async fn run(args: SoakArgs) -> Result<()> {
    let target = Target::parse(&args.on)?;
    let engine = target.name();
    let fresh = target.fresh(500).await?;
    println!(
        "# alkstore {} engine={engine} soak: {} minutes, backlog {}, a fresh store's {} s after each minute",
        env!("CARGO_PKG_VERSION"),
        args.minutes,
        args.backlog,
        args.reference_secs
    );
    let load = Load::start(&fresh.engine, args.backlog);
    let (t0, i0) = job_table_sizes(&fresh.engine).await?;
    println!(
        "bench peer=alkstore engine={engine} scenario=soak minute=0 jobs=0 jobs_per_s=0 table_bytes={t0} index_bytes={i0}"
    );
    // Per minute: jobs/s, the server's work per job (PostgreSQL), and jobs/s
    // over a fresh store's right after (with references).
    let mut rates = Vec::new();
    let mut works = Vec::new();
    let mut references = Vec::new();
    let started = Instant::now();
    for minute in 1..=args.minutes {
        let work_before = server_work(&fresh.engine).await?;
        let (before, window) = (load.done(), Instant::now());
        tokio::time::sleep(Duration::from_secs(60)).await;
        let finished = load.done() - before;
        let rate = finished as f64 / window.elapsed().as_secs_f64();
        rates.push(rate);
        let (t, i) = job_table_sizes(&fresh.engine).await?;
        let work_now = server_work(&fresh.engine).await?;
        let per_job = work_before
            .zip(work_now)
            .map(|(before, after)| before.per_job(after, finished));
        works.push(per_job);
        // The same load on a fresh store, the soak's paused meanwhile: the
        // host's speed right now, to tell decay from drift.
        let reference = if args.reference_secs > 0 {
            load.pause(Duration::from_secs(10)).await;
            let n = 500 + usize::try_from(minute).unwrap_or(0);
            let r = fresh_rate(&target, n, args.backlog, args.reference_secs).await?;
            load.resume();
            let vs_fresh = over(rate, r);
            references.push(vs_fresh);
            format!(" fresh_jobs_per_s={r:.0} vs_fresh={vs_fresh:.3}")
        } else {
            String::new()
        };
        println!(
            "bench peer=alkstore engine={engine} scenario=soak minute={minute} jobs={} jobs_per_s={rate:.0} table_bytes={t} index_bytes={i}{}{reference}",
            load.done(),
            work_fields(per_job)
        );
    }
    let jobs = load.done();
    load.stop().await?;
    let (first, last) = (
        rates.first().copied().unwrap_or(0.0),
        rates.last().copied().unwrap_or(0.0),
    );
    // The server's work per job, last minute over first (above 1: decay).
    let work_summary = match (works.first().copied().flatten(), works.last().copied().flatten()) {
        (Some((b0, w0)), Some((b1, w1))) if b0 > 0.0 && w0 > 0.0 => format!(
            " first_buffers_per_job={b0:.2} last_buffers_per_job={b1:.2} buffers_last_over_first={:.3} \
             first_wal_bytes_per_job={w0:.0} last_wal_bytes_per_job={w1:.0} wal_last_over_first={:.3}",
            over(b1, b0),
            over(w1, w0)
        ),
        _ => String::new(),
    };
    // Throughput against the fresh store's at the same time, last over first.
    let reference_summary = match (references.first(), references.last()) {
        (Some(&a), Some(&b)) if a > 0.0 => format!(
            " first_vs_fresh={a:.3} last_vs_fresh={b:.3} vs_fresh_last_over_first={:.3}",
            over(b, a)
        ),
        _ => String::new(),
    };
    println!(
        "bench peer=alkstore engine={engine} scenario=soak_summary minutes={} jobs={jobs} first_jobs_per_s={first:.0} last_jobs_per_s={last:.0} last_over_first={:.3}{work_summary}{reference_summary} secs={:.0}",
        args.minutes,
        over(last, first),
        started.elapsed().as_secs_f64()
    );
    fresh.cleanup().await
}
