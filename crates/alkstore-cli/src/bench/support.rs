//! What every benchmark shares: where a scenario runs ([`Target`], a fresh
//! store each time), the command-line arguments of the scenario
//! benchmarks ([`ScenarioArgs`]), filling and draining a queue, the writer's
//! counts, the worker options of the runtime scenarios, and the small
//! helpers (scaling, checking, percentiles, medians, tuning knobs). A leaf:
//! it uses no benchmark module, so each of them can use it.

use alkstore::Writes as _;
use std::time::Duration;

use alkstore::{
    prelude::QueueEngine,
    queue::{JobClaimParams, NewJob},
    AnyEngine, Result, Store, StoreUrl,
};
use clap::Args;

/// Where and what a scenario benchmark runs (`alk bench queue`, `alk bench
/// stream`).
#[derive(Debug, Args)]
pub(crate) struct ScenarioArgs {
    /// Where to run: a sqlite:// URL is ignored except for its engine (fresh
    /// temporary files are used); a postgres:// URL gets a fresh schema per
    /// scenario. Default: SQLite.
    #[arg(long = "on", default_value = "sqlite://bench.db")]
    pub(crate) on: String,
    /// Multiply every scenario's job or event count (for quick runs).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) scale: f64,
    /// Run only these scenarios (repeatable); default all.
    #[arg(long = "scenario")]
    pub(crate) scenarios: Vec<String>,
}

impl ScenarioArgs {
    /// The target, the checked scenario names, and a valid scale.
    pub(crate) fn resolve<'a>(&'a self, known: &[&'a str]) -> Result<(Target, Vec<&'a str>)> {
        if !(self.scale > 0.0 && self.scale <= 100.0) {
            return Err(alkstore::Error::invalid("scale", "must be in (0, 100]"));
        }
        Ok((
            Target::parse(&self.on)?,
            pick_scenarios(&self.scenarios, known)?,
        ))
    }
}

/// A fresh store per scenario, and how to clean it up.
pub(crate) enum Target {
    Sqlite {
        dir: tempfile::TempDir,
    },
    Postgres {
        conninfo: String,
        /// `pool_size` from `--on`, kept for every fresh store.
        pool_size: Option<usize>,
        /// The durability options of `--on` that differ from the
        /// defaults (`&relaxed_commits=false`, `&relaxed_writes=true`),
        /// kept for every fresh store: a run says which mode it measured.
        durability: String,
    },
}

pub(crate) struct Fresh {
    pub(crate) engine: AnyEngine,
    /// The store's URL, for worker processes the benchmark starts.
    pub(crate) url: String,
}

impl Fresh {
    /// Close the store and drop its PostgreSQL schema, if it made one.
    pub(crate) async fn cleanup(self) -> Result<()> {
        if let AnyEngine::Postgres(pg) = &self.engine {
            pg.drop_store().await?;
        }
        Ok(())
    }
}

/// The SQLite writer's counts so far: group commits, commands run in
/// them, time spent running them (`None` on PostgreSQL, which has no one
/// writer).
pub(crate) fn writer_counts(e: &AnyEngine) -> Option<(u64, u64, Duration)> {
    match e {
        AnyEngine::Sqlite(e) => {
            let (commits, commands) = e.commit_stats();
            Some((commits, commands, e.writer_busy()))
        }
        AnyEngine::Postgres(_) => None,
    }
}

/// The SQLite writer's work since `before` (from [`writer_counts`]) as
/// ` commits=N commands=M writer_busy_ms=T` for a scenario's line; empty on
/// PostgreSQL. Commands per commit is group commit at work; busy time
/// beside the scenario's wall time, how much the one writer was idle.
pub(crate) fn writer_work_since(e: &AnyEngine, before: Option<(u64, u64, Duration)>) -> String {
    let (Some(now), Some(before)) = (writer_counts(e), before) else {
        return String::new();
    };
    format!(
        " commits={} commands={} writer_busy_ms={:.1}",
        now.0 - before.0,
        now.1 - before.1,
        now.2.saturating_sub(before.2).as_secs_f64() * 1e3
    )
}

/// A schema name for one benchmark scenario, unique to this process and
/// call (PostgreSQL identifiers: at most 40 bytes here).
fn bench_schema() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "bench_{:x}_{nanos:x}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

impl Target {
    /// Where `alk bench --on URL` runs: fresh temporary SQLite files, or
    /// fresh schemas on the PostgreSQL server of the URL.
    pub(crate) fn parse(on: &str) -> Result<Target> {
        Ok(match StoreUrl::parse(on)? {
            StoreUrl::Sqlite { .. } => Target::Sqlite {
                dir: tempfile::tempdir()
                    .map_err(|e| alkstore::Error::database("bench temp dir", e))?,
            },
            StoreUrl::Postgres {
                conninfo,
                pool_size,
                relaxed_commits,
                relaxed_writes,
                ..
            } => {
                let mut durability = String::new();
                if !relaxed_commits {
                    durability.push_str("&relaxed_commits=false");
                }
                if relaxed_writes {
                    durability.push_str("&relaxed_writes=true");
                }
                Target::Postgres {
                    conninfo,
                    pool_size,
                    durability,
                }
            }
        })
    }

