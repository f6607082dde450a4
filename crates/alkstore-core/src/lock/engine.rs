//! [`LockEngine`]: the lock calls, implemented once for every
//! [`LockDriver`] through the one wrapper ([`crate::call`]).

use std::future::Future;

use crate::call::engine_call;
use crate::{Engine, Result};

use super::driver::LockDriver;
use super::params::*;
use super::types::*;

/// Named TTL locks with fencing tokens (see the [module](super) docs).
/// Every engine has it (through its [`LockDriver`]); the contract suite
/// checks they behave the same. Bad input is a typed error and writes
/// nothing.
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait LockEngine: Engine {
    /// Take a lock if it is free: never acquired, released, or past its
    /// expiry by the store's clock. `None` while someone holds it — the
    /// current holder included: locks are not re-entrant. The grant's token
    /// is higher than any earlier acquisition's of the same name.
    fn lock_acquire(
        &self,
        params: LockAcquireParams,
    ) -> impl Future<Output = Result<Option<LockGrant>>> + Send;

    /// Extend a hold to `ttl` from now. [`LockRenewed::NotHeld`] unless
    /// `owner` holds the lock under `token`; a hold that lapsed but that
    /// nobody took since is still the caller's (its token is still the
    /// newest), and is renewed.
    fn lock_renew(
        &self,
        params: LockRenewParams,
    ) -> impl Future<Output = Result<LockRenewed>> + Send;

    /// Give a lock up. [`LockReleased::NotHeld`], changing nothing, unless
    /// `owner` holds it under `token`.
    fn lock_release(
        &self,
        params: LockReleaseParams,
    ) -> impl Future<Output = Result<LockReleased>> + Send;

    /// Every lock ever acquired in the store, by name, held or not.
    fn lock_list(&self) -> impl Future<Output = Result<Vec<LockInfo>>> + Send;
}

impl<D: LockDriver> LockEngine for D {
    async fn lock_acquire(&self, params: LockAcquireParams) -> Result<Option<LockGrant>> {
        engine_call!(self, lock_acquire, params => LockAcquireParams, |p| {
            LockDriver::lock_acquire(self, p)
        })
    }

    async fn lock_renew(&self, params: LockRenewParams) -> Result<LockRenewed> {
        engine_call!(self, lock_renew, params => LockRenewParams, |p| {
            LockDriver::lock_renew(self, p)
        })
    }

    async fn lock_release(&self, params: LockReleaseParams) -> Result<LockReleased> {
        engine_call!(self, lock_release, params => LockReleaseParams, |p| {
            LockDriver::lock_release(self, p)
        })
    }

    async fn lock_list(&self) -> Result<Vec<LockInfo>> {
        engine_call!(self, lock_list, () => (), |_p| LockDriver::lock_list(self))
    }
}
