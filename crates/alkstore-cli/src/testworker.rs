//! `alk test-worker`: a real worker process for the crash tests. Each handled
//! job appends `id attempt` to a log with one `write` on an `O_APPEND` file,
//! so lines from concurrent handlers and processes never interleave. With
//! `--tx-table`, the handler is transactional instead: it inserts a business
//! row into that table inside the job's transaction, which completes the
//! job (and `alk test-group-worker` the same per event, with the
//! checkpoint).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore::{Error, JobCtx, Result, Store, Worker, WorkerOpts};
use clap::Args;

/// Arguments of `alk test-worker`.
#[derive(Debug, Args)]
pub(crate) struct TestWorkerArgs {
    /// Queue to work.
    #[arg(long)]
    queue: String,
    /// File to append `id attempt` lines to (none: no log).
    #[arg(long)]
    log: Option<std::path::PathBuf>,
    /// Transactional mode: insert `('job', id, attempt)` into this table
    /// (`kind, ref, key`; the test makes it) inside the job's transaction,
    /// which acks the job.
    #[arg(long)]
    tx_table: Option<String>,
    /// Handler concurrency.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Milliseconds each handler sleeps.
    #[arg(long, default_value_t = 1)]
    sleep_ms: u64,
    /// Milliseconds graceful shutdown waits for running handlers.
    #[arg(long, default_value_t = 5_000)]
    shutdown_timeout_ms: u64,
}

/// An `O_APPEND` log file shared by a process's handlers.
type Log = Option<Arc<Mutex<std::fs::File>>>;

fn open_log(path: Option<&std::path::Path>) -> Result<Log> {
    let Some(path) = path else {
        return Ok(None);
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::invalid("log", e))?;
    Ok(Some(Arc::new(Mutex::new(file))))
}

/// Append `line` with one `write` (nothing without a log).
fn append(log: &Log, line: &str) -> std::io::Result<()> {
    let Some(file) = log else {
        return Ok(());
    };
    file.lock()
        .map_err(|_| std::io::Error::other("log lock"))
        .and_then(|mut f| f.write_all(line.as_bytes()))
}

/// Insert the business row `(kind, reference, key)` into `table` inside
/// `tx`, with the application's own SQL on the transaction's native handle.
pub(crate) async fn insert_row(
    tx: &mut alkstore::Tx,
    table: &str,
    kind: &str,
    reference: i64,
    key: &str,
) -> Result<()> {
    let db = |e: &dyn std::fmt::Display| Error::database("business insert", e.to_string());
    if let Some(conn) = tx.sqlite() {
        let sql = format!("INSERT INTO {table} (kind, ref, key) VALUES (?1, ?2, ?3)");
        return conn
            .prepare_cached(&sql)
            .and_then(|mut s| s.execute((kind, reference, key)))
            .map(drop)
            .map_err(|e| db(&e));
    }
    if let Some(client) = tx.postgres() {
        let sql = format!("INSERT INTO {table} (kind, ref, key) VALUES ($1, $2, $3)");
        return client
            .execute(&sql, &[&kind, &reference, &key])
            .await
            .map(drop)
            .map_err(|e| db(&e));
    }
    Err(Error::database(
        "business insert",
        "the transaction has ended",
    ))
}

/// Make the business table (`id`, `kind`, `ref`, `key`) of the store at
/// `url` for the benchmarks (the crash tests make their own); its name.
pub(crate) async fn create_business_table(store: &Store, url: &str) -> Result<String> {
    let (table, id) = match alkstore::StoreUrl::parse(url)? {
        alkstore::StoreUrl::Sqlite { .. } => ("business".to_string(), "INTEGER PRIMARY KEY"),
        alkstore::StoreUrl::Postgres { schema, .. } => (
            format!(
                "{}.business",
                alkstore::postgres::schema::quote_identifier(&schema)
            ),
            "BIGSERIAL PRIMARY KEY",
        ),
    };
    let ddl = format!(
        "CREATE TABLE IF NOT EXISTS {table} (id {id}, kind TEXT NOT NULL, ref BIGINT NOT NULL, key TEXT NOT NULL)"
    );
    let db = |e: &dyn std::fmt::Display| Error::database("business table", e.to_string());
    let mut tx = store.begin().await?;
    if let Some(conn) = tx.sqlite() {
        conn.execute_batch(&ddl).map_err(|e| db(&e))?;
    } else if let Some(client) = tx.postgres() {
        client.batch_execute(&ddl).await.map_err(|e| db(&e))?;
    }
    tx.commit().await?;
    Ok(table)
}

