//! Command-line definitions and dispatch.

use std::time::Duration;

use alkstore::{
    DeadListParams, DeadSelect, EnqueueOpts, Error, JobInfo, JobListParams, JobState, QueueEngine,
    Result, Store,
};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::bench;

/// Manage an alkstore store (SQLite file or PostgreSQL schema).
#[derive(Debug, Parser)]
#[command(name = "alk", version, about)]
pub struct Cli {
    /// Store URL: sqlite://path.db or postgres://user@host/db?schema=name.
    #[arg(
        long,
        global = true,
        env = "DATABASE_URL",
        default_value = "sqlite://alkstore.db"
    )]
    db: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create the store's tables (every command does this on first use).
    Init,
    /// Enqueue one job.
    Enqueue(EnqueueArgs),
    /// List live jobs.
    Jobs(ListArgs),
    /// Show one job, live or dead.
    Job {
        /// Job id.
        id: i64,
    },
    /// Cancel (delete) a live job.
    Cancel {
        /// Job id.
        id: i64,
    },
    /// Dead letters: list, requeue, purge.
    #[command(subcommand)]
    Dead(DeadCommand),
    /// Counts per queue (all queues when none is named).
    Stats {
        /// Queue name.
        queue: Option<String>,
    },
    /// Expire overdue jobs and prune dead letters past retention.
    Sweep,
    /// Run benchmarks; one line of figures per scenario.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// A worker whose handler logs `id attempt` per job to a file; used by
    /// the crash tests. Stops gracefully on SIGTERM or Ctrl-C.
    #[command(name = "test-worker", hide = true)]
    TestWorker(crate::testworker::TestWorkerArgs),
}

#[derive(Debug, Args)]
struct EnqueueArgs {
    /// Queue name.
    queue: String,
    /// Payload: JSON text (checked), or any text with --raw.
    payload: String,
    /// Store the payload bytes as given, without checking it is JSON.
    #[arg(long)]
    raw: bool,
    /// Higher runs first.
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    priority: i32,
    /// Seconds to wait before the job is due.
    #[arg(long)]
    delay: Option<u64>,
    /// Deduplicate on this key among live jobs of the queue.
    #[arg(long)]
    unique_key: Option<String>,
    /// Attempts before the job is dead-lettered.
    #[arg(long)]
    max_attempts: Option<u32>,
}

