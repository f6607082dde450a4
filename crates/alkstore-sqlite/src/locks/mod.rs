//! The lock area on SQLite. Every decision is one statement on the write
//! connection, timed by the engine's clock.

use alkstore_core::lock::{
    LockAcquireParams, LockDriver, LockGrant, LockInfo, LockReleaseParams, LockReleased,
    LockRenewParams, LockRenewed,
};
use alkstore_core::{group::ttl_ms, Checked, Error, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::{db, SqliteEngine};

/// Check that lock `name` is held under `token` at `now_ms` (its row has
/// that token, an owner, and has not expired by the engine's clock);
/// [`NotHeld`](Error::NotHeld) otherwise. The write lock of the
/// transaction it runs in keeps anyone from taking the lock over until the
/// transaction ends: it is an `UPDATE` that changes nothing, so it takes
/// the write lock even in a transaction begun deferred (and fails there if
/// another connection wrote since the transaction's first read).
pub(crate) fn fence_in(conn: &Connection, name: &str, token: i64, now_ms: i64) -> Result<()> {
    let held = conn
        .prepare_cached(
            "UPDATE __alkstore_lock SET token = token WHERE name = ?1 AND token = ?2 \
             AND owner IS NOT NULL AND expires_at > ?3",
        )
        .and_then(|mut s| s.execute(params![name, token, now_ms]))
        .map_err(db("lock_fence"))?;
    if held == 1 {
        Ok(())
    } else {
        Err(Error::NotHeld {
            what: format!("lock {name:?} under token {token}"),
        })
    }
}

impl LockDriver for SqliteEngine {
    async fn lock_acquire(&self, params: Checked<LockAcquireParams>) -> Result<Option<LockGrant>> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("lock_acquire", move |st| {
                let now = st.clock.now_ms();
                // Free when never taken, released (owner NULL) or lapsed; the
                // token moves on from the row's last one either way.
                let row = st
                    .conn
                    .prepare_cached(
                        "INSERT INTO __alkstore_lock (name, owner, token, acquired_at, expires_at) \
                         VALUES (?1, ?2, 1, ?3, ?3 + ?4) \
                         ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, \
                           token = token + 1, acquired_at = excluded.acquired_at, \
                           expires_at = excluded.expires_at \
                         WHERE owner IS NULL OR expires_at <= excluded.acquired_at \
                         RETURNING token, expires_at",
                    )
                    .and_then(|mut s| {
                        s.query_row(params![p.name, p.owner, now, ttl_ms(p.ttl)], |r| {
                            Ok((r.get(0)?, r.get(1)?))
                        })
                        .optional()
                    })
                    .map_err(db("lock_acquire"))?;
                Ok(row.map(|(token, expires_at_ms)| LockGrant {
                    name: p.name,
                    owner: p.owner,
                    token,
                    expires_at_ms,
                }))
            })
            .await
    }

    async fn lock_renew(&self, params: Checked<LockRenewParams>) -> Result<LockRenewed> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("lock_renew", move |st| {
                let now = st.clock.now_ms();
                let expires: Option<i64> = st
                    .conn
                    .prepare_cached(
                        "UPDATE __alkstore_lock SET expires_at = ?4 + ?5 \
                         WHERE name = ?1 AND owner = ?2 AND token = ?3 RETURNING expires_at",
                    )
                    .and_then(|mut s| {
                        s.query_row(params![p.name, p.owner, p.token, now, ttl_ms(p.ttl)], |r| {
                            r.get(0)
                        })
                        .optional()
                    })
                    .map_err(db("lock_renew"))?;
                Ok(match expires {
                    Some(expires_at_ms) => LockRenewed::Held(LockGrant {
                        name: p.name,
                        owner: p.owner,
                        token: p.token,
                        expires_at_ms,
                    }),
                    None => LockRenewed::NotHeld,
                })
            })
            .await
    }

    async fn lock_release(&self, params: Checked<LockReleaseParams>) -> Result<LockReleased> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("lock_release", move |st| {
                let now = st.clock.now_ms();
                let n = st
                    .conn
                    .prepare_cached(
                        "UPDATE __alkstore_lock SET owner = NULL, expires_at = MIN(expires_at, ?4) \
                         WHERE name = ?1 AND owner = ?2 AND token = ?3",
                    )
                    .and_then(|mut s| s.execute(params![p.name, p.owner, p.token, now]))
                    .map_err(db("lock_release"))?;
                Ok(if n == 0 {
                    LockReleased::NotHeld
                } else {
                    LockReleased::Released
                })
            })
            .await
    }

    async fn lock_list(&self) -> Result<Vec<LockInfo>> {
        let now = self.inner.clock.now_ms();
        self.read("lock_list", move |conn| {
            conn.prepare_cached(
                "SELECT name, CASE WHEN expires_at > ?1 THEN owner END, token, expires_at, \
                   acquired_at FROM __alkstore_lock ORDER BY name",
            )
            .and_then(|mut s| {
                s.query_map([now], |r| {
                    Ok(LockInfo {
                        name: r.get(0)?,
                        owner: r.get(1)?,
                        token: r.get(2)?,
                        expires_at_ms: r.get(3)?,
                        acquired_at_ms: r.get(4)?,
                    })
                })?
                .collect()
            })
            .map_err(db("lock_list"))
        })
        .await
    }
}
