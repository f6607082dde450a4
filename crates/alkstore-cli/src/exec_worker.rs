//! `alk worker --queue Q --exec CMD`: a worker in any language without
//! writing Rust. Each job runs `sh -c CMD` with the payload on stdin and
//! `ALK_JOB_ID`, `ALK_JOB_ATTEMPT`, `ALK_QUEUE` (and, when the job has
//! them, `ALK_JOB_TAGS` and `ALK_JOB_META` as JSON) in the environment: exit 0
//! acks it; any other exit retries it (with the end of stderr as the
//! error). `alk worker --group G --stream S --exec CMD` is a consumer-group
//! member instead: the command runs per event of the buckets it holds, in
//! order per bucket (`run_group`).
//!
//! Each command runs in a process group of its own, so whatever it starts
//! is stopped with it: past `--timeout`, when its job is cancelled, and at
//! shutdown once `--shutdown-timeout` has passed, the whole group gets
//! SIGTERM, then SIGKILL after [`KILL_GRACE`]. Only once no process of the
//! group is left is the job retried, dead-lettered or handed back, so no
//! other worker runs it beside a leftover of this one. A command that exits
//! leaving processes of its group running (started in the background) has
//! them stopped the same way before its job is acked or retried. (A
//! terminal's Ctrl-C reaches the worker, not the commands: the worker stops
//! them as above.) Orphans are reaped by the host's init: where `alk worker`
//! is itself pid 1 (a container without `--init`), a stopped command's
//! children stay zombies and each stop waits its full grace.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore::group::{GroupEvent, GroupOpts, GroupRunner};
use alkstore::stream::OnError;
use alkstore::{
    Error, JobCtx, JobError, JobResult, Result, Store, StoreOptions, Worker, WorkerOpts,
    WorkerReport,
};
use clap::Args;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;
use tokio::sync::watch;

use crate::commands::text::parse_duration;

/// Pooled connections of an `alk worker` when the URL gives no
/// `pool_size`: claims, acks and heartbeats go in batches, so two carry
/// any concurrency, and 32 workers (plus one LISTEN each) fit under a
/// server's default `max_connections = 100`.
const WORKER_POOL_SIZE: usize = 2;

/// Arguments of `alk worker`.
#[derive(Debug, Args)]
pub(crate) struct ExecWorkerArgs {
    /// The queue to work.
    #[arg(long, required_unless_present = "group", conflicts_with = "group")]
    queue: Option<String>,
    /// Instead of a queue: be a member of this consumer group and run the
    /// command per event of the member's buckets (with `--stream`).
    #[arg(long, requires = "stream")]
    group: Option<String>,
    /// The stream the group reads (with `--group`).
    #[arg(long, requires = "group")]
    stream: Option<String>,
    /// The group's bucket count, when this member creates the group
    /// (default 16; every member must agree).
    #[arg(long, requires = "group", default_value_t = 16)]
    buckets: u32,
    /// With `--group`: runs of a failing event before it goes to the
    /// group's dead letters and its bucket goes on (at least 1).
    #[arg(long, requires = "group", default_value_t = 5,
          value_parser = clap::builder::RangedU64ValueParser::<u32>::new().range(1..=1_000_000))]
    attempts: u32,
    /// The command to run per job (through `sh -c`), payload on stdin.
    #[arg(long)]
    exec: String,
    /// Commands running at once (1..=1000000).
    #[arg(long, default_value_t = 4,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    concurrency: usize,
    /// Stop a command running longer than this (its whole process group:
    /// SIGTERM, SIGKILL 5 s later) and retry its job: `30s`, `5m`, `1h`, or
    /// plain seconds.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    timeout: Duration,
    /// At SIGTERM or Ctrl-C, how long running commands may go on before
    /// they are stopped the same way and their jobs handed back (pending
    /// again, the attempt not counted): `30s`, `2m`, or plain seconds.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    shutdown_timeout: Duration,
    /// Print one line per job to stderr: id, attempt, outcome, run time.
    #[arg(long)]
    verbose: bool,
}

/// How much of a failed command's stderr is kept as the job's error.
const STDERR_KEPT: usize = 2_000;

/// How long a command's process group has between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// How long the group's processes may take to vanish after SIGKILL (they
/// cannot ignore it; this only bounds a wait on a stuck kernel call).
const KILL_WAIT: Duration = Duration::from_secs(2);