#[derive(Debug, Args)]
struct ListArgs {
    /// Only this queue.
    #[arg(long)]
    queue: Option<String>,
    /// Only this state.
    #[arg(long, value_enum)]
    state: Option<LiveState>,
    /// Only ids above this.
    #[arg(long)]
    after: Option<i64>,
    /// Most rows.
    #[arg(long, default_value_t = 50)]
    limit: u32,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LiveState {
    Pending,
    Processing,
}

#[derive(Debug, Subcommand)]
enum DeadCommand {
    /// List dead letters.
    List {
        /// Only this queue.
        #[arg(long)]
        queue: Option<String>,
        /// Only ids above this.
        #[arg(long)]
        after: Option<i64>,
        /// Most rows.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Move dead letters back to pending with fresh attempts.
    Requeue(DeadSelectArgs),
    /// Delete dead letters.
    Purge(DeadSelectArgs),
}

#[derive(Debug, Args)]
struct DeadSelectArgs {
    /// Only this queue.
    #[arg(long)]
    queue: Option<String>,
    /// Only these ids (repeatable).
    #[arg(long = "id")]
    ids: Vec<i64>,
    /// Required to act on every queue when neither --queue nor --id is given.
    #[arg(long)]
    all: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Queue throughput scenarios on fresh databases.
    Queue(bench::QueueBenchArgs),
    /// Worker runtime: wake latency and end-to-end throughput.
    Worker(bench::WorkerBenchArgs),
}

/// Run a parsed command line.
pub async fn run(cli: Cli) -> Result<()> {
    if let Command::Bench(BenchCommand::Queue(args)) = cli.command {
        return bench::run_queue(args).await;
    }
    if let Command::Bench(BenchCommand::Worker(args)) = cli.command {
        return bench::run_worker(args).await;
    }
    if let Command::TestWorker(args) = cli.command {
        return crate::testworker::run(&cli.db, args).await;
    }
    let store = Store::open(&cli.db).await?;
    let e = store.engine();
    match cli.command {
        Command::Init => println!("store ready: {}", alkstore::url::mask_password(&cli.db)),
        Command::Enqueue(a) => {
            let payload = if a.raw {
                a.payload.into_bytes()
            } else {
                let v: serde_json::Value = serde_json::from_str(&a.payload).map_err(|err| {
                    Error::invalid(
                        "payload",
                        format!("not JSON ({err}); pass --raw to store text as is"),
                    )
                })?;
                serde_json::to_vec(&v).map_err(|err| Error::invalid("payload", err))?
            };
            let mut opts = EnqueueOpts::default().priority(a.priority);
            if let Some(d) = a.delay {
                opts = opts.delay(Duration::from_secs(d));
            }
            if let Some(k) = a.unique_key {
                opts = opts.unique_key(k);
            }
            if let Some(m) = a.max_attempts {
                opts = opts.max_attempts(m);
            }
            let out = store.queue(a.queue).enqueue_bytes(payload, opts).await?;
            match out {
                alkstore::Enqueued::Inserted(id) => println!("enqueued {id}"),
                alkstore::Enqueued::Duplicate(id) => println!("duplicate of live job {id}"),
            }
        }
        Command::Jobs(a) => {
            let state = a.state.map(|s| match s {
                LiveState::Pending => JobState::Pending,
                LiveState::Processing => JobState::Processing,
            });
            let jobs = e
                .job_list(JobListParams {
                    queue: a.queue,
                    state,
                    after_id: a.after,
                    limit: a.limit,
                })
                .await?;
            print_jobs(&jobs);
        }
        Command::Job { id } => match e.job_get(id).await? {
            Some(j) => print_job_detail(&j),
            None => return Err(Error::invalid("job id", format!("no job {id}"))),
        },
        Command::Cancel { id } => {
            match e.job_cancel(id).await? {
                alkstore::CancelOutcome::Cancelled => println!("cancelled {id}"),
                alkstore::CancelOutcome::Requested => {
                    println!("cancel requested for running job {id}; its worker stops it")
                }
                alkstore::CancelOutcome::NotFound => {
                    return Err(Error::invalid("job id", format!("no live job {id}")))
                }
            }
        }
        Command::Dead(DeadCommand::List {
            queue,
            after,
            limit,
        }) => {
            let jobs = e
                .dead_list(DeadListParams {
                    queue,
                    after_id: after,
                    limit,
                })
                .await?;
            print_jobs(&jobs);
        }
        Command::Dead(DeadCommand::Requeue(a)) => {
            let n = e.dead_requeue(dead_select(a)?).await?;
            println!("requeued {n}");
        }
        Command::Dead(DeadCommand::Purge(a)) => {
            let n = e.dead_purge(dead_select(a)?).await?;
            println!("purged {n}");
        }
        Command::Stats { queue } => {
            let queues = match queue {
                Some(q) => vec![q],
                None => e.queue_list().await?,
            };
            println!(
                "{:<24} {:>9} {:>9} {:>10} {:>8} {:>12}",
                "queue", "ready", "scheduled", "processing", "dead", "oldest_ready"
            );
            for q in queues {
                let s = e.queue_stats(q).await?;
                let age = s
                    .oldest_ready_age_s
                    .map(|a| format!("{a}s"))
                    .unwrap_or_else(|| "-".into());
                println!(
                    "{:<24} {:>9} {:>9} {:>10} {:>8} {:>12}",
                    s.queue, s.ready, s.scheduled, s.processing, s.dead, age
                );
            }
        }
        Command::Sweep => {
            let r = e.queue_sweep().await?;
            println!(
                "expired {} exhausted {} dead_pruned {}",
                r.expired, r.exhausted, r.dead_pruned
            );
        }
        Command::Bench(_) | Command::TestWorker(_) => {}
    }
    Ok(())
}

fn dead_select(a: DeadSelectArgs) -> Result<DeadSelect> {
    if a.queue.is_none() && a.ids.is_empty() && !a.all {
        return Err(Error::invalid(
            "selection",
            "name --queue, --id, or pass --all",
        ));
    }
    Ok(DeadSelect {
        queue: a.queue,
        ids: if a.ids.is_empty() { None } else { Some(a.ids) },
        limit: None,
    })
}

fn payload_preview(p: &[u8]) -> String {
    let s = String::from_utf8_lossy(p);
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s.into_owned()
    }
}

fn print_jobs(jobs: &[JobInfo]) {
    println!(
        "{:>10} {:<16} {:<10} {:>4} {:>8} {:>12}  payload",
        "id", "queue", "state", "prio", "attempts", "run_at"
    );
    for j in jobs {
        println!(
            "{:>10} {:<16} {:<10} {:>4} {:>8} {:>12}  {}",
            j.id,
            j.queue,
            j.dead_reason.as_deref().unwrap_or(j.state.as_str()),
            j.priority,
            format!("{}/{}", j.attempts, j.max_attempts),
            j.run_at,
            payload_preview(&j.payload)
        );
    }
}

fn print_job_detail(j: &JobInfo) {
    println!("id:           {}", j.id);
    println!("queue:        {}", j.queue);
    println!("state:        {}", j.state.as_str());
    println!("priority:     {}", j.priority);
    println!("attempts:     {}/{}", j.attempts, j.max_attempts);
    println!("run_at:       {}", j.run_at);
    println!("created_at:   {}", j.created_at);
    if let Some(w) = &j.worker {
        println!("worker:       {w}");
    }
    if let Some(k) = &j.unique_key {
        println!("unique_key:   {k}");
    }
    if let Some(e) = &j.last_error {
        println!("last_error:   {e}");
    }
    if let Some(r) = &j.dead_reason {
        println!("dead_reason:  {r}");
    }
    println!("payload:      {}", payload_preview(&j.payload));
}
