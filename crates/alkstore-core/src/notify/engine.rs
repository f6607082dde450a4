//! [`NotifyEngine`]: the notify calls, implemented once for every
//! [`NotifyDriver`] through the one wrapper ([`crate::call`]).

use std::future::Future;

use crate::call::engine_call;
use crate::{Engine, Result};

use super::driver::NotifyDriver;
use super::{Notification, NotifyPollParams};

/// Send notifications, and the reads a listener needs on engines that keep
/// them ([`Capabilities::pushes_notifications`](crate::Capabilities) is
/// false). Listen through the runtime (`store.channel(name).listen()`).
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait NotifyEngine: Engine {
    /// A channel's kept notifications after `after_id`, oldest first (empty
    /// on engines that push them instead).
    fn notify_poll(
        &self,
        params: NotifyPollParams,
    ) -> impl Future<Output = Result<Vec<Notification>>> + Send;

    /// Resolves once this process receives what is committed from now on:
    /// at once on engines that keep notifications; once the engine's
    /// `LISTEN` connection is up on engines that push them (subscribe to
    /// the wake hub first).
    fn notify_ready(&self) -> impl Future<Output = Result<()>> + Send;

    /// The newest kept notification's id (0 when none, or on engines that
    /// push them): where a new listener starts.
    fn notify_head(&self) -> impl Future<Output = Result<i64>> + Send;
}

impl<D: NotifyDriver> NotifyEngine for D {
    async fn notify_poll(&self, params: NotifyPollParams) -> Result<Vec<Notification>> {
        engine_call!(self, notify_poll, params => NotifyPollParams, |p| {
            NotifyDriver::notify_poll(self, p)
        })
    }

    async fn notify_ready(&self) -> Result<()> {
        engine_call!(self, notify_ready, () => (), |_p| NotifyDriver::notify_ready(self))
    }

    async fn notify_head(&self) -> Result<i64> {
        engine_call!(self, notify_head, () => (), |_p| NotifyDriver::notify_head(self))
    }
}
