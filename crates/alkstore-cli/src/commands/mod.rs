//! Command-line definitions and dispatch. Each command group has its own
//! module; `output` holds the table and JSON printing they share.

mod dead;
mod enqueue;
mod groups;
mod job;
mod locks;
pub(crate) mod output;
mod processes;
mod queues;
mod schedules;
mod streams;
pub(crate) mod text;

use alkstore::{queue::CancelOutcome, Error, Result, Store, StoreOptions};
use clap::{Parser, Subcommand};
use serde_json::json;

use crate::bench;
use output::json_text;
use text::masked_url;

/// Manage an alkstore store (SQLite file or PostgreSQL schema).
#[derive(Debug, Parser)]
#[command(name = "alk", version, about)]
pub(crate) struct Cli {
    /// Store URL: sqlite://path.db or postgres://user@host/db?schema=name.
    #[arg(
        long,
        global = true,
        env = "DATABASE_URL",
        hide_env_values = true,
        default_value = "sqlite://alkstore.db"
    )]
    db: String,
    /// Print one JSON document (an array for listings) instead of tables.
    /// Every time in it is unix seconds, a JSON number (where the store
    /// keeps milliseconds, as for locks and schedules, with a fraction:
    /// `1714564800.25`).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

impl Cli {
    /// The store URL as given (may hold a password: print it masked).
    pub(crate) fn db(&self) -> &str {
        &self.db
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create the store's tables (`enqueue` also does this on first use).
    Init,
    /// Enqueue one job.
    Enqueue(enqueue::EnqueueArgs),
    /// List live jobs (or kept completed ones with --state completed).
    ///
    /// Job ids only rise, but are not dense: on SQLite each process takes
    /// ids in blocks of 1,024, so jobs enqueued by different processes
    /// jump by up to 1,024.
    Jobs(job::ListArgs),
    /// Show one job, live, dead or completed (`alk job ID`), or release a
    /// processing one (`alk job release ID`).
    Job(job::JobArgs),
    /// Cancel a live job: a pending one moves to dead as `cancelled`, a
    /// running one is asked to stop.
    Cancel {
        /// Job id.
        id: i64,
    },
    /// Dead letters: list, requeue, purge.
    #[command(subcommand)]
    Dead(dead::DeadCommand),
    /// Event streams: list, publish, tail, offsets, stats, trim.
    #[command(subcommand)]
    Streams(streams::StreamsCommand),
    /// Consumer groups: which bucket a key goes to, list, status, dead
    /// letters, resize.
    #[command(subcommand)]
    Groups(groups::GroupsCommand),
    /// Named locks: who holds each, its fencing token and expiry.
    #[command(subcommand)]
    Locks(locks::LocksCommand),
    /// Running workers, group members, subscribers and schedulers: list,
    /// and quiet or stop one.
    #[command(subcommand)]
    Processes(processes::ProcessesCommand),
    /// Queues: pause and resume claims.
    #[command(subcommand)]
    Queues(queues::QueuesCommand),
    /// Schedules: list, add, remove, pause, resume, and run a scheduler.
    #[command(subcommand)]
    Schedules(schedules::SchedulesCommand),
    /// Counts per queue (all queues when none is named), and whether each
    /// is paused.
    ///
    /// A queue exists once it holds jobs (live, dead or kept completed),
    /// has finished one, or is paused; any other name gets a "no such
    /// queue yet" note on stderr.
    Stats {
        /// Queue name.
        queue: Option<String>,
    },
    /// Expire overdue jobs, hand back lapsed claims, prune dead letters and
    /// kept completed jobs past retention.
    Sweep,
    /// Everything at once on the default store: workers, a 3-member
    /// consumer group and a schedule under a realistic load, with the
    /// dashboard served; then a summary.
    Demo(crate::demo::DemoArgs),
    /// Work a queue by running a command per job (payload on stdin; exit 0
    /// acks, anything else retries with stderr as the error).
    ///
    /// Each command runs in a process group of its own. Past --timeout,
    /// when its job is cancelled, and at SIGTERM or Ctrl-C once
    /// --shutdown-timeout has passed, the whole group gets SIGTERM, then
    /// SIGKILL 5 s later; only once none of it is left is the job retried,
    /// dead-lettered or handed back. On stopping, the worker says how many
    /// jobs completed, were retried, died, timed out (each also counted as
    /// retried or dead) and were handed back.
    ///
    /// With --group G --stream S instead of --queue, the worker is a member
    /// of consumer group G: the command runs per event of the buckets it
    /// holds (one at a time per bucket, in order; ALK_GROUP, ALK_STREAM,
    /// ALK_BUCKET, ALK_EPOCH, ALK_EVENT_OFFSET, ALK_EVENT_KEY set), exit 0
    /// checkpoints the event, and one that keeps failing goes to the
    /// group's dead letters after --attempts runs.
    Worker(crate::exec_worker::ExecWorkerArgs),
    /// Serve the HTTP API (any language can enqueue, claim, ack, publish,
    /// read), `/openapi.json` and Prometheus `/metrics`.
    Serve(crate::serve::ServeArgs),
    /// Run benchmarks; one line of figures per scenario.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// A worker whose handler logs `id attempt` per job to a file; used by
    /// the crash tests. Stops gracefully on SIGTERM or Ctrl-C.
    #[command(name = "test-worker", hide = true)]
    TestWorker(crate::testworker::TestWorkerArgs),
    /// A consumer-group worker whose handler logs `worker bucket epoch
    /// offset key` per event to a file; used by the multi-process tests.
    /// Stops gracefully on SIGTERM or Ctrl-C.
    #[command(name = "test-group-worker", hide = true)]
    TestGroupWorker(crate::testworker::TestGroupWorkerArgs),
    /// A transactional stream subscriber whose handler writes a business
    /// row per event with the consumer's offset; used by `scripts/chaos`.
    #[command(name = "test-subscriber", hide = true)]
    TestSubscriber(crate::testworker::TestSubscriberArgs),
    /// Enqueue jobs one at a time, printing `id call_us commit_us` per job;
    /// used by the cross-process wake benchmark.
    #[command(name = "test-enqueue-timed", hide = true)]
    TestEnqueueTimed(crate::testworker::TestEnqueueTimedArgs),
    /// Enqueue many jobs with a short visibility timeout, and make the
    /// business table the transactional test workers write; used by
    /// `scripts/chaos`.
    #[command(name = "test-fill", hide = true)]
    TestFill(crate::testworker::TestFillArgs),
}

/// Run a parsed command line.
pub(crate) async fn run(cli: Cli) -> Result<()> {
    if let Command::Bench(cmd) = cli.command {
        return bench::run(cmd).await;
    }
    if let Command::Demo(args) = cli.command {
        return crate::demo::run(&cli.db, args).await;
    }
    if let Command::Worker(args) = cli.command {
        return crate::exec_worker::run(&cli.db, args).await;
    }
    if let Command::Serve(args) = cli.command {
        return crate::serve::run(&cli.db, args).await;
    }
    if let Command::TestWorker(args) = cli.command {
        return crate::testworker::run(&cli.db, args).await;
    }
    if let Command::TestGroupWorker(args) = cli.command {
        return crate::testworker::run_group(&cli.db, args).await;
    }
    if let Command::TestSubscriber(args) = cli.command {
        return crate::testworker::run_subscriber(&cli.db, args).await;
    }
    if let Command::TestEnqueueTimed(args) = cli.command {
        return crate::testworker::run_enqueue_timed(&cli.db, args).await;
    }
    if let Command::TestFill(args) = cli.command {
        return crate::testworker::run_fill(&cli.db, args).await;
    }
    let as_json = cli.json;
    if let Command::Groups(groups::GroupsCommand::Bucket { buckets, keys }) = &cli.command {
        return output::emit(groups::bucket(*buckets, keys, as_json)?.as_bytes());
    }
    if let Command::Enqueue(args) = cli.command {
        // Read and check the payload before the store is opened (or created).
        let job = enqueue::prepare(args)?;
        let store = Store::open(&cli.db).await?;
        let out = enqueue::run(&store, job, as_json).await?;
        // Wake other processes' workers before exiting (see `Store::flush`).
        store.flush().await;
        return output::emit(out.as_bytes());
    }
    if let Command::Streams(streams::StreamsCommand::Publish(args)) = cli.command {
        // Likewise: a refused event creates no store.
        let event = streams::prepare(args)?;
        let store = Store::open(&cli.db).await?;
        let out = streams::publish(&store, event, as_json).await?;
        store.flush().await;
        return output::emit(out.as_bytes());
    }
    if let Command::Schedules(schedules::SchedulesCommand::Add(args)) = cli.command {
        // Likewise: a refused spec creates no store.
        let params = schedules::prepare(args)?;
        let store = Store::open(&cli.db).await?;
        return output::emit(schedules::add(&store, params, as_json).await?.as_bytes());
    }
    // Only `init`, `enqueue`, `streams publish` and `schedules add` create a
    // store; every other command works on one that exists, and says so
    // when there is none.
    let opts = StoreOptions {
        existing_only: !matches!(cli.command, Command::Init),
        ..StoreOptions::default()
    };
    let store = Store::open_with(&cli.db, opts).await?;
    if let Command::Streams(streams::StreamsCommand::Tail(args)) = cli.command {
        return streams::tail(&store, args, as_json).await;
    }
    let jobs = store.jobs();
    let out: Vec<u8> = match cli.command {
        Command::Init => {
            let url = masked_url(&cli.db);
            if as_json {
                json_text(&json!({ "store": url }))
            } else {
                format!("store ready: {url}\n")
            }
        }
        .into_bytes(),
        Command::Jobs(a) => {
            let queue = a.queue.clone();
            let text = job::list(&jobs, a, as_json).await?;
            // Only an empty listing (`[]`, or the table's header alone) can
            // be of a queue that does not exist.
            let empty = if as_json {
                text.trim() == "[]"
            } else {
                text.lines().count() <= 1
            };
            if let (Some(q), true) = (queue, empty) {
                queues::note_if_unknown(&store, &q).await?;
            }
            text.into_bytes()
        }
        Command::Job(a) => job::run(&jobs, a, as_json).await?,
        Command::Cancel { id } => {
            let outcome = match jobs.cancel(id).await? {
                CancelOutcome::Cancelled => "cancelled",
                CancelOutcome::Requested => "requested",
                CancelOutcome::NotFound => {
                    return Err(Error::NotFound {
                        what: format!("live job {id}"),
                        detail: "it finished, died, or never existed".into(),
                    })
                }
            };
            if as_json {
                json_text(&json!({ "id": id, "outcome": outcome }))
            } else if outcome == "cancelled" {
                format!("cancelled {id}\n")
            } else {
                format!("cancel requested for running job {id}; its worker stops it\n")
            }
        }
        .into_bytes(),
        Command::Dead(cmd) => dead::run(&jobs, cmd, as_json).await?.into_bytes(),
        Command::Streams(cmd) => streams::run(&store, cmd, as_json).await?.into_bytes(),
        Command::Groups(cmd) => groups::run(&store, cmd, as_json).await?.into_bytes(),
        Command::Locks(cmd) => locks::run(&store, cmd, as_json).await?.into_bytes(),
        Command::Processes(cmd) => processes::run(&store, cmd, as_json).await?.into_bytes(),
        Command::Queues(cmd) => queues::run(&store, cmd, as_json).await?.into_bytes(),
        Command::Schedules(cmd) => schedules::run(&store, cmd, as_json).await?.into_bytes(),
        Command::Stats { queue } => {
            let paused = store.paused_queues().await?;
            let named = queue.is_some();
            let stats = match queue {
                Some(q) => vec![store.queue(q).stats().await?],
                None => {
                    // Every queue at once; a paused queue shows even while
                    // it holds nothing.
                    let mut all = store.queue_stats().await?;
                    for p in &paused {
                        if !all.iter().any(|s| &s.queue == p) {
                            all.push(store.queue(p.as_str()).stats().await?);
                        }
                    }
                    all.sort_by(|a, b| a.queue.cmp(&b.queue));
                    all
                }
            };
            if let (true, Some(s)) = (named, stats.first()) {
                queues::note_if_unknown(&store, &s.queue).await?;
            }
            if as_json {
                json_text(&output::stats_json(&stats, &paused))
            } else {
                output::stats_table(&stats, &paused)
            }
        }
        .into_bytes(),
        Command::Sweep => {
            let r = store.sweep().await?;
            if as_json {
                json_text(&output::sweep_json(&r))
            } else {
                output::sweep_line(&r)
            }
        }
        .into_bytes(),
        Command::Enqueue(_)
        | Command::Bench(_)
        | Command::Serve(_)
        | Command::Worker(_)
        | Command::Demo(_)
        | Command::TestWorker(_)
        | Command::TestGroupWorker(_)
        | Command::TestSubscriber(_)
        | Command::TestEnqueueTimed(_)
        | Command::TestFill(_) => Vec::new(),
    };
    store.flush().await;
    output::emit(&out)
}
