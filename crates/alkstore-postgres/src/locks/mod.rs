//! The lock area on PostgreSQL: one statement per call, every expiry by the
//! database's clock (`$1` overrides it in tests with an injected clock).

use alkstore_core::lock::{
    LockAcquireParams, LockDriver, LockGrant, LockInfo, LockReleaseParams, LockReleased,
    LockRenewParams, LockRenewed,
};
use alkstore_core::{group::ttl_ms, Checked, Result};

use crate::groups::sql::NOW_MS;
use crate::schema::{tables, QualifiedTable};
use crate::PgEngine;

/// The lock statements, built once per engine with the quoted schema.
pub(crate) struct LockSql {
    acquire: String,
    renew: String,
    release: String,
    list: String,
}

impl LockSql {
    pub(crate) fn new(schema: &str) -> Self {
        let lock = QualifiedTable::new(schema, tables::LOCK);
        LockSql {
            // Free when never taken, released (owner NULL) or lapsed. Two
            // acquirers at once: the second waits on the row, then finds it
            // held and returns nothing.
            // The snapshot check first: while the lock is held, the insert
            // inserts nothing and takes no row lock, so a contender's
            // failed try is a read (no WAL, no wait on the holder).
            acquire: format!(
                "INSERT INTO {lock} AS l (name, owner, token, acquired_at, expires_at) \
                 SELECT $2, $3, 1, {NOW_MS}, {NOW_MS} + $4 \
                 WHERE NOT EXISTS (SELECT 1 FROM {lock} h WHERE h.name = $2 \
                   AND h.owner IS NOT NULL AND h.expires_at > {NOW_MS}) \
                 ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, \
                   token = l.token + 1, acquired_at = excluded.acquired_at, \
                   expires_at = excluded.expires_at \
                 WHERE l.owner IS NULL OR l.expires_at <= excluded.acquired_at \
                 RETURNING token, expires_at"
            ),
            renew: format!(
                "UPDATE {lock} SET expires_at = {NOW_MS} + $5 \
                 WHERE name = $2 AND owner = $3 AND token = $4 RETURNING expires_at"
            ),
            release: format!(
                "UPDATE {lock} SET owner = NULL, expires_at = LEAST(expires_at, {NOW_MS}) \
                 WHERE name = $2 AND owner = $3 AND token = $4 RETURNING 1"
            ),
            list: format!(
                "SELECT name, CASE WHEN expires_at > {NOW_MS} THEN owner END, token, expires_at, \
                   acquired_at FROM {lock} ORDER BY name"
            ),
        }
    }
}

impl LockDriver for PgEngine {
    async fn lock_acquire(&self, params: Checked<LockAcquireParams>) -> Result<Option<LockGrant>> {
        let p = params.into_inner();
        let rows = self
            .query(
                "lock_acquire",
                &self.inner.lock_sql.acquire,
                &[&self.now_ms_override(), &p.name, &p.owner, &ttl_ms(p.ttl)],
            )
            .await?;
        Ok(rows.first().map(|r| LockGrant {
            token: r.get(0),
            expires_at_ms: r.get(1),
            name: p.name,
            owner: p.owner,
        }))
    }

    async fn lock_renew(&self, params: Checked<LockRenewParams>) -> Result<LockRenewed> {
        let p = params.into_inner();
        let rows = self
            .query(
                "lock_renew",
                &self.inner.lock_sql.renew,
                &[
                    &self.now_ms_override(),
                    &p.name,
                    &p.owner,
                    &p.token,
                    &ttl_ms(p.ttl),
                ],
            )
            .await?;
        Ok(match rows.first() {
            Some(r) => LockRenewed::Held(LockGrant {
                expires_at_ms: r.get(0),
                token: p.token,
                name: p.name,
                owner: p.owner,
            }),
            None => LockRenewed::NotHeld,
        })
    }

    async fn lock_release(&self, params: Checked<LockReleaseParams>) -> Result<LockReleased> {
        let p = params.into_inner();
        let rows = self
            // A release lost to a server crash costs only the lock's TTL:
            // it may commit without waiting for its WAL flush.
            .query_relaxed(
                "lock_release",
                &self.inner.lock_sql.release,
                &[&self.now_ms_override(), &p.name, &p.owner, &p.token],
            )
            .await?;
        Ok(if rows.is_empty() {
            LockReleased::NotHeld
        } else {
            LockReleased::Released
        })
    }

    async fn lock_list(&self) -> Result<Vec<LockInfo>> {
        let rows = self
            .query(
                "lock_list",
                &self.inner.lock_sql.list,
                &[&self.now_ms_override()],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| LockInfo {
                name: r.get(0),
                owner: r.get(1),
                token: r.get(2),
                expires_at_ms: r.get(3),
                acquired_at_ms: r.get(4),
            })
            .collect())
    }
}