/// Run until SIGTERM or Ctrl-C.
pub(crate) async fn run(db: &str, args: TestWorkerArgs) -> Result<()> {
    let store = Store::open(db).await?;
    let log = open_log(args.log.as_deref())?;
    let sleep = Duration::from_millis(args.sleep_ms);
    let worker = Worker::new(store);
    let worker = match args.tx_table {
        Some(table) => {
            let table: Arc<str> = table.into();
            worker.queue_tx_raw(args.queue.clone(), move |tx, job: JobCtx<Vec<u8>>| {
                let (log, table) = (log.clone(), table.clone());
                Box::pin(async move {
                    tokio::time::sleep(sleep).await;
                    let attempt = job.attempt().to_string();
                    insert_row(tx, &table, "job", job.id(), &attempt).await?;
                    append(&log, &format!("{} {}\n", job.id(), job.attempt()))?;
                    Ok(())
                })
            })
        }
        None => worker.queue_raw(args.queue.clone(), move |job: JobCtx<Vec<u8>>| {
            let log = log.clone();
            async move {
                tokio::time::sleep(sleep).await;
                append(&log, &format!("{} {}\n", job.id(), job.attempt()))?;
                Ok(())
            }
        }),
    };
    let report = worker
        .concurrency(&args.queue, args.concurrency)
        .opts(WorkerOpts {
            shutdown_timeout: Duration::from_millis(args.shutdown_timeout_ms),
            ..WorkerOpts::default()
        })
        .run_until(alkstore::shutdown_signal())
        .await?;
    eprintln!("{report:?}");
    Ok(())
}

/// Arguments of `alk test-group-worker`.
#[derive(Debug, Args)]
pub(crate) struct TestGroupWorkerArgs {
    /// The group.
    #[arg(long)]
    group: String,
    /// The stream it reads.
    #[arg(long)]
    stream: String,
    /// The group's bucket count.
    #[arg(long, default_value_t = 16)]
    buckets: u32,
    /// This worker's id in the group.
    #[arg(long)]
    name: String,
    /// Lease TTL in milliseconds.
    #[arg(long, default_value_t = 2_000)]
    ttl_ms: u64,
    /// Heartbeat in milliseconds.
    #[arg(long, default_value_t = 300)]
    heartbeat_ms: u64,
    /// File to append `worker bucket epoch offset key` lines to (none: the
    /// handler does nothing, for benchmarks).
    #[arg(long)]
    log: Option<std::path::PathBuf>,
    /// Once the store is open, print `ready` and wait for a line on stdin
    /// before joining the group: a benchmark times the group's work, not
    /// process start-up (as the peers connect before their clocks start).
    #[arg(long)]
    gate: bool,
    /// Events with this key fail every run: each goes to the group's dead
    /// letters after one run (for the dashboard's browser test).
    #[arg(long)]
    fail_key: Option<String>,
    /// Transactional mode: insert `('event', offset, key)` into this table
    /// (`kind, ref, key`; the test makes it) inside the transaction that
    /// checkpoints the event's bucket.
    #[arg(long)]
    tx_table: Option<String>,
    /// The same row, but written by a plain handler in a transaction of
    /// its own, before the normal checkpoint (`alk bench group`'s
    /// `group_tx` baseline).
    #[arg(long, conflicts_with = "tx_table")]
    own_tx_table: Option<String>,
    /// Milliseconds each transactional handler sleeps inside its
    /// transaction (so that kills land mid-work).
    #[arg(long, default_value_t = 0)]
    sleep_ms: u64,
}

