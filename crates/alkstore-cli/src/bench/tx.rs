//! The transactional-handler scenarios: `worker_tx` (`alk bench worker`)
//! and `group_tx` (`alk bench group`). Each runs the same handler, which
//! writes one business row, two ways, on a fresh store each time:
//!
//! - `in_tx`: a transactional handler ([`Worker::queue_tx`],
//!   [`GroupRunner::handler_tx`](alkstore::group::GroupRunner::handler_tx)): the
//!   row commits with the job's ack or the bucket's checkpoint, one
//!   commit;
//! - `own_tx`: a plain handler that writes its row in a transaction of its
//!   own (`Store::begin`, commit) and then returns, for the normal ack or
//!   checkpoint: two commits.
//!
//! One line per run and variant, then the medians and their ratio:
//! `bench peer=alkstore engine=E scenario=worker_tx jobs=N in_tx_jobs_per_s=R own_tx_jobs_per_s=R speedup=X …`
//! (in-process worker, 64 handler slots, the transactional handler's jobs
//! 16 to a transaction, [`Worker::tx_batch`]; `in_tx_per_job` is the same
//! handler one job a transaction, whose one commit per job costs more than
//! the other's commit plus its share of a batched ack) and
//! `bench peer=alkstore engine=E scenario=group_tx events=N in_tx_events_per_s=R own_tx_events_per_s=R speedup=X …`
//! (one worker process, 16 buckets, a backlog of events: batches of up to
//! the group's `commit_every` events per transaction).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use alkstore::{JobCtx, Result, Store, Worker};

use super::group_workers::consume;
use super::support::{bench_worker_opts, check, env_or, fill, median, scaled, Target};
use crate::testworker::{create_business_table, insert_row};

/// The two ways the scenarios write their row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// In the handler's transaction, committed with the ack or checkpoint.
    InTx,
    /// In a transaction of its own, before a normal ack or checkpoint.
    OwnTx,
}

impl Variant {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Variant::InTx => "in_tx",
            Variant::OwnTx => "own_tx",
        }
    }
}

/// Handler slots of the `worker_tx` queue (both variants).
const WORKER_TX_CONCURRENCY: usize = 64;

/// Jobs the transactional handler runs in one transaction
/// ([`Worker::tx_batch`]).
const WORKER_TX_BATCH: usize = 16;

/// `worker_tx`: `rounds` alternating runs of the variants over `jobs`
/// jobs (`in_tx` with [`WORKER_TX_BATCH`] jobs a transaction, `in_tx` one
/// job a transaction, `own_tx`); prints each run, then the medians and the
/// speedup of `in_tx` over `own_tx`.
pub(crate) async fn worker_tx(target: &Target, jobs: usize, rounds: usize) -> Result<()> {
    let engine = target.name();
    let batch = env_or("ALK_BENCH_TX_BATCH", WORKER_TX_BATCH);
    let concurrency = env_or("ALK_BENCH_CONCURRENCY", WORKER_TX_CONCURRENCY);
    let runs = [
        ("in_tx", Variant::InTx, batch),
        ("in_tx_per_job", Variant::InTx, 1),
        ("own_tx", Variant::OwnTx, 1),
    ];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); runs.len()];
    for round in 1..=rounds {
        for ((name, variant, batch), rates) in runs.iter().zip(&mut rates) {
            let rate = worker_tx_once(target, jobs, *variant, concurrency, *batch).await?;
            println!(
                "bench peer=alkstore engine={engine} scenario=worker_tx.{name}.round{round} jobs={jobs} jobs_per_s={rate:.0}"
            );
            rates.push(rate);
        }
    }
    let [a, single, b] = [0, 1, 2].map(|i| median(rates[i].clone()));
    println!(
        "bench peer=alkstore engine={engine} scenario=worker_tx jobs={jobs} in_tx_jobs_per_s={a:.0} own_tx_jobs_per_s={b:.0} speedup={:.2} in_tx_per_job_jobs_per_s={single:.0} per_job_speedup={:.2} rounds={rounds} concurrency={concurrency} tx_batch={batch}",
        a / b,
        single / b,
    );
    Ok(())
}

