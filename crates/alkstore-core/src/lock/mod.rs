//! Locks: named, TTL-bounded, owned by one holder at a time, each
//! acquisition stamped with a **fencing token**.
//!
//! A lock is a row: its holder, its expiry (by the database's clock on
//! PostgreSQL, the engine's clock on SQLite) and the last token handed out.
//! Every successful acquire takes the next token of that name, whoever
//! acquires and whether the lock was released or lapsed, so a token strictly
//! grows per lock name: a resource that remembers the highest token it has
//! seen can refuse a writer whose lock was taken over while it stalled.
//! Renew and release name the holder and its token; anyone else gets
//! [`LockRenewed::NotHeld`] / [`LockReleased::NotHeld`], never an error.

mod driver;
mod engine;
mod params;
mod types;

pub use driver::LockDriver;
pub use engine::LockEngine;
pub use params::*;
pub use types::*;

use crate::validate::validate_text;
use crate::Result;

/// Reject empty, oversized or NUL-containing lock names.
pub fn validate_lock_name(name: &str) -> Result<()> {
    validate_text("lock name", name)
}
