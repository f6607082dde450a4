//! [`NotifyDriver`]: what an engine implements for notify/listen — SQL and
//! nothing else (see [`crate::call`]).

use std::future::Future;

use crate::{Checked, Engine, Result};

use super::{Notification, NotifyPollParams};

/// The notify statements of one engine; callers use
/// [`NotifyEngine`](super::NotifyEngine).
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait NotifyDriver: Engine {
    /// See [`NotifyEngine::notify_poll`](super::NotifyEngine::notify_poll).
    fn notify_poll(
        &self,
        params: Checked<NotifyPollParams>,
    ) -> impl Future<Output = Result<Vec<Notification>>> + Send;

    /// See [`NotifyEngine::notify_ready`](super::NotifyEngine::notify_ready).
    fn notify_ready(&self) -> impl Future<Output = Result<()>> + Send;

    /// See [`NotifyEngine::notify_head`](super::NotifyEngine::notify_head).
    fn notify_head(&self) -> impl Future<Output = Result<i64>> + Send;
}
