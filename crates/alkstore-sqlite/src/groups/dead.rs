//! A group's dead letters: add one under a held lease, list them,
//! requeue, purge, take the requeued ones back, and resolve one.

use alkstore_core::group::{
    fenced, GroupDead, GroupDeadAddParams, GroupDeadListParams, GroupDeadPurgeParams,
    GroupDeadRequeueParams, GroupDeadResolveParams, GroupDeadTakeParams,
};
use alkstore_core::{Checked, Result};
use rusqlite::params;

use super::leases::holds;
use crate::{db, SqliteEngine};

/// The columns [`dead`] reads, in its order.
const DEAD_COLUMNS: &str =
    "id, bucket, stream, key, payload, error, attempts, failed_at, created_at, requeued";

fn dead(r: &rusqlite::Row<'_>) -> rusqlite::Result<GroupDead> {
    Ok(GroupDead {
        offset: r.get(0)?,
        bucket: r.get(1)?,
        stream: r.get(2)?,
        key: r.get(3)?,
        payload: r.get(4)?,
        error: r.get(5)?,
        attempts: r.get(6)?,
        failed_at: r.get(7)?,
        created_at: r.get(8)?,
        requeued: r.get(9)?,
    })
}

/// The driver's `group_dead_add`: record an event as dead, if the worker
/// still holds its bucket.
pub(super) async fn group_dead_add(
    engine: &SqliteEngine,
    params: Checked<GroupDeadAddParams>,
) -> Result<()> {
    let p = params.into_inner();
    engine
        .inner
        .writer
        .write("group_dead_add", move |st| {
            let op = "group_dead_add";
            let added = st
                .conn
                .prepare_cached(
                    "INSERT INTO __alkstore_group_dead (group_name, id, bucket, stream, key, \
                       payload, error, attempts, failed_at, created_at) \
                     SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?12 WHERE EXISTS ( \
                       SELECT 1 FROM __alkstore_group_bucket WHERE group_name = ?1 \
                         AND bucket = ?3 AND owner = ?10 AND epoch = ?11) \
                     ON CONFLICT (group_name, id) DO UPDATE SET error = excluded.error, \
                       attempts = excluded.attempts, failed_at = excluded.failed_at, \
                       requeued = 0",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        p.group,
                        p.event.offset,
                        p.bucket,
                        &*p.event.stream,
                        p.event.key,
                        p.event.payload,
                        p.error,
                        p.attempts,
                        st.clock.now(),
                        p.worker,
                        p.epoch,
                        p.event.created_at
                    ])
                })
                .map_err(db(op))?;
            if added == 0 {
                return Err(fenced(&p.group, p.bucket, p.epoch));
            }
            Ok(())
        })
        .await
}

/// The driver's `group_dead_list`: a group's dead letters, by offset.
pub(super) async fn group_dead_list(
    engine: &SqliteEngine,
    params: Checked<GroupDeadListParams>,
) -> Result<Vec<GroupDead>> {
    let p = params.into_inner();
    engine
        .read("group_dead_list", move |conn| {
            conn.prepare_cached(&format!(
            "SELECT {DEAD_COLUMNS} FROM __alkstore_group_dead WHERE group_name = ?1 AND id > ?2 \
             ORDER BY id LIMIT ?3"
        ))
            .and_then(|mut s| {
                s.query_map(params![p.group, p.after, p.limit], dead)?
                    .collect()
            })
            .map_err(db("group_dead_list"))
        })
        .await
}

/// The driver's `group_dead_requeue`: mark dead letters for another try.
pub(super) async fn group_dead_requeue(
    engine: &SqliteEngine,
    params: Checked<GroupDeadRequeueParams>,
) -> Result<u64> {
    let p = params.into_inner();
    engine
        .on_dead_letters(
            "group_dead_requeue",
            "UPDATE __alkstore_group_dead SET requeued = 1 WHERE group_name = ?1 \
         AND (?2 OR id IN (SELECT value FROM json_each(?3)))",
            p.group,
            &p.offsets,
        )
        .await
}

