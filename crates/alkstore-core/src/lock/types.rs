//! The values lock calls return.

/// A lock held: by whom, under which fencing token, until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockGrant {
    /// The lock's name.
    pub name: String,
    /// The holder.
    pub owner: String,
    /// This acquisition's fencing token: higher than every earlier
    /// acquisition's of the same name.
    pub token: i64,
    /// When the lock lapses unless renewed (unix milliseconds, the store's
    /// clock).
    pub expires_at_ms: i64,
}

/// What a renew found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum LockRenewed {
    /// Still held under the same token; the new expiry is in the grant.
    Held(LockGrant),
    /// The caller does not hold the lock under that token (released, taken
    /// over after lapsing, or never acquired): stop using what it guards.
    NotHeld,
}

/// What a release found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum LockReleased {
    /// Released: the next acquire succeeds at once.
    Released,
    /// The caller did not hold the lock under that token; nothing changed.
    NotHeld,
}

/// One lock as `lock_list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    /// The lock's name.
    pub name: String,
    /// The holder while held; `None` once released or lapsed.
    pub owner: Option<String>,
    /// The last fencing token handed out for this name.
    pub token: i64,
    /// When the current (or last) hold lapses (unix milliseconds).
    pub expires_at_ms: i64,
    /// When the last acquisition happened (unix milliseconds).
    pub acquired_at_ms: i64,
}
