//! The horizon curve of `alk bench scale`: a steady rate of jobs while a
//! transaction elsewhere holds the xmin horizon, so that no dead row of
//! the job table can be removed for as long as it stays open.

use alkstore::postgres::tokio_postgres::{self, NoTls};
use alkstore::Writes as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alkstore::{queue::NewJob, AnyEngine, Error, JobCtx, Result, Store, Worker};

use super::{now_ms, record_latency, ScaleArgs};
use crate::bench::support::{job_table_sizes, join_err, percentile, Target};

fn db(what: &'static str) -> impl Fn(tokio_postgres::Error) -> Error {
    move |e| Error::database(what, e.to_string())
}

/// Run the horizon curve on a fresh store of `target` (PostgreSQL only).
pub(super) async fn run(target: &Target, n: usize, args: &ScaleArgs) -> Result<()> {
    let Target::Postgres { conninfo, .. } = target else {
        return Err(Error::invalid(
            "--curve horizon",
            "needs PostgreSQL (--on postgres://…)",
        ));
    };
    let fresh = target.fresh(n).await?;
    let AnyEngine::Postgres(pg) = &fresh.engine else {
        return Err(Error::invalid("--curve horizon", "needs PostgreSQL"));
    };
    let pin_url = if args.pin_in == "other" {
        other_database(conninfo).await?
    } else {
        conninfo.clone()
    };
    let latencies = Arc::new(Mutex::new(Vec::<f64>::new()));
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let seen = latencies.clone();
    let mut rx = stop_rx.clone();
    let worker = tokio::spawn(
        Worker::new(Store::from_engine(fresh.engine.clone()))
            .queue_raw("steady", move |job: JobCtx<Vec<u8>>| {
                record_latency(&seen, &job);
                async { Ok(()) }
            })
            .concurrency("steady", 64)
            .run_until(async move {
                let _ = rx.wait_for(|s| *s).await;
            }),
    );
    let refused = Arc::new(AtomicU64::new(0));
    let producer = {
        let (e, rate, mut stop, refused) =
            (fresh.engine.clone(), args.rate, stop_rx, refused.clone());
        tokio::spawn(async move {
            // A batch every 10 ms: rate / 100 jobs, the remainder spread.
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            let mut owed = 0.0_f64;
            #[allow(clippy::cast_precision_loss)]
            let per_tick = rate as f64 / 100.0;
            while !*stop.borrow() {
                tokio::select! {
                    _ = stop.changed() => {}
                    _ = tick.tick() => {
                        owed += per_tick;
                        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                        let n = owed.floor() as usize;
                        owed -= n as f64;
                        if n > 0 {
                            let sent = format!("{:.3}", now_ms());
                            let jobs: Vec<NewJob> = (0..n)
                                .map(|_| NewJob::new("steady", sent.clone().into_bytes()))
                                .collect();
                            // A server restart fails some enqueues: the
                            // load goes on, and the line says how many.
                            if e.job_enqueue(jobs).await.is_err() {
                                refused.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
            }
            Ok::<(), Error>(())
        })
    };
    println!(
        "# horizon: {} jobs/s for {} s; a transaction in the {} database holds the horizon from {} s for {} s",
        args.rate, args.horizon_secs, args.pin_in, args.pin_at, args.pin_secs
    );
    let tick = Duration::from_secs(args.tick_secs);
    let started = Instant::now();
    let mut pin: Option<tokio_postgres::Client> = None;
    let mut pinned_once = false;
    let mut done_before = 0usize;
    while started.elapsed() < Duration::from_secs(args.horizon_secs) {
        tokio::time::sleep(tick).await;
        let t = started.elapsed().as_secs();
        if !pinned_once && t >= args.pin_at {
            pin = Some(hold_horizon(&pin_url).await?);
            pinned_once = true;
        }
        if pin.is_some() && t >= args.pin_at + args.pin_secs {
            if let Some(client) = pin.take() {
                client
                    .batch_execute("ROLLBACK")
                    .await
                    .map_err(db("unpin"))?;
            }
        }
        let mut l = latencies
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default();
        l.sort_by(f64::total_cmp);
        let done = l.len();
        done_before += done;
        // Through a server restart the figures are missing (-1), not fatal.
        let dead = dead_tuples(pg).await.unwrap_or(-1);
        let (table, index) = job_table_sizes(&fresh.engine).await.unwrap_or((-1, -1));
        #[allow(clippy::cast_precision_loss)]
        let rate = done as f64 / tick.as_secs_f64();
        let (p50, p99) = if l.is_empty() {
            (f64::NAN, f64::NAN)
        } else {
            (percentile(&l, 0.5), percentile(&l, 0.99))
        };
        println!(
            "bench peer=alkstore engine=postgres scenario=scale curve=horizon x={t} pinned={} \
             jobs_per_s={rate:.0} p50_ms={p50:.2} p99_ms={p99:.2} dead_tuples={dead} \
             table_bytes={table} index_bytes={index} jobs={done_before} \
             failed_enqueues={}",
            u8::from(pin.is_some()),
            refused.load(Ordering::Relaxed),
        );
    }
    if let Some(client) = pin.take() {
        client
            .batch_execute("ROLLBACK")
            .await
            .map_err(db("unpin"))?;
    }
    let _ = stop.send(true);
    producer.await.map_err(join_err)??;
    worker.await.map_err(join_err)??;
    fresh.cleanup().await
}

/// The job table's dead tuples, as the statistics count them.
async fn dead_tuples(pg: &alkstore::postgres::PgEngine) -> Result<i64> {
    let client = pg.client().await?;
    Ok(client
        .query_one(
            "SELECT COALESCE(n_dead_tup, 0) FROM pg_stat_user_tables \
             WHERE relid = format('%I.job', $1::text)::regclass",
            &[&pg.schema()],
        )
        .await
        .map_err(db("dead tuples"))?
        .get(0))
}

/// A connection to `url` inside a transaction that has an id: it holds
/// the xmin horizon of every database on the server until it ends.
async fn hold_horizon(url: &str) -> Result<tokio_postgres::Client> {
    let (client, conn) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(db("pin connect"))?;
    tokio::spawn(conn);
    client
        .batch_execute("BEGIN; SELECT pg_current_xact_id()")
        .await
        .map_err(db("pin"))?;
    Ok(client)
}

/// The URL of database `alkstore_bench_other` on the server of
/// `conninfo`, created when missing.
async fn other_database(conninfo: &str) -> Result<String> {
    const OTHER: &str = "alkstore_bench_other";
    let (client, conn) = tokio_postgres::connect(conninfo, NoTls)
        .await
        .map_err(db("connect"))?;
    tokio::spawn(conn);
    let exists = client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&OTHER])
        .await
        .map_err(db("other database"))?
        .is_some();
    if !exists {
        if let Err(e) = client
            .batch_execute(&format!("CREATE DATABASE {OTHER}"))
            .await
        {
            // 42P04: created meanwhile by another run.
            if e.code().map(|c| c.code()) != Some("42P04") {
                return Err(db("create other database")(e));
            }
        }
    }
    let base = conninfo.split('?').next().unwrap_or(conninfo);
    let host = base.rsplit_once('/').map_or(base, |(h, _)| h);
    Ok(format!("{host}/{OTHER}"))
}