/// The longest `--timeout` or `--shutdown-timeout` (the runtime's deadlines
/// add to them).
const LONGEST_WAIT: Duration = Duration::from_secs(365 * 86_400);

/// What every job's handler shares.
struct Shared {
    command: String,
    timeout: Duration,
    shutdown_timeout: Duration,
    verbose: bool,
    /// Turns true at SIGTERM or Ctrl-C.
    stop: watch::Receiver<bool>,
    /// Commands stopped at `--timeout`.
    timed_out: AtomicU64,
    /// Jobs handed back because the worker stopped.
    handed_back: AtomicU64,
}

/// Work the queue until SIGTERM or Ctrl-C; running commands get
/// `--shutdown-timeout` to finish.
pub(crate) async fn run(db: &str, args: ExecWorkerArgs) -> Result<()> {
    for (flag, value) in [
        ("--timeout", args.timeout),
        ("--shutdown-timeout", args.shutdown_timeout),
    ] {
        if value > LONGEST_WAIT {
            return Err(Error::invalid(flag, "at most 365 days"));
        }
    }
    let store = Store::open_with(
        db,
        StoreOptions {
            pool_size: Some(WORKER_POOL_SIZE),
            ..StoreOptions::default()
        },
    )
    .await?;
    let (stop_tx, stop) = watch::channel(false);
    let shared = Arc::new(Shared {
        command: args.exec.clone(),
        timeout: args.timeout,
        shutdown_timeout: args.shutdown_timeout,
        verbose: args.verbose,
        stop,
        timed_out: AtomicU64::new(0),
        handed_back: AtomicU64::new(0),
    });
    if let (Some(group), Some(stream)) = (args.group.clone(), args.stream.clone()) {
        return run_group(store, shared, stop_tx, group, stream, &args).await;
    }
    let Some(queue) = args.queue.clone() else {
        return Err(Error::invalid(
            "--queue",
            "give --queue, or --group with --stream",
        ));
    };
    eprintln!(
        "alk worker: queue {queue:?}, {} at a time, running: {}",
        args.concurrency, args.exec
    );
    if store.paused_queues().await?.contains(&queue) {
        eprintln!(
            "alk worker: queue {queue:?} is paused: nothing is claimed until `alk queues resume {queue}`"
        );
    }
    // The handlers stop their commands themselves; the runtime's own
    // deadlines are backstops past those (its timeout drops a handler, and
    // the dropped command's group is killed at once).
    let backstop = 2 * KILL_GRACE + KILL_WAIT + Duration::from_secs(5);
    let opts = WorkerOpts {
        shutdown_timeout: args.shutdown_timeout + backstop,
        ..WorkerOpts::default()
    };
    let handlers = shared.clone();
    let drain = args.shutdown_timeout;
    let report = Worker::new(store)
        .opts(opts)
        .queue_raw(&queue, move |job: JobCtx<Vec<u8>>| {
            run_one(handlers.clone(), job)
        })
        .concurrency(&queue, args.concurrency)
        .timeout(&queue, args.timeout + backstop)
        .run_until(async move {
            alkstore::shutdown_signal().await;
            eprintln!(
                "alk worker: stopping; running commands get {} to finish, then are stopped and their jobs handed back",
                humantime::format_duration(drain)
            );
            let _ = stop_tx.send(true);
        })
        .await?;
    eprintln!("alk worker: stopped; {}", summary(&report, &shared));
    Ok(())
}

