//! [`LockDriver`]: what an engine implements for locks — SQL and nothing
//! else (see [`crate::call`]).

use std::future::Future;

use crate::{Checked, Engine, Result};

use super::params::*;
use super::types::*;

/// The lock statements of one engine. Each method takes [`Checked`]
/// parameters; callers use [`LockEngine`](super::LockEngine), whose methods
/// document the behaviour (the contract suite checks it). Every expiry is
/// decided by the database's clock (the engine's injected clock in tests).
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait LockDriver: Engine {
    /// See [`LockEngine::lock_acquire`](super::LockEngine::lock_acquire).
    fn lock_acquire(
        &self,
        params: Checked<LockAcquireParams>,
    ) -> impl Future<Output = Result<Option<LockGrant>>> + Send;

    /// See [`LockEngine::lock_renew`](super::LockEngine::lock_renew).
    fn lock_renew(
        &self,
        params: Checked<LockRenewParams>,
    ) -> impl Future<Output = Result<LockRenewed>> + Send;

    /// See [`LockEngine::lock_release`](super::LockEngine::lock_release).
    fn lock_release(
        &self,
        params: Checked<LockReleaseParams>,
    ) -> impl Future<Output = Result<LockReleased>> + Send;

    /// See [`LockEngine::lock_list`](super::LockEngine::lock_list).
    fn lock_list(&self) -> impl Future<Output = Result<Vec<LockInfo>>> + Send;
}
