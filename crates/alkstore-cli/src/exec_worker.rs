//! `alk worker --queue Q --exec CMD`: a worker in any language without
//! writing Rust. Each job runs `sh -c CMD` with the payload on stdin and
//! `ALK_JOB_ID`, `ALK_JOB_ATTEMPT`, `ALK_QUEUE` in the environment: exit 0
//! acks it; any other exit retries it (with the end of stderr as the
//! error); past `--timeout` the command is killed and the job retried.

use std::process::Stdio;
use std::time::Duration;

use alkstore::{JobCtx, JobError, Result, Store, Worker};
use clap::Args;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Arguments of `alk worker`.
#[derive(Debug, Args)]
pub(crate) struct ExecWorkerArgs {
    /// The queue to work.
    #[arg(long)]
    queue: String,
    /// The command to run per job (through `sh -c`), payload on stdin.
    #[arg(long)]
    exec: String,
    /// Commands running at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Kill a command running longer than this, and retry its job
    /// (e.g. `30s`, `5m`).
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    timeout: Duration,
}

/// How much of a failed command's stderr is kept as the job's error.
const STDERR_KEPT: usize = 2_000;

/// Work the queue until SIGTERM or Ctrl-C; running commands finish first.
pub(crate) async fn run(db: &str, args: ExecWorkerArgs) -> Result<()> {
    let store = Store::open(db).await?;
    let command = std::sync::Arc::<str>::from(args.exec);
    let queue = args.queue.clone();
    eprintln!(
        "alk worker: queue {queue:?}, {} at a time, running: {command}",
        args.concurrency
    );
    let report = Worker::new(store)
        .queue_raw(&args.queue, move |job: JobCtx<Vec<u8>>| {
            run_one(command.clone(), job)
        })
        .concurrency(&args.queue, args.concurrency)
        .timeout(&args.queue, args.timeout)
        .run_until(alkstore::shutdown_signal())
        .await?;
    eprintln!(
        "alk worker: stopped; {} completed, {} retried or failed",
        report.completed, report.retried
    );
    Ok(())
}

async fn run_one(
    command: std::sync::Arc<str>,
    job: JobCtx<Vec<u8>>,
) -> std::result::Result<(), JobError> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&*command)
        .env("ALK_JOB_ID", job.id().to_string())
        .env("ALK_JOB_ATTEMPT", job.attempt().to_string())
        .env("ALK_QUEUE", &job.job().queue)
        .stdin(Stdio::piped())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        // A timeout or shutdown drops this future: the command dies with it.
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| JobError::retry(format!("could not start `sh -c {command}`: {e}")))?;
    // Feed stdin while draining stderr: a command that writes much to
    // stderr before reading its input would otherwise block both sides.
    let stdin = child.stdin.take();
    let stderr = child.stderr.take();
    let feed = async {
        if let Some(mut stdin) = stdin {
            // A command that does not read its input closes it early: fine.
            let _ = stdin.write_all(job.payload()).await;
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
    let ((), stderr) = tokio::join!(feed, drain);
    let status = child
        .wait()
        .await
        .map_err(|e| JobError::retry(format!("waiting for the command: {e}")))?;
    if status.success() {
        return Ok(());
    }
    let tail = String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(STDERR_KEPT)..])
        .trim()
        .to_string();
    let code = status.code().map_or_else(
        || "killed by a signal".to_string(),
        |c| format!("exit code {c}"),
    );
    Err(JobError::retry(if tail.is_empty() {
        code
    } else {
        format!("{code}: {tail}")
    }))
}