/// Be a member of `group` on `stream` until SIGTERM or Ctrl-C, running the
/// command once per event of the buckets held, in order within each
/// bucket: exit 0 handles the event (checkpointed with the bucket); any
/// other exit runs it again, up to `--attempts`, then it goes to the
/// group's dead letters. At shutdown a command still running past
/// `--shutdown-timeout` is stopped and its event left to the bucket's next
/// holder.
async fn run_group(
    store: Store,
    shared: Arc<Shared>,
    stop_tx: watch::Sender<bool>,
    group: String,
    stream: String,
    args: &ExecWorkerArgs,
) -> Result<()> {
    eprintln!(
        "alk worker: group {group:?} on stream {stream:?}, one command at a time per bucket held, running: {}",
        args.exec
    );
    let opts = GroupOpts {
        on_error: OnError::Retry {
            attempts: args.attempts,
            backoff: Duration::from_millis(200),
        },
        // Each event's command is a process: checkpoint often, so a
        // restart runs few of them again.
        commit_every: 1,
        ..GroupOpts::default()
    };
    let handlers = shared.clone();
    let drain = args.shutdown_timeout;
    let (group_env, stream_env) = (group.clone(), stream.clone());
    let report = GroupRunner::new(store.clone(), group, stream)
        .buckets(args.buckets)
        .opts(opts)
        .handler_raw(move |e: GroupEvent<Vec<u8>>| {
            let (w, group, stream) = (handlers.clone(), group_env.clone(), stream_env.clone());
            async move { run_event(&w, &group, &stream, e).await }
        })
        .run_until(async move {
            alkstore::shutdown_signal().await;
            eprintln!(
                "alk worker: stopping; running commands get {} to finish, then are stopped and their events left to the next member",
                humantime::format_duration(drain)
            );
            let _ = stop_tx.send(true);
        })
        .await?;
    eprintln!(
        "alk worker: stopped; {} handled, {} dead-lettered, {} timed out, {} stopped at shutdown; buckets: {} claimed, {} lost, {} released",
        report.handled,
        report.dead_lettered,
        shared.timed_out.load(Ordering::Relaxed),
        shared.handed_back.load(Ordering::Relaxed),
        report.claimed,
        report.lost,
        report.released,
    );
    Ok(())
}

/// Run one event's command: `ALK_GROUP`, `ALK_STREAM`, `ALK_BUCKET`,
/// `ALK_EPOCH`, `ALK_EVENT_OFFSET` and (when it has one) `ALK_EVENT_KEY`
/// in the environment, the payload on stdin.
async fn run_event(
    w: &Shared,
    group: &str,
    stream: &str,
    e: GroupEvent<Vec<u8>>,
) -> std::result::Result<(), std::io::Error> {
    let started = Instant::now();
    let mut env = vec![
        ("ALK_GROUP", group.to_string()),
        ("ALK_STREAM", stream.to_string()),
        ("ALK_BUCKET", e.bucket().to_string()),
        ("ALK_EPOCH", e.epoch().to_string()),
        ("ALK_EVENT_OFFSET", e.offset().to_string()),
    ];
    if let Some(key) = e.key() {
        env.push(("ALK_EVENT_KEY", key.to_owned()));
    }
    let ended = run_command(w, &env, e.payload(), std::future::pending()).await;
    let result = match ended {
        Ended::NotStarted(err) => Err(std::io::Error::other(format!(
            "could not start `sh -c {}`: {err}",
            w.command
        ))),
        Ended::Exited(status, _) if status.success() => Ok(()),
        Ended::Exited(status, stderr) => Err(std::io::Error::other(failure(status, &stderr))),
        Ended::Stopped(Stop::TimedOut) => {
            w.timed_out.fetch_add(1, Ordering::Relaxed);
            Err(std::io::Error::other(format!(
                "timed out after {}",
                humantime::format_duration(w.timeout)
            )))
        }
        // Never sent for an event; treated as a shutdown.
        Ended::Stopped(Stop::Cancelled | Stop::Shutdown) => {
            w.handed_back.fetch_add(1, Ordering::Relaxed);
            Err(std::io::Error::other("stopped at shutdown"))
        }
    };
    if w.verbose {
        let outcome = match &result {
            Ok(()) => "handled".to_string(),
            Err(err) => err.to_string(),
        };
        eprintln!(
            "alk worker: event {} (bucket {}, epoch {}): {outcome} in {:.1}s",
            e.offset(),
            e.bucket(),
            e.epoch(),
            started.elapsed().as_secs_f64()
        );
    }
    result
}

/// Every outcome of the worker's jobs: `3 completed, 1 retried, 2 dead, 1
/// timed out, 0 handed back` (a timed-out job is also counted as retried
/// or dead).
fn summary(report: &WorkerReport, shared: &Shared) -> String {
    format!(
        "{} completed, {} retried, {} dead, {} timed out, {} handed back",
        report.completed,
        report.retried,
        report.dead,
        shared.timed_out.load(Ordering::Relaxed),
        shared.handed_back.load(Ordering::Relaxed) + report.released,
    )
}

/// How a command ended.
enum Ended {
    /// `sh` could not be started.
    NotStarted(std::io::Error),
    /// It exited (or died of a signal it was not sent by the worker), with
    /// the end of its stderr.
    Exited(std::process::ExitStatus, Vec<u8>),
    /// The worker stopped it: past `--timeout`, cancelled, or shutting down.
    Stopped(Stop),
}

/// Why the worker stopped a command.
#[derive(Clone, Copy)]
enum Stop {
    TimedOut,
    Cancelled,
    Shutdown,
}

