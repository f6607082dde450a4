//! `alk bench queue`: throughput scenarios, each on a fresh database (a new
//! SQLite file, or a new PostgreSQL schema that is dropped afterwards).
//!
//! One line per scenario, machine-readable:
//! `bench peer=alkstore engine=sqlite scenario=NAME jobs=N secs=S jobs_per_s=R`.

use alkstore::Writes as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use alkstore::{
    prelude::QueueEngine,
    queue::{JobClaimParams, NewJob},
    AnyEngine, Result,
};

use super::support::{
    check, drain, enqueue_in_batches, env_or, fill, jobs, join_err, payload, scaled, writer_counts,
    writer_work_since, ScenarioArgs,
};

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