/// A consumer-group worker for the multi-process tests: logs every handled
/// event with its lease; stops gracefully (checkpoint, release) on SIGTERM.
pub(crate) async fn run_group(db: &str, args: TestGroupWorkerArgs) -> Result<()> {
    use alkstore::group::{GroupEvent, GroupOpts, GroupRunner};
    let store = Store::open(db).await?;
    let log = open_log(args.log.as_deref())?;
    if args.gate {
        wait_for_go()?;
    }
    let mut opts = GroupOpts {
        ttl: Duration::from_millis(args.ttl_ms),
        heartbeat: Duration::from_millis(args.heartbeat_ms),
        ..GroupOpts::default()
    };
    if args.fail_key.is_some() {
        opts.on_error = alkstore::stream::OnError::Retry {
            attempts: 1,
            backoff: Duration::from_millis(10),
        };
    }
    let fail_key = args.fail_key;
    let line = |e: &GroupEvent<Vec<u8>>| {
        format!(
            "{} {} {} {} {}\n",
            e.worker(),
            e.bucket(),
            e.epoch(),
            e.offset(),
            e.key().unwrap_or("-")
        )
    };
    let runner = GroupRunner::new(store.clone(), args.group, args.stream)
        .buckets(args.buckets)
        .worker_id(args.name)
        .opts(opts);
    let ran = match (args.tx_table, args.own_tx_table) {
        (None, Some(table)) => {
            let (table, store): (Arc<str>, Store) = (table.into(), store.clone());
            runner
                .handler_raw(move |e: GroupEvent<Vec<u8>>| {
                    let (table, store) = (table.clone(), store.clone());
                    async move {
                        let mut tx = store.begin().await?;
                        let key = e.key().unwrap_or("-");
                        insert_row(&mut tx, &table, "event", e.offset(), key).await?;
                        tx.commit().await
                    }
                })
                .run_until(alkstore::shutdown_signal())
                .await
        }
        (Some(table), _) => {
            let table: Arc<str> = table.into();
            let pause = Duration::from_millis(args.sleep_ms);
            runner
                .handler_tx_raw(move |tx, e: GroupEvent<Vec<u8>>| {
                    let (log, table) = (log.clone(), table.clone());
                    Box::pin(async move {
                        if !pause.is_zero() {
                            tokio::time::sleep(pause).await;
                        }
                        let key = e.key().unwrap_or("-");
                        insert_row(tx, &table, "event", e.offset(), key).await?;
                        append(&log, &line(&e))?;
                        Ok::<(), alkstore::BoxError>(())
                    })
                })
                .run_until(alkstore::shutdown_signal())
                .await
        }
        (None, None) => {
            runner
                .handler_raw(move |e: GroupEvent<Vec<u8>>| {
                    if fail_key.is_some() && e.key() == fail_key.as_deref() {
                        let failed = std::io::Error::other("test-group-worker: --fail-key");
                        return std::future::ready(Err(failed));
                    }
                    std::future::ready(append(&log, &line(&e)))
                })
                .run_until(alkstore::shutdown_signal())
                .await
        }
    };
    let report = ran?;
    eprintln!("{report:?}");
    Ok(())
}

/// Say `ready` on stdout, then wait for any line on stdin.
fn wait_for_go() -> Result<()> {
    let gate = |e: std::io::Error| Error::invalid("gate", e);
    let mut out = std::io::stdout();
    writeln!(out, "ready")
        .and_then(|()| out.flush())
        .map_err(gate)?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(gate)?;
    Ok(())
}

/// Arguments of `alk test-enqueue-timed`.
#[derive(Debug, Args)]
pub(crate) struct TestEnqueueTimedArgs {
    /// Queue to enqueue on.
    #[arg(long)]
    queue: String,
    /// How many jobs, one at a time.
    #[arg(long, default_value_t = 200)]
    count: usize,
    /// Milliseconds between enqueues (the worker goes idle in between).
    #[arg(long, default_value_t = 5)]
    gap_ms: u64,
}

/// Unix time in microseconds (this host's clock, shared by the processes of
/// a cross-process benchmark).
pub(crate) fn unix_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Enqueue jobs one at a time from this process, printing `id call_us
/// commit_us` per job (before the call, after it returned), for the
/// cross-process wake benchmark. The lines go out once all jobs are in: a
/// line per job would wake the measuring process's pipe reader at the
/// moment its worker wakes for the job.
pub(crate) async fn run_enqueue_timed(db: &str, args: TestEnqueueTimedArgs) -> Result<()> {
    let store = Store::open(db).await?;
    let q = store.queue(args.queue);
    let mut lines = Vec::with_capacity(args.count);
    for _ in 0..args.count {
        tokio::time::sleep(Duration::from_millis(args.gap_ms)).await;
        let call = unix_us();
        let id = q
            .enqueue_bytes(b"{}".to_vec(), alkstore::queue::EnqueueOpts::default())
            .await?
            .id();
        let commit = unix_us();
        lines.push((id, call, commit));
    }
    // The last wake-up must reach the workers before this process exits.
    store.flush().await;
    let mut out = std::io::stdout().lock();
    for (id, call, commit) in lines {
        writeln!(out, "{id} {call} {commit}").map_err(|e| Error::invalid("stdout", e))?;
    }
    out.flush().map_err(|e| Error::invalid("stdout", e))?;
    Ok(())
}