/// Run one job's command and turn how it ended into the job's outcome.
async fn run_one(w: Arc<Shared>, job: JobCtx<Vec<u8>>) -> JobResult {
    let started = Instant::now();
    let mut env = vec![
        ("ALK_JOB_ID", job.id().to_string()),
        ("ALK_JOB_ATTEMPT", job.attempt().to_string()),
        ("ALK_QUEUE", job.job().queue.clone()),
    ];
    if let Some(tags) = alkstore::queue::tags_json(&job.job().tags) {
        env.push(("ALK_JOB_TAGS", tags));
    }
    if let Some(meta) = alkstore::queue::meta_json(&job.job().meta) {
        env.push(("ALK_JOB_META", meta));
    }
    let ended = run_command(&w, &env, job.payload(), job.cancelled()).await;
    let result = match ended {
        Ended::NotStarted(e) => Err(JobError::retry(format!(
            "could not start `sh -c {}`: {e}",
            w.command
        ))),
        Ended::Exited(status, _) if status.success() => Ok(()),
        Ended::Exited(status, stderr) => Err(JobError::retry(failure(status, &stderr))),
        Ended::Stopped(Stop::TimedOut) => {
            w.timed_out.fetch_add(1, Ordering::Relaxed);
            Err(JobError::retry(format!(
                "timed out after {}",
                humantime::format_duration(w.timeout)
            )))
        }
        Ended::Stopped(Stop::Cancelled) => Err(JobError::fail("cancelled while running")),
        Ended::Stopped(Stop::Shutdown) => {
            w.handed_back.fetch_add(1, Ordering::Relaxed);
            // Pending again at once, the attempt not counted.
            Err(JobError::snooze(Duration::ZERO))
        }
    };
    if w.verbose {
        eprintln!("alk worker: {}", job_line(&job, &result, started.elapsed()));
    }
    result
}

/// One `--verbose` line: `job 12 attempt 1/3: completed in 0.4s`.
fn job_line(job: &JobCtx<Vec<u8>>, result: &JobResult, took: Duration) -> String {
    let (attempt, most) = (job.attempt(), job.job().max_attempts);
    let outcome = match result {
        Ok(()) => "completed".to_string(),
        Err(JobError::Snooze(_)) => "handed back (stopping)".to_string(),
        Err(JobError::Fail(e)) => format!("{e}; dead"),
        Err(JobError::Retry { error, .. }) if attempt >= most => {
            format!("{error}; dead (last attempt)")
        }
        Err(JobError::Retry { error, .. }) => format!("{error}; retried"),
    };
    format!(
        "job {} attempt {attempt}/{most}: {outcome} in {:.1}s",
        job.id(),
        took.as_secs_f64()
    )
}

/// A failed command's error: its exit code (or signal) and stderr's end.
fn failure(status: std::process::ExitStatus, stderr: &[u8]) -> String {
    let tail = String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(STDERR_KEPT)..])
        .trim()
        .to_string();
    let code = status.code().map_or_else(
        || "killed by a signal".to_string(),
        |c| format!("exit code {c}"),
    );
    if tail.is_empty() {
        code
    } else {
        format!("{code}: {tail}")
    }
}

/// Run `sh -c CMD` with `env` and `payload` on stdin, in a process group
/// of its own, until it exits; or stop the group (past the timeout, when
/// `cancelled` resolves, or at shutdown).
async fn run_command(
    w: &Shared,
    env: &[(&str, String)],
    payload: &[u8],
    cancelled: impl std::future::Future<Output = ()>,
) -> Ended {
    let mut command = tokio::process::Command::new("sh");
    command.arg("-c").arg(&w.command);
    for (name, value) in env {
        command.env(name, value);
    }
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::inherit())
        .stderr(std::process::Stdio::piped())
        // A dropped handler (the runtime's backstop) kills `sh` at once;
        // the group guard below kills the rest of its group.
        .kill_on_drop(true);
    group::isolate(&mut command);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return Ended::NotStarted(e),
    };
    let mut guard = group::Guard::of(&child);
    // Feed stdin while draining stderr: a command that writes much to
    // stderr before reading its input would otherwise block both sides.
    let stdin = child.stdin.take();
    let stderr = child.stderr.take();
    let feed = async {
        if let Some(mut stdin) = stdin {
            // A command that does not read its input closes it early: fine.
            let _ = stdin.write_all(payload).await;
        }
    };
    let drain = async {
        let mut tail = Vec::new();
        if let Some(mut err) = stderr {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = err.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > 2 * STDERR_KEPT {
                    tail.drain(..tail.len() - STDERR_KEPT);
                }
            }
        }
        tail
    };
    let mut stop = w.stop.clone();
    let stop = tokio::select! {
        (status, tail) = async {
            let ((), tail) = tokio::join!(feed, drain);
            (child.wait().await, tail)
        } => {
            // `sh` exited: stop whatever it left running in its group (a
            // background process would otherwise outlive the job and
            // overlap its next attempt).
            guard.sweep().await;
            return match status {
                Ok(status) => Ended::Exited(status, tail),
                Err(e) => Ended::NotStarted(e),
            };
        }
        () = tokio::time::sleep(w.timeout) => Stop::TimedOut,
        () = cancelled => Stop::Cancelled,
        () = async {
            if stop.wait_for(|s| *s).await.is_err() {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(w.shutdown_timeout).await;
        } => Stop::Shutdown,
    };
    guard.stop(&mut child).await;
    Ended::Stopped(stop)
}

