//! Long polls (a claim or a read that waits for its first item): try now,
//! else wait for a wake-up that concerns what is asked (an enqueue or
//! publish in this process, another process's commit, a PostgreSQL
//! notification) and try again, until something comes or the wait ends.
//! The same wake machinery the worker and the subscriber use, so a remote
//! client (over HTTP) is served as fast.

use std::future::Future;
use std::time::Duration;

use alkstore_core::{Engine, Wake};
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

/// A recheck at least this often while waiting: delayed jobs and lapsed
/// claims come due without a wake-up.
const RECHECK: Duration = Duration::from_secs(1);

/// Call `attempt` until it returns something or `wait` has passed, waking
/// on hints for which `concerns` holds.
pub(crate) async fn poll<T, F, Fut>(
    store: &crate::Store,
    wait: Duration,
    concerns: impl Fn(&Wake) -> bool,
    mut attempt: F,
) -> alkstore_core::Result<Vec<T>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = alkstore_core::Result<Vec<T>>>,
{
    let deadline = Instant::now() + wait;
    // Subscribed before the first try: something that arrives between that
    // try and the wait still wakes it.
    let mut hints = store.engine().wake_subscribe();
    loop {
        while hints.try_recv().is_ok() {}
        let got = attempt().await?;
        let now = Instant::now();
        if !got.is_empty() || now >= deadline {
            return Ok(got);
        }
        let recheck = tokio::time::sleep_until(deadline.min(now + RECHECK));
        tokio::pin!(recheck);
        loop {
            tokio::select! {
                hint = hints.recv() => match hint {
                    Ok(w) if concerns(&w) => break,
                    Ok(_) => continue,
                    Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => {
                        (&mut recheck).await;
                        break;
                    }
                },
                _ = &mut recheck => break,
            }
        }
    }
}
