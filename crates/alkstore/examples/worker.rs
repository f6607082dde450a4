//! A worker with two queues, a typed payload, and graceful shutdown on Ctrl-C.
//!
//! ```sh
//! cargo run -p alkstore --example worker                       # sqlite://worker-example.db
//! cargo run -p alkstore --example worker -- postgres://postgres@127.0.0.1/postgres?schema=example
//! ```

use std::time::Duration;

use alkstore::{queue::EnqueueOpts, JobCtx, JobError, Store, Worker};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Email {
    to: String,
    subject: String,
}

#[tokio::main]
async fn main() -> alkstore::Result<()> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "sqlite://worker-example.db".to_string());
    let store = Store::open(&url).await?;

    // Producers: a few emails, one delayed, and some raw thumbnails.
    let emails = store.queue("emails");
    for i in 0..5 {
        emails
            .enqueue(&Email {
                to: format!("user{i}@example.com"),
                subject: "welcome".into(),
            })
            .await?;
    }
    emails
        .enqueue_with(
            &Email {
                to: "later@example.com".into(),
                subject: "reminder".into(),
            },
            EnqueueOpts::default().delay(Duration::from_secs(2)),
        )
        .await?;
    let thumbs = store.queue("thumbnails");
    for i in 0..3u8 {
        thumbs
            .enqueue_bytes(vec![i; 16], EnqueueOpts::default())
            .await?;
    }

    println!("working {url}; press Ctrl-C to stop");
    let report = Worker::new(store)
        .queue("emails", |job: JobCtx<Email>| async move {
            let email = job.payload();
            if email.to.is_empty() {
                // Bad data: no point retrying.
                return Err(JobError::fail("empty recipient"));
            }
            println!(
                "email #{} (attempt {}): to {} — {}",
                job.id(),
                job.attempt(),
                email.to,
                email.subject
            );
            Ok(())
        })
        .queue_raw("thumbnails", |job: JobCtx<Vec<u8>>| async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            println!("thumbnail #{}: {} bytes", job.id(), job.payload().len());
            Ok(())
        })
        .concurrency("emails", 8)
        .concurrency("thumbnails", 2)
        .timeout("thumbnails", Duration::from_secs(30))
        .run_until(async {
            // SIGTERM (Docker, Kubernetes, systemd) or Ctrl-C.
            alkstore::shutdown_signal().await;
            println!("stopping: finishing running jobs, handing the rest back");
        })
        .await?;
    println!("{report:?}");
    Ok(())
}