/// A command's process group: started as its own, signalled as a whole.
#[cfg(unix)]
mod group {
    use std::time::Duration;

    use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};
    use tokio::time::Instant;

    use super::{Child, KILL_GRACE, KILL_WAIT};

    /// Start the command as the leader of a new process group.
    pub(super) fn isolate(command: &mut tokio::process::Command) {
        command.process_group(0);
    }

    /// The group of a running command, killed (SIGKILL) when dropped armed:
    /// a handler dropped mid-run leaves nothing of its command behind.
    pub(super) struct Guard(Option<Pid>);

    impl Guard {
        /// The group `child` leads (none when it already exited; never
        /// pid 1 nor 0, which would signal every process or our own group).
        pub(super) fn of(child: &Child) -> Guard {
            let pid = child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .filter(|id| *id > 1)
                .and_then(Pid::from_raw);
            Guard(pid)
        }

        /// After the leader exited and was reaped: stop what is left of its
        /// group (processes it started in the background) as [`Self::stop`]
        /// does. A group id stays taken while any member lives, so one
        /// that still answers is still this command's.
        pub(super) async fn sweep(&mut self) {
            let Some(pgid) = self.0.take() else {
                return;
            };
            if test_kill_process_group(pgid).is_err() {
                return;
            }
            let _ = kill_process_group(pgid, Signal::TERM);
            if gone_by(pgid, Instant::now() + KILL_GRACE).await {
                return;
            }
            let _ = kill_process_group(pgid, Signal::KILL);
            gone_by(pgid, Instant::now() + KILL_WAIT).await;
        }

        /// SIGTERM the group; reap the leader; SIGKILL whatever is left
        /// after [`KILL_GRACE`]; return once no process of the group is left
        /// (or, for processes that cannot be signalled, after [`KILL_WAIT`]).
        pub(super) async fn stop(&mut self, child: &mut Child) {
            let Some(pgid) = self.0.take() else {
                let _ = child.start_kill();
                let _ = child.wait().await;
                return;
            };
            let _ = kill_process_group(pgid, Signal::TERM);
            let deadline = Instant::now() + KILL_GRACE;
            let _ = tokio::time::timeout_at(deadline, child.wait()).await;
            if gone_by(pgid, deadline).await {
                return;
            }
            let _ = kill_process_group(pgid, Signal::KILL);
            let _ = child.wait().await;
            gone_by(pgid, Instant::now() + KILL_WAIT).await;
        }
    }

    /// Wait until no process of group `pgid` is left, or `deadline`;
    /// whether it emptied. A group of only zombies (its leader not reaped
    /// yet) still counts as alive.
    async fn gone_by(pgid: Pid, deadline: Instant) -> bool {
        loop {
            if test_kill_process_group(pgid).is_err() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            if let Some(pgid) = self.0 {
                let _ = kill_process_group(pgid, Signal::KILL);
            }
        }
    }
}

/// Without process groups, only `sh` itself is stopped.
#[cfg(not(unix))]
mod group {
    use super::Child;

    pub(super) fn isolate(_command: &mut tokio::process::Command) {}

    pub(super) struct Guard;

    impl Guard {
        pub(super) fn of(_child: &Child) -> Guard {
            Guard
        }

        pub(super) async fn sweep(&mut self) {}

        pub(super) async fn stop(&mut self, child: &mut Child) {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }
}
