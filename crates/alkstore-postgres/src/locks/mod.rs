//! The lock area on PostgreSQL: one statement per call, every expiry by the
//! database's clock (`$1` overrides it in tests with an injected clock).

use alkstore_core::lock::{
    LockAcquireParams, LockDriver, LockFenceParams, LockGrant, LockInfo, LockReleaseParams,
    LockReleased, LockRenewParams, LockRenewed,
};
use alkstore_core::{group::ttl_ms, Checked, Error, Result};

use crate::conn::Exec;

use crate::groups::sql::NOW_MS;
use crate::schema::{tables, QualifiedTable};
use crate::PgEngine;

/// The lock statements, built once per engine with the quoted schema.
pub(crate) struct LockSql {
    acquire: String,
    renew: String,
    release: String,
    list: String,
    fence: String,
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
            // The lock row, share-locked until the transaction ends, when
            // the token is still the holder's and has not lapsed. A takeover
            // (`acquire`'s `ON CONFLICT DO UPDATE`) must lock the row
            // first: it waits for the transaction, then re-checks the row.
            fence: format!(
                "SELECT 1 FROM {lock} WHERE name = $2 AND token = $3 AND owner IS NOT NULL \
                 AND expires_at > {NOW_MS} FOR SHARE"
            ),
            list: format!(
                "SELECT name, CASE WHEN expires_at > {NOW_MS} THEN owner END, token, expires_at, \
                   acquired_at FROM {lock} ORDER BY name"
            ),
        }
    }
}

/// Fence `e`'s transaction with a lock: check that `p.token` is still the
/// holder's (not released, not lapsed by the store's clock, not taken
/// over) and keep it so until the transaction ends. [`Error::NotHeld`]
/// otherwise, found from the rows returned (no statement error, which
/// would abort the transaction). A renewal or release of the lock waits
/// for the transaction as well.
pub(crate) async fn fence_in<E: Exec + ?Sized>(
    e: &E,
    sql: &LockSql,
    now_ms: Option<i64>,
    p: &LockFenceParams,
) -> Result<()> {
    let rows = e
        .fetch("lock_fence", &sql.fence, &[&now_ms, &p.name, &p.token])
        .await?;
    if rows.is_empty() {
        return Err(Error::NotHeld {
            what: format!("lock {:?} under token {}", p.name, p.token),
        });
    }
    Ok(())
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
