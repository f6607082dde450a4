//! `alk bench lock` and `alk bench schedule`, each scenario on a fresh store.
//!
//! One line per scenario, machine-readable:
//! `bench peer=alkstore engine=E scenario=lock_uncontended|lock_8_contenders cycles=N attempts=A secs=S cycles_per_s=R`
//! (a cycle is an acquire and its release; with 8 contenders, the attempts
//! that found the lock held are counted in `attempts`), and
//! `bench peer=alkstore engine=E scenario=fire_latency schedules=K samples=N p50_ms=… p99_ms=… max_ms=…`
//! (how long after its boundary each job was enqueued and committed, with
//! K `@every 1s` schedules fired by one scheduler for a few seconds).

use alkstore::Writes as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore::lock::{LockAcquireParams, LockReleaseParams};
use alkstore::schedule::{ScheduleSetParams, Scheduler};
use alkstore::{prelude::LockEngine, AnyEngine, Clock, Result, Store, SystemClock};

use super::support::{join_err, percentile, scaled};

/// Arguments of `alk bench lock` and `alk bench schedule`.
pub(crate) type LockBenchArgs = super::support::ScenarioArgs;

const LOCK_SCENARIOS: &[&str] = &["lock_uncontended", "lock_8_contenders"];
const SCHEDULE_SCENARIOS: &[&str] = &["fire_latency"];

const TTL: Duration = Duration::from_secs(30);

/// One acquire and its release; whether the lock was free.
async fn cycle(e: &AnyEngine, owner: &str) -> Result<bool> {
    match e
        .lock_acquire(LockAcquireParams::new("bench", owner, TTL))
        .await?
    {
        Some(g) => {
            let _ = e
                .lock_release(LockReleaseParams::new("bench", owner, g.token))
                .await?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// `cycles` acquire+release cycles by contenders (one task per engine
/// handle) on one lock name: (attempts, seconds).
async fn locks(engines: Vec<AnyEngine>, cycles: usize) -> Result<(usize, f64)> {
    let done = Arc::new(AtomicUsize::new(0));
    let attempts = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut running = Vec::new();
    for (t, e) in engines.into_iter().enumerate() {
        let (done, attempts) = (done.clone(), attempts.clone());
        running.push(tokio::spawn(async move {
            let owner = format!("t{t}");
            while done.load(Ordering::Relaxed) < cycles {
                attempts.fetch_add(1, Ordering::Relaxed);
                if cycle(&e, &owner).await? {
                    done.fetch_add(1, Ordering::Relaxed);
                } else {
                    tokio::task::yield_now().await;
                }
            }
            Ok::<(), alkstore::Error>(())
        }));
    }
    for t in running {
        t.await.map_err(join_err)??;
    }
    Ok((
        attempts.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64(),
    ))
}

/// Run `alk bench lock`.
pub(crate) async fn run_lock(args: LockBenchArgs) -> Result<()> {
    let (target, wanted) = args.resolve(LOCK_SCENARIOS)?;
    let engine = target.name();
    println!(
        "# alkstore {} engine={engine} locks: one lock name, TTL 30 s",
        env!("CARGO_PKG_VERSION")
    );
    for (i, name) in wanted.iter().enumerate() {
        let fresh = target.fresh(400 + i).await?;
        let tasks = if *name == "lock_uncontended" { 1 } else { 8 };
        let cycles = scaled(5_000, args.scale);
        // SQLite: the contenders share the process's store (one writer, as
        // an application would). PostgreSQL: one store each, as separate
        // worker processes would have (and as the advisory-lock peer has
        // one connection each).
        let mut engines = vec![fresh.engine.clone()];
        for _ in 1..tasks {
            engines.push(match &fresh.engine {
                AnyEngine::Postgres(_) => Store::open(&fresh.url).await?.engine().clone(),
                other => other.clone(),
            });
        }
        let (attempts, secs) = locks(engines, cycles).await?;
        println!(
            "bench peer=alkstore engine={engine} scenario={name} cycles={cycles} attempts={attempts} secs={secs:.3} cycles_per_s={:.0}",
            cycles as f64 / secs
        );
        fresh.cleanup().await?;
    }
    Ok(())
}

/// Run `alk bench schedule`.
pub(crate) async fn run_schedule(args: LockBenchArgs) -> Result<()> {
    let (target, wanted) = args.resolve(SCHEDULE_SCENARIOS)?;
    let engine = target.name();
    let schedules = 20;
    let seconds = scaled(10, args.scale).max(2);
    println!(
        "# alkstore {} engine={engine} schedules: {schedules} x @every 1s for {seconds} s, one scheduler",
        env!("CARGO_PKG_VERSION")
    );
    for (i, name) in wanted.iter().enumerate() {
        let fresh = target.fresh(450 + i).await?;
        for s in 0..schedules {
            fresh
                .engine
                .schedule_set(ScheduleSetParams::new(
                    format!("s{s}"),
                    "@every 1s",
                    "ticks",
                ))
                .await?;
        }
        let store = Store::from_engine(fresh.engine.clone());
        let mut lags: Vec<f64> = Vec::new();
        Scheduler::new(store)
            .run_until_with(
                tokio::time::sleep(Duration::from_secs(u64::try_from(seconds).unwrap_or(10))),
                |f| {
                    let lag = SystemClock.now_ms() - f.boundary_ms;
                    lags.push(lag as f64);
                },
            )
            .await?;
        lags.sort_by(f64::total_cmp);
        println!(
            "bench peer=alkstore engine={engine} scenario={name} schedules={schedules} samples={} p50_ms={:.2} p99_ms={:.2} max_ms={:.2}",
            lags.len(),
            percentile(&lags, 0.50),
            percentile(&lags, 0.99),
            lags.last().copied().unwrap_or(f64::NAN)
        );
        fresh.cleanup().await?;
    }
    Ok(())
}
