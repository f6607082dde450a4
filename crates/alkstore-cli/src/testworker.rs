//! `alk test-worker`: a real worker process for the crash tests. Each handled
//! job appends `id attempt` to a log with one `write` on an `O_APPEND` file,
//! so lines from concurrent handlers and processes never interleave.

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
    /// File to append `id attempt` lines to.
    #[arg(long)]
    log: std::path::PathBuf,
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

/// Run until SIGTERM or Ctrl-C.
pub(crate) async fn run(db: &str, args: TestWorkerArgs) -> Result<()> {
    let store = Store::open(db).await?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.log)
        .map_err(|e| Error::invalid("log", e))?;
    let file = Arc::new(Mutex::new(file));
    let sleep = Duration::from_millis(args.sleep_ms);
    let report = Worker::new(store)
        .queue_raw(args.queue.clone(), move |job: JobCtx<Vec<u8>>| {
            let file = file.clone();
            async move {
                tokio::time::sleep(sleep).await;
                let line = format!("{} {}\n", job.id(), job.attempt());
                if let Ok(mut f) = file.lock() {
                    f.write_all(line.as_bytes())?;
                }
                Ok(())
            }
        })
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