/// Arguments of `alk test-fill`.
#[derive(Debug, Args)]
pub(crate) struct TestFillArgs {
    /// Queue to fill (none: no jobs).
    #[arg(long)]
    queue: Option<String>,
    /// How many jobs.
    #[arg(long, default_value_t = 1_000)]
    jobs: usize,
    /// Their claims' visibility timeout, in milliseconds (whole seconds
    /// are stored; at least 1 s).
    #[arg(long, default_value_t = 2_000)]
    visibility_timeout_ms: u64,
    /// Their attempts before dead letters.
    #[arg(long, default_value_t = 25)]
    max_attempts: u32,
    /// Stream to publish `--events` keyed events to (none: no events).
    #[arg(long)]
    stream: Option<String>,
    /// How many events (keys `k0`..`k49`).
    #[arg(long, default_value_t = 1_000)]
    events: usize,
    /// Also make the business table (`kind, ref, key`) the transactional
    /// test workers write, and print its name.
    #[arg(long)]
    business_table: bool,
}

/// Arguments of `alk test-subscriber`.
#[derive(Debug, Args)]
pub(crate) struct TestSubscriberArgs {
    /// The stream to follow.
    #[arg(long)]
    stream: String,
    /// The consumer whose offset it commits (processes of one consumer
    /// share it).
    #[arg(long)]
    consumer: String,
    /// Insert `('sub', offset, key)` into this table (`kind, ref, key`)
    /// inside the transaction that commits the consumer's offset.
    #[arg(long)]
    tx_table: String,
    /// File to append `offset key` lines to.
    #[arg(long)]
    log: Option<std::path::PathBuf>,
    /// Milliseconds each handler sleeps inside its transaction.
    #[arg(long, default_value_t = 0)]
    sleep_ms: u64,
}

/// A transactional subscriber for `scripts/chaos`: each event's business
/// row and the consumer's offset commit together; stops gracefully on
/// SIGTERM.
pub(crate) async fn run_subscriber(db: &str, args: TestSubscriberArgs) -> Result<()> {
    use alkstore::stream::EventCtx;
    use alkstore::Subscriber;
    let store = Store::open(db).await?;
    let log = open_log(args.log.as_deref())?;
    let table: Arc<str> = args.tx_table.into();
    let pause = Duration::from_millis(args.sleep_ms);
    let report = Subscriber::new(store.clone(), args.stream, args.consumer)
        .handler_tx_raw(move |tx, e: EventCtx<Vec<u8>>| {
            let (log, table) = (log.clone(), table.clone());
            Box::pin(async move {
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
                let key = e.key().unwrap_or("-");
                insert_row(tx, &table, "sub", e.offset(), key).await?;
                append(&log, &format!("{} {key}\n", e.offset()))?;
                Ok::<(), alkstore::BoxError>(())
            })
        })
        .run_until(alkstore::shutdown_signal())
        .await
        .map_err(|e| Error::database("subscriber", e.to_string()))?;
    eprintln!("{report:?}");
    Ok(())
}

/// Enqueue jobs with a short visibility timeout (so killed workers' claims
/// come back quickly) and publish keyed events, in batches; with
/// `--business-table`, make and print the table. For `scripts/chaos`.
pub(crate) async fn run_fill(db: &str, args: TestFillArgs) -> Result<()> {
    let store = Store::open(db).await?;
    if let Some(queue) = args.queue {
        let q = store.queue_with(
            queue,
            alkstore::queue::QueueOpts {
                visibility_timeout: Duration::from_millis(args.visibility_timeout_ms.max(1_000)),
                max_attempts: args.max_attempts,
                ..alkstore::queue::QueueOpts::default()
            },
        );
        for chunk in (0..args.jobs).collect::<Vec<_>>().chunks(1_000) {
            q.enqueue_batch(chunk.iter().copied()).await?;
        }
    }
    if let Some(stream) = args.stream {
        let s = store.stream(stream);
        for chunk in (0..args.events).collect::<Vec<_>>().chunks(1_000) {
            s.publish_batch_raw(
                chunk
                    .iter()
                    .map(|i| (Some(format!("k{}", i % 50)), i.to_string().into_bytes())),
            )
            .await?;
        }
    }
    if args.business_table {
        let table = create_business_table(&store, db).await?;
        println!("{table}");
    }
    store.flush().await;
    Ok(())
}