/// The driver's `group_dead_purge`: delete dead letters.
pub(super) async fn group_dead_purge(
    engine: &SqliteEngine,
    params: Checked<GroupDeadPurgeParams>,
) -> Result<u64> {
    let p = params.into_inner();
    engine
        .on_dead_letters(
            "group_dead_purge",
            "DELETE FROM __alkstore_group_dead WHERE group_name = ?1 \
         AND (?2 OR id IN (SELECT value FROM json_each(?3)))",
            p.group,
            &p.offsets,
        )
        .await
}

/// The driver's `group_dead_take`: the requeued dead letters of the
/// worker's buckets, taken for another try.
pub(super) async fn group_dead_take(
    engine: &SqliteEngine,
    params: Checked<GroupDeadTakeParams>,
) -> Result<Vec<GroupDead>> {
    let p = params.into_inner();
    // Readers call this whenever they catch up: look first on a read
    // connection, so the usual "nothing requeued" takes no write lock.
    let group = p.group.clone();
    let any = engine
        .read("group_dead_take", move |conn| {
            conn.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM __alkstore_group_dead \
                 WHERE group_name = ?1 AND requeued = 1)",
            )
            .and_then(|mut s| s.query_row([&group], |r| r.get::<_, bool>(0)))
            .map_err(db("group_dead_take"))
        })
        .await?;
    if !any {
        return Ok(Vec::new());
    }
    engine
        .inner
        .writer
        .write("group_dead_take", move |st| {
            let mut taken: Vec<GroupDead> = st
                .conn
                .prepare_cached(&format!(
                    "UPDATE __alkstore_group_dead SET requeued = 0 \
                     WHERE group_name = ?1 AND id IN ( \
                       SELECT d.id FROM __alkstore_group_dead d \
                       JOIN __alkstore_group_bucket b \
                         ON b.group_name = d.group_name AND b.bucket = d.bucket \
                       WHERE d.group_name = ?1 AND d.requeued = 1 AND b.owner = ?2 \
                       ORDER BY d.id LIMIT ?3) \
                     RETURNING {DEAD_COLUMNS}"
                ))
                .and_then(|mut s| {
                    s.query_map(params![p.group, p.worker, p.limit], dead)?
                        .collect()
                })
                .map_err(db("group_dead_take"))?;
            taken.sort_by_key(|d| d.offset);
            Ok(taken)
        })
        .await
}

/// The driver's `group_dead_resolve`: drop a dead letter once handled,
/// under a held lease.
pub(super) async fn group_dead_resolve(
    engine: &SqliteEngine,
    params: Checked<GroupDeadResolveParams>,
) -> Result<()> {
    let p = params.into_inner();
    engine
        .inner
        .writer
        .write("group_dead_resolve", move |st| {
            let op = "group_dead_resolve";
            if !holds(&st.conn, op, &p.group, p.bucket, &p.worker, p.epoch)? {
                return Err(fenced(&p.group, p.bucket, p.epoch));
            }
            st.conn
                .prepare_cached(
                    "DELETE FROM __alkstore_group_dead WHERE group_name = ?1 AND id = ?2",
                )
                .and_then(|mut s| s.execute(params![p.group, p.offset]))
                .map(|_| ())
                .map_err(db(op))
        })
        .await
}

impl SqliteEngine {
    /// Run `sql` (an UPDATE or a DELETE of `__alkstore_group_dead` taking
    /// the group as ?1, "all of it" as ?2 and the offsets as a JSON array as
    /// ?3) on `group`'s dead letters at `offsets` (empty: all); how many it
    /// touched.
    async fn on_dead_letters(
        &self,
        op: &'static str,
        sql: &'static str,
        group: String,
        offsets: &[i64],
    ) -> Result<u64> {
        let all = offsets.is_empty();
        let offsets = json_ids(offsets);
        self.inner
            .writer
            .write(op, move |st| {
                st.conn
                    .prepare_cached(sql)
                    .and_then(|mut s| s.execute(params![group, all, offsets]))
                    .map(|n| n as u64)
                    .map_err(db(op))
            })
            .await
    }
}

/// Offsets as a JSON array, for `json_each`.
fn json_ids(ids: &[i64]) -> String {
    let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
    format!("[{}]", ids.join(","))
}
