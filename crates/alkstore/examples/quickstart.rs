//! The README's quickstart, kept here so it builds with the crate
//! (`tests/readme.rs` checks the README shows this file below these lines).

use alkstore::{JobCtx, JobError, Store, Worker};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[tokio::main]
async fn main() -> alkstore::Result<()> {
    // One file, created on first use (or postgres://user@host/db?schema=jobs).
    let store = Store::open("sqlite://app.db").await?;
    let emails = store.queue("emails");
    emails
        .enqueue(&Email {
            to: "a@example.com".into(),
        })
        .await?;

    // Work until SIGTERM or Ctrl-C; then finish running jobs, hand the rest back.
    Worker::new(store)
        .queue("emails", |job: JobCtx<Email>| async move {
            let email = job.payload();
            if email.to.is_empty() {
                return Err(JobError::fail("no recipient")); // dead letter, no retry
            }
            println!("sending to {}", email.to); // Err(JobError::retry(e)) retries with backoff
            Ok(())
        })
        .run_until(alkstore::shutdown_signal())
        .await?;
    Ok(())
}
