//! The parameters of lock calls, each validating itself.

use std::time::Duration;

use crate::validate::validate_worker;
use crate::{Limits, Result, Validate};

use super::validate_lock_name;

/// The longest lock TTL: a day. A guard renews well before it; a holder
/// that died keeps the lock this long at most.
pub const MAX_LOCK_TTL: Duration = Duration::from_secs(86_400);

fn validate_ttl(ttl: Duration) -> Result<()> {
    crate::validate::validate_ttl("lock ttl", ttl, MAX_LOCK_TTL)
}

/// Parameters of `lock_acquire`: take `name` for `owner` for `ttl`, if it
/// is free (never acquired, released, or lapsed).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockAcquireParams {
    /// The lock.
    pub name: String,
    /// Who takes it (unique per holder, e.g. host and process).
    pub owner: String,
    /// How long it is held unless renewed (1 ms..=1 day).
    pub ttl: Duration,
}

impl LockAcquireParams {
    /// `owner` takes `name` for `ttl`.
    pub fn new(name: impl Into<String>, owner: impl Into<String>, ttl: Duration) -> Self {
        LockAcquireParams {
            name: name.into(),
            owner: owner.into(),
            ttl,
        }
    }
}

impl Validate for LockAcquireParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_lock_name(&self.name)?;
        validate_worker(&self.owner)?;
        validate_ttl(self.ttl)
    }
}

/// Parameters of `lock_renew`: extend a hold to `ttl` from now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockRenewParams {
    /// The lock.
    pub name: String,
    /// The holder.
    pub owner: String,
    /// The token its acquire returned.
    pub token: i64,
    /// The new hold, from now (1 ms..=1 day).
    pub ttl: Duration,
}

impl LockRenewParams {
    /// Extend `owner`'s hold of `name` under `token` to `ttl` from now.
    pub fn new(
        name: impl Into<String>,
        owner: impl Into<String>,
        token: i64,
        ttl: Duration,
    ) -> Self {
        LockRenewParams {
            name: name.into(),
            owner: owner.into(),
            token,
            ttl,
        }
    }
}

impl Validate for LockRenewParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_lock_name(&self.name)?;
        validate_worker(&self.owner)?;
        validate_ttl(self.ttl)
    }
}

/// Parameters of `lock_release`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockReleaseParams {
    /// The lock.
    pub name: String,
    /// The holder.
    pub owner: String,
    /// The token its acquire returned.
    pub token: i64,
}

impl LockReleaseParams {
    /// Release `owner`'s hold of `name` under `token`.
    pub fn new(name: impl Into<String>, owner: impl Into<String>, token: i64) -> Self {
        LockReleaseParams {
            name: name.into(),
            owner: owner.into(),
            token,
        }
    }
}

impl Validate for LockReleaseParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_lock_name(&self.name)?;
        validate_worker(&self.owner)
    }
}

/// Parameters of a transaction's `lock_fence`: the lock must still be held
/// under `token` (not expired, not passed on) for the transaction to go on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockFenceParams {
    /// The lock.
    pub name: String,
    /// The fencing token its acquire returned.
    pub token: i64,
}

impl LockFenceParams {
    /// Fence with `name` held under `token`.
    pub fn new(name: impl Into<String>, token: i64) -> Self {
        LockFenceParams {
            name: name.into(),
            token,
        }
    }
}

impl Validate for LockFenceParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_lock_name(&self.name)?;
        if self.token < 1 {
            return Err(crate::Error::invalid(
                "lock token",
                format!(
                    "{} is not a token an acquire returns (they start at 1)",
                    self.token
                ),
            ));
        }
        Ok(())
    }
}
