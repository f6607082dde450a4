//! Job results through the facade: a handler saves one
//! ([`JobCtx::save_result`](crate::JobCtx::save_result), or by returning it
//! from a [`Worker::queue_returning`](crate::Worker::queue_returning)
//! handler); anyone reads it, or waits for it, through the [`Results`]
//! handle ([`Store::results`](crate::Store::results)).
//!
//! ```no_run
//! # async fn demo(store: alkstore::Store, job_id: i64) -> alkstore::Result<()> {
//! use std::time::Duration;
//! if let Some(out) = store.results().wait(job_id, Duration::from_secs(30)).await? {
//!     println!("{} bytes", out.value.len());
//! }
//! # Ok(()) }
//! ```

use std::time::Duration;

pub use alkstore_core::results::{
    JobOutput, ResultGetParams, ResultSaveParams, DEFAULT_RESULT_TTL, MAX_RESULT_TTL,
    RESULTS_CHANNEL,
};
use alkstore_core::{Result, ResultEngine};

use crate::Store;

/// A handle to the store's job results (see the [module](self) docs).
#[derive(Debug, Clone)]
pub struct Results {
    store: Store,
}

impl Results {
    pub(crate) fn new(store: Store) -> Results {
        Results { store }
    }

    /// A job's saved result; `None` when none was saved or it expired.
    pub async fn get(&self, job_id: i64) -> Result<Option<JobOutput>> {
        self.store.engine().result_get(job_id).await
    }

    /// Wait up to `timeout` for a job's result, woken by the commit that
    /// saves it (not by polling); `None` when none came in time.
    pub async fn wait(&self, job_id: i64, timeout: Duration) -> Result<Option<JobOutput>> {
        wait(&self.store, job_id, timeout).await
    }
}

/// How often a waiter looks again without an announcement (a lost one
/// costs at most this).
const RECHECK: Duration = Duration::from_secs(5);

/// Wait for job `job_id`'s result: listen for the announcements first,
/// then look, then wake on each announcement of this job.
pub(crate) async fn wait(
    store: &Store,
    job_id: i64,
    timeout: Duration,
) -> Result<Option<JobOutput>> {
    let now = tokio::time::Instant::now();
    // A timeout too far to add is as good as forever: a year.
    let deadline = now
        .checked_add(timeout)
        .unwrap_or(now + Duration::from_secs(365 * 86_400));
    let mut announcements = store.channel(RESULTS_CHANNEL).listen().await?;
    let wanted = job_id.to_string();
    loop {
        if let Some(out) = store.engine().result_get(job_id).await? {
            return Ok(Some(out));
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        let until = deadline.min(now + RECHECK);
        // Wake on this job's announcement (others are skipped), or look
        // again at the recheck or the deadline.
        loop {
            match tokio::time::timeout_at(until, announcements.recv()).await {
                Ok(Ok(n)) if n.payload == wanted => break,
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(e),
                Err(_elapsed) => break,
            }
        }
    }
}
