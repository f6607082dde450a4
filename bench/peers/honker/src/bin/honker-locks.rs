//! honker 0.5's locks and scheduler, for comparison with `alk bench lock`
//! and `alk bench schedule` (same scenarios, same output lines).
//!
//! - lock_uncontended: one thread, 5,000 `try_lock` + `release` cycles on
//!   one name (TTL 30 s).
//! - lock_8_contenders: 8 threads sharing the `Database` (honker's one
//!   connection per process), each trying the same name until 5,000 cycles
//!   succeeded in all; failed tries counted as attempts.
//! - fire_latency: 20 `@every 1s` schedules; one loop calls `tick()` and
//!   sleeps until `soonest()` (honker's own pattern; its times are whole
//!   seconds); each fired job's lag = when `tick()` returned - its boundary.
//!
//! BENCH_SCALE scales the cycle count and the seconds of fire_latency.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use honker::{Database, ScheduledTask};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn scale() -> f64 {
    std::env::var("BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0)
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn locks(db: &Database, threads: usize, cycles: usize) -> Res<(usize, f64)> {
    let done = Arc::new(AtomicUsize::new(0));
    let attempts = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (db, done, attempts) = (db.clone(), done.clone(), attempts.clone());
            std::thread::spawn(move || -> Res<()> {
                let owner = format!("t{t}");
                while done.load(Ordering::Relaxed) < cycles {
                    attempts.fetch_add(1, Ordering::Relaxed);
                    match db.try_lock("bench", &owner, 30)? {
                        Some(lock) => {
                            lock.release()?;
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        None => std::thread::yield_now(),
                    }
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "thread panicked")??;
    }
    Ok((attempts.load(Ordering::Relaxed), t0.elapsed().as_secs_f64()))
}

fn fire_latency(db: &Database, seconds: u64) -> Res<Vec<f64>> {
    let sched = db.scheduler();
    for s in 0..20 {
        sched.add(ScheduledTask {
            name: format!("s{s}"),
            queue: "ticks".into(),
            schedule: "@every 1s".into(),
            payload: serde_json::json!({}),
            priority: 0,
            expires_s: None,
        })?;
    }
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut lags = Vec::new();
    while Instant::now() < end {
        for fire in sched.tick()? {
            lags.push((now_ms() - fire.fire_at * 1000) as f64);
        }
        let soonest_ms = sched.soonest()? * 1000;
        let wait = (soonest_ms - now_ms()).max(0) as u64;
        std::thread::sleep(Duration::from_millis(wait).min(end.saturating_duration_since(Instant::now())));
    }
    Ok(lags)
}

fn main() -> Res<()> {
    let dir = std::env::temp_dir().join(format!("honker-locks-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let cycles = ((5_000.0 * scale()).round() as usize).max(1);
    println!("# honker 0.5 locks and scheduler (one Database per process)");
    for (name, threads) in [("lock_uncontended", 1), ("lock_8_contenders", 8)] {
        let db = Database::open(dir.join(format!("{name}.db")))?;
        let (attempts, secs) = locks(&db, threads, cycles)?;
        println!(
            "bench peer=honker engine=sqlite scenario={name} cycles={cycles} attempts={attempts} secs={secs:.3} cycles_per_s={:.0}",
            cycles as f64 / secs
        );
    }
    let db = Database::open(dir.join("schedule.db"))?;
    let seconds = ((10.0 * scale()).round() as u64).max(2);
    let mut lags = fire_latency(&db, seconds)?;
    lags.sort_by(f64::total_cmp);
    let pct = |p: f64| lags.get(((lags.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN);
    println!(
        "bench peer=honker engine=sqlite scenario=fire_latency schedules=20 samples={} p50_ms={:.2} p99_ms={:.2} max_ms={:.2}",
        lags.len(),
        pct(0.5),
        pct(0.99),
        lags.last().copied().unwrap_or(f64::NAN)
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
