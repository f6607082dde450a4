//! Bucket leases and membership: create a group, claim, renew and release
//! buckets, leave, and resize (which needs every lease lapsed). Also the
//! lookups of a group and of a lease the other parts share.

use alkstore_core::group::{
    group_not_found, resize_refused, ttl_ms, BucketLease, GroupClaimParams, GroupEnsureParams,
    GroupLeaveParams, GroupReleaseParams, GroupRenewParams, GroupResize, GroupResizeParams,
    Renewal, HANDOFF_RETENTION,
};
use alkstore_core::validate::count;
use alkstore_core::{Checked, Error, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::{db, SqliteEngine};

fn lease(r: &rusqlite::Row<'_>) -> rusqlite::Result<BucketLease> {
    Ok(BucketLease {
        bucket: r.get(0)?,
        epoch: r.get(1)?,
        checkpoint: r.get(2)?,
        expires_at_ms: r.get(3)?,
    })
}

fn collect_leases(
    stmt: &mut rusqlite::CachedStatement<'_>,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<BucketLease>> {
    let mut leases: Vec<BucketLease> = stmt
        .query_map(params, lease)?
        .collect::<rusqlite::Result<_>>()?;
    leases.sort_by_key(|l| l.bucket);
    Ok(leases)
}

/// Whether `worker` holds `bucket` of `group` under `epoch`.
pub(super) fn holds(
    conn: &Connection,
    op: &'static str,
    group: &str,
    bucket: u32,
    worker: &str,
    epoch: i64,
) -> Result<bool> {
    conn.prepare_cached(
        "SELECT 1 FROM __alkstore_group_bucket WHERE group_name = ?1 AND bucket = ?2 \
         AND owner = ?3 AND epoch = ?4",
    )
    .and_then(|mut s| s.exists(params![group, bucket, worker, epoch]))
    .map_err(db(op))
}

/// The group's (stream, N), if it exists.
pub(super) fn group_row(
    conn: &Connection,
    op: &'static str,
    group: &str,
) -> Result<Option<(String, u32)>> {
    conn.prepare_cached(
        "SELECT stream, buckets FROM __alkstore_group_bucket WHERE group_name = ?1 LIMIT 1",
    )
    .and_then(|mut s| {
        s.query_row([group], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
    })
    .map_err(db(op))
}

/// The driver's `group_ensure`: create the group's bucket rows, or check
/// that an existing group has the same stream and size.
pub(super) async fn group_ensure(
    engine: &SqliteEngine,
    params: Checked<GroupEnsureParams>,
) -> Result<()> {
    let p = params.into_inner();
    engine
        .inner
        .writer
        .write("group_ensure", move |st| {
            let op = "group_ensure";
            let conn = &st.conn;
            let existing: Vec<(u32, String)> = conn
                .prepare_cached(
                    "SELECT DISTINCT buckets, stream FROM __alkstore_group_bucket \
                     WHERE group_name = ?1",
                )
                .and_then(|mut s| {
                    s.query_map([&p.group], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect()
                })
                .map_err(db(op))?;
            if let Some((n, stream)) = existing
                .into_iter()
                .find(|(n, s)| *n != p.buckets || *s != p.stream)
            {
                return Err(Error::GroupMismatch {
                    group: p.group,
                    existing_buckets: n,
                    requested_buckets: p.buckets,
                    existing_stream: stream,
                    requested_stream: p.stream,
                });
            }
            let now = st.clock.now_ms();
            let mut insert = conn
                .prepare_cached(
                    "INSERT INTO __alkstore_group_bucket \
                       (group_name, bucket, buckets, stream, updated_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                )
                .map_err(db(op))?;
            for bucket in 0..p.buckets {
                insert
                    .execute(params![p.group, bucket, p.buckets, p.stream, now])
                    .map_err(db(op))?;
            }
            Ok(())
        })
        .await
}

/// The driver's `group_claim`: lease up to `max` free or lapsed buckets.
pub(super) async fn group_claim(
    engine: &SqliteEngine,
    params: Checked<GroupClaimParams>,
) -> Result<Vec<BucketLease>> {
    let p = params.into_inner();
    engine
        .inner
        .writer
        .write("group_claim", move |st| {
            let op = "group_claim";
            let now = st.clock.now_ms();
            // Each bucket taken, with how it came free: its handoff.
            let taken: Vec<(u32, Option<String>, String)> = st
                .conn
                .prepare_cached(
                    "SELECT bucket, COALESCE(owner, last_owner), \
                       CASE WHEN epoch = 0 THEN 'first' \
                            WHEN owner IS NULL THEN COALESCE(released_how, 'rebalance') \
                            ELSE 'lapse' END \
                     FROM __alkstore_group_bucket WHERE group_name = ?1 \
                       AND (owner IS NULL OR lease_expires_at <= ?2) \
                     ORDER BY bucket LIMIT ?3",
                )
                .and_then(|mut s| {
                    s.query_map(params![p.group, now, p.max], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                    })?
                    .collect()
                })
                .map_err(db(op))?;
            let mut leases = Vec::with_capacity(taken.len());
            for (bucket, from, cause) in taken {
                let lease = st
                    .conn
                    .prepare_cached(
                        "UPDATE __alkstore_group_bucket SET owner = ?3, last_owner = ?3, \
                           released_how = NULL, lease_expires_at = ?4 + ?5, heartbeat_at = ?4, \
                           epoch = epoch + 1, updated_at = ?4 \
                         WHERE group_name = ?1 AND bucket = ?2 \
                         RETURNING bucket, epoch, checkpoint, lease_expires_at",
                    )
                    .and_then(|mut s| {
                        s.query_row(
                            params![p.group, bucket, p.worker, now, ttl_ms(p.ttl)],
                            lease,
                        )
                    })
                    .map_err(db(op))?;
                st.conn
                    .prepare_cached(
                        "INSERT INTO __alkstore_group_handoff \
                           (group_name, bucket, epoch, from_worker, to_worker, cause, at) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    )
                    .and_then(|mut s| {
                        s.execute(params![
                            p.group,
                            bucket,
                            lease.epoch,
                            from,
                            p.worker,
                            cause,
                            now
                        ])
                    })
                    .map_err(db(op))?;
                st.conn
                    .prepare_cached(
                        "INSERT INTO __alkstore_group_handoff_total (group_name, cause, n) \
                         VALUES (?1, ?2, 1) \
                         ON CONFLICT (group_name, cause) DO UPDATE SET n = n + 1",
                    )
                    .and_then(|mut s| s.execute(params![p.group, cause]))
                    .map_err(db(op))?;
                leases.push(lease);
            }
            if !leases.is_empty() {
                st.conn
                    .prepare_cached(
                        "DELETE FROM __alkstore_group_handoff WHERE group_name = ?1 AND at < ?2",
                    )
                    .and_then(|mut s| s.execute(params![p.group, now - ttl_ms(HANDOFF_RETENTION)]))
                    .map_err(db(op))?;
            }
            Ok(leases)
        })
        .await
}

/// The driver's `group_renew`: extend the worker's leases and membership;
/// what it holds, and how many workers are live.
pub(super) async fn group_renew(
    engine: &SqliteEngine,
    params: Checked<GroupRenewParams>,
) -> Result<Renewal> {
    let p = params.into_inner();
    engine.inner
        .writer
        .write("group_renew", move |st| {
            let op = "group_renew";
            let now = st.clock.now_ms();
            let Some((_, buckets)) = group_row(&st.conn, op, &p.group)? else {
                return Err(group_not_found(&p.group));
            };
            let held = st
                .conn
                .prepare_cached(
                    "UPDATE __alkstore_group_bucket SET lease_expires_at = ?3 + ?4, \
                       heartbeat_at = ?3, updated_at = ?3 \
                     WHERE group_name = ?1 AND owner = ?2 \
                     RETURNING bucket, epoch, checkpoint, lease_expires_at",
                )
                .and_then(|mut s| {
                    collect_leases(&mut s, params![p.group, p.worker, now, ttl_ms(p.ttl)])
                })
                .map_err(db(op))?;
            // Membership: this worker's row renewed, lapsed ones dropped.
            st.conn
                .prepare_cached(
                    "INSERT INTO __alkstore_group_member (group_name, worker, expires_at) \
                     VALUES (?1, ?2, ?3 + ?4) ON CONFLICT (group_name, worker) \
                     DO UPDATE SET expires_at = excluded.expires_at",
                )
                .and_then(|mut s| s.execute(params![p.group, p.worker, now, ttl_ms(p.ttl)]))
                .map_err(db(op))?;
            st.conn
                .prepare_cached(
                    "DELETE FROM __alkstore_group_member WHERE group_name = ?1 AND expires_at <= ?2",
                )
                .and_then(|mut s| s.execute(params![p.group, now]))
                .map_err(db(op))?;
            let live_workers: u32 = st
                .conn
                .prepare_cached(
                    "SELECT COUNT(*) FROM __alkstore_group_member WHERE group_name = ?1",
                )
                .and_then(|mut s| s.query_row([&p.group], |r| r.get(0)))
                .map_err(db(op))?;
            let next_lapse_in_ms: Option<i64> = st
                .conn
                .prepare_cached(
                    "SELECT MIN(lease_expires_at) - ?3 FROM __alkstore_group_bucket \
                     WHERE group_name = ?1 AND owner <> ?2 AND lease_expires_at > ?3",
                )
                .and_then(|mut s| s.query_row(params![p.group, p.worker, now], |r| r.get(0)))
                .map_err(db(op))?;
            Ok(Renewal {
                held,
                live_workers,
                buckets,
                next_lapse_in_ms,
            })
        })
        .await
}

/// The driver's `group_release`: give buckets up; how many were held.
pub(super) async fn group_release(
    engine: &SqliteEngine,
    params: Checked<GroupReleaseParams>,
) -> Result<u64> {
    let p = params.into_inner();
    engine
        .inner
        .writer
        .write("group_release", move |st| {
            let now = st.clock.now_ms();
            let mut released = 0;
            let mut stmt = st
                .conn
                .prepare_cached(
                    "UPDATE __alkstore_group_bucket SET owner = NULL, \
                       lease_expires_at = NULL, released_how = 'rebalance', updated_at = ?4 \
                     WHERE group_name = ?1 AND owner = ?2 AND bucket = ?3",
                )
                .map_err(db("group_release"))?;
            for bucket in &p.buckets {
                released += stmt
                    .execute(params![p.group, p.worker, bucket, now])
                    .map_err(db("group_release"))? as u64;
            }
            Ok(released)
        })
        .await
}

/// The driver's `group_leave`: give every bucket up and leave the group.
pub(super) async fn group_leave(
    engine: &SqliteEngine,
    params: Checked<GroupLeaveParams>,
) -> Result<u64> {
    let p = params.into_inner();
    engine
        .inner
        .writer
        .write("group_leave", move |st| {
            let op = "group_leave";
            let released = st
                .conn
                .prepare_cached(
                    "UPDATE __alkstore_group_bucket SET owner = NULL, \
                       lease_expires_at = NULL, released_how = 'leave', updated_at = ?3 \
                     WHERE group_name = ?1 AND owner = ?2",
                )
                .and_then(|mut s| s.execute(params![p.group, p.worker, st.clock.now_ms()]))
                .map_err(db(op))?;
            st.conn
                .prepare_cached(
                    "DELETE FROM __alkstore_group_member WHERE group_name = ?1 AND worker = ?2",
                )
                .and_then(|mut s| s.execute(params![p.group, p.worker]))
                .map_err(db(op))?;
            Ok(released as u64)
        })
        .await
}

/// The driver's `group_resize`: a new number of buckets, every checkpoint
/// rewound to the lowest; refused while a lease is live.
pub(super) async fn group_resize(
    engine: &SqliteEngine,
    params: Checked<GroupResizeParams>,
) -> Result<GroupResize> {
    let p = params.into_inner();
    engine
        .inner
        .writer
        .write("group_resize", move |st| {
            let op = "group_resize";
            let now = st.clock.now_ms();
            let facts: (Option<u32>, Option<String>, u64, Option<i64>, Option<i64>) = st
                .conn
                .prepare_cached(
                    "SELECT MAX(buckets), MAX(stream), \
                       SUM(owner IS NOT NULL AND lease_expires_at > ?2), \
                       MIN(checkpoint), MAX(epoch) \
                     FROM __alkstore_group_bucket WHERE group_name = ?1",
                )
                .and_then(|mut s| {
                    s.query_row(params![p.group, now], |r| {
                        Ok((
                            r.get(0)?,
                            r.get(1)?,
                            r.get::<_, Option<i64>>(2)?.map_or(0, count),
                            r.get(3)?,
                            r.get(4)?,
                        ))
                    })
                })
                .map_err(db(op))?;
            let (Some(from), Some(stream), live, Some(rewound_to), Some(epoch)) = facts else {
                return Err(group_not_found(&p.group));
            };
            if live > 0 {
                return Err(resize_refused(&p.group, live));
            }
            st.conn
                .prepare_cached("DELETE FROM __alkstore_group_bucket WHERE group_name = ?1")
                .and_then(|mut s| s.execute([&p.group]))
                .map_err(db(op))?;
            let mut insert = st
                .conn
                .prepare_cached(
                    "INSERT INTO __alkstore_group_bucket (group_name, bucket, buckets, \
                       stream, epoch, checkpoint, updated_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(db(op))?;
            for bucket in 0..p.buckets {
                insert
                    .execute(params![
                        p.group, bucket, p.buckets, stream, epoch, rewound_to, now
                    ])
                    .map_err(db(op))?;
            }
            Ok(GroupResize {
                from,
                to: p.buckets,
                rewound_to,
            })
        })
        .await
}