/// One run of `worker_tx`: jobs per second.
async fn worker_tx_once(
    target: &Target,
    jobs: usize,
    variant: Variant,
    concurrency: usize,
    tx_batch: usize,
) -> Result<f64> {
    let fresh = target.fresh(105).await?;
    let store = Store::from_engine(fresh.engine.clone());
    let table: Arc<str> = create_business_table(&store, &fresh.url).await?.into();
    fill(&fresh.engine, jobs).await?;
    let done = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(tokio::sync::Notify::new());
    let finished = {
        let (done, notify) = (done.clone(), notify.clone());
        move || {
            if done.fetch_add(1, Ordering::Relaxed) + 1 == jobs {
                notify.notify_one();
            }
        }
    };
    let worker = Worker::new(store.clone());
    let worker = match variant {
        Variant::InTx => worker
            .queue_tx_raw("bench", move |tx, job: JobCtx<Vec<u8>>| {
                let (table, finished) = (table.clone(), finished.clone());
                Box::pin(async move {
                    insert_row(tx, &table, "job", job.id(), "").await?;
                    finished();
                    Ok(())
                })
            })
            .tx_batch("bench", tx_batch),
        Variant::OwnTx => worker.queue_raw("bench", move |job: JobCtx<Vec<u8>>| {
            let (table, finished, store) = (table.clone(), finished.clone(), store.clone());
            async move {
                let mut tx = store.begin().await?;
                insert_row(&mut tx, &table, "job", job.id(), "").await?;
                tx.commit().await?;
                finished();
                Ok(())
            }
        }),
    };
    let start = Instant::now();
    let report = worker
        .concurrency("bench", concurrency)
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
    fresh.cleanup().await?;
    Ok(jobs as f64 / secs)
}

/// Events of one `group_tx` run (before `--scale`).
const GROUP_TX_EVENTS: usize = 20_000;

/// Rounds of `group_tx`, alternating the variants.
const GROUP_TX_ROUNDS: usize = 2;

/// `group_tx`: one group worker process (`alk test-group-worker`, 16
/// buckets) drains a backlog of events, its handler writing one row per
/// event, in both variants, alternating; prints each run, then the
/// medians and the speedup of `in_tx`.
pub(crate) async fn group_tx(target: &Target, scale: f64) -> Result<()> {
    let engine = target.name();
    let n = scaled(GROUP_TX_EVENTS, scale);
    let (mut in_tx, mut own_tx) = (Vec::new(), Vec::new());
    for round in 1..=GROUP_TX_ROUNDS {
        for variant in [Variant::InTx, Variant::OwnTx] {
            let fresh = target.fresh(400 + round).await?;
            let store = Store::from_engine(fresh.engine.clone());
            let table = create_business_table(&store, &fresh.url).await?;
            let flag = match variant {
                Variant::InTx => "--tx-table",
                Variant::OwnTx => "--own-tx-table",
            };
            let extra = [flag.to_string(), table];
            let secs = consume(&fresh.engine, &fresh.url, 1, n, &extra).await?;
            fresh.cleanup().await?;
            let rate = n as f64 / secs;
            println!(
                "bench peer=alkstore engine={engine} scenario=group_tx.{}.round{round} events={n} secs={secs:.3} events_per_s={rate:.0}",
                variant.name()
            );
            match variant {
                Variant::InTx => in_tx.push(rate),
                Variant::OwnTx => own_tx.push(rate),
            }
        }
    }
    let (a, b) = (median(in_tx), median(own_tx));
    println!(
        "bench peer=alkstore engine={engine} scenario=group_tx events={n} in_tx_events_per_s={a:.0} own_tx_events_per_s={b:.0} speedup={:.2} rounds={GROUP_TX_ROUNDS}",
        a / b
    );
    Ok(())
}