    pub(crate) async fn fresh(&self, n: usize) -> Result<Fresh> {
        match self {
            Target::Sqlite { dir } => {
                let path = dir.path().join(format!("bench-{n}.db"));
                let url = format!("sqlite://{}", path.display());
                let store = Store::open(&url).await?;
                Ok(Fresh {
                    engine: store.engine().clone(),
                    url,
                })
            }
            Target::Postgres {
                conninfo,
                pool_size,
                durability,
            } => {
                let schema = bench_schema();
                let sep = if conninfo.contains('?') { '&' } else { '?' };
                let mut url = format!("{conninfo}{sep}schema={schema}{durability}");
                if let Some(n) = pool_size {
                    url.push_str(&format!("&pool_size={n}"));
                }
                let store = Store::open(&url).await?;
                Ok(Fresh {
                    engine: store.engine().clone(),
                    url,
                })
            }
        }
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            Target::Sqlite { .. } => "sqlite",
            Target::Postgres { .. } => "postgres",
        }
    }
}

pub(crate) fn payload(i: usize) -> Vec<u8> {
    format!("{{\"n\":{i}}}").into_bytes()
}

pub(crate) fn jobs(range: std::ops::Range<usize>) -> Vec<NewJob> {
    range.map(|i| NewJob::new("bench", payload(i))).collect()
}

/// Enqueue jobs `0..n` in batches of `batch`, one batch after another.
pub(crate) async fn enqueue_in_batches(e: &AnyEngine, n: usize, batch: usize) -> Result<()> {
    let mut i = 0;
    while i < n {
        let end = (i + batch).min(n);
        e.job_enqueue(jobs(i..end)).await?;
        i = end;
    }
    Ok(())
}

/// Fill the queue before a timed drain.
pub(crate) async fn fill(e: &AnyEngine, n: usize) -> Result<()> {
    enqueue_in_batches(e, n, 5_000).await
}

/// Claim up to `batch` and ack them, until the queue is empty.
pub(crate) async fn drain(e: AnyEngine, worker: String, batch: u32) -> Result<usize> {
    let mut done = 0;
    loop {
        let got = e
            .job_claim(JobClaimParams::new("bench", worker.clone(), batch))
            .await?;
        if got.is_empty() {
            return Ok(done);
        }
        done += got.len();
        e.job_ack(got.iter().map(|j| j.claim()).collect::<Vec<_>>())
            .await?;
    }
}

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // scale is in (0, 100]
pub(crate) fn scaled(n: usize, scale: f64) -> usize {
    ((n as f64 * scale).round() as usize).max(1)
}

/// A tuning knob from the environment, for exploring settings.
pub(crate) fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub(crate) fn check(done: usize, n: usize) -> Result<()> {
    if done != n {
        return Err(alkstore::Error::database(
            "bench",
            format!("processed {done} jobs, expected {n}"),
        ));
    }
    Ok(())
}

pub(crate) fn join_err(e: tokio::task::JoinError) -> alkstore::Error {
    alkstore::Error::database("bench task", e.to_string())
}

/// The scenarios asked for (all of `known` when none), each checked.
pub(crate) fn pick_scenarios<'a>(asked: &'a [String], known: &[&'a str]) -> Result<Vec<&'a str>> {
    if asked.is_empty() {
        return Ok(known.to_vec());
    }
    asked
        .iter()
        .map(|name| {
            known.iter().copied().find(|k| k == name).ok_or_else(|| {
                alkstore::Error::invalid(
                    "scenario",
                    format!("unknown {name:?}; known: {}", known.join(", ")),
                )
            })
        })
        .collect()
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    // p is in [0, 1]: the index is in range (and clamped below anyway).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The worker options the runtime throughput scenarios share (overridable
/// from the environment for experiments).
pub(crate) fn bench_worker_opts() -> alkstore::WorkerOpts {
    alkstore::WorkerOpts {
        max_claim: env_or("ALK_BENCH_CLAIM", 500),
        claimers: env_or("ALK_BENCH_CLAIMERS", 2),
        ..alkstore::WorkerOpts::default()
    }
}

/// The median (of an even count: the mean of the middle two).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        n if n > 0 && n % 2 == 0 => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        _ => percentile(&v, 0.5),
    }
}

/// (job table bytes, its indexes' bytes) of the store behind `e`.
pub(crate) async fn job_table_sizes(e: &AnyEngine) -> Result<(i64, i64)> {
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
