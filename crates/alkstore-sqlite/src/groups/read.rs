//! Reading a group: the events of some buckets, each bucket's lease and
//! lag, every group at a glance, and the bucket counts of a group.

use alkstore_core::group::BucketCount;
use alkstore_core::group::{
    group_not_found, BucketEvent, BucketStatus, GroupInfo, GroupReadParams, GroupStatus,
    GroupStatusParams,
};
use alkstore_core::stream::Event;
use alkstore_core::validate::count;
use alkstore_core::{Checked, Result};
use rusqlite::params;

use super::hash::bucket_expr;
use super::leases::group_row;
use crate::{db, SqliteEngine};

/// The driver's `group_read`: the next events of the wanted buckets.
pub(super) async fn group_read(
    engine: &SqliteEngine,
    params: Checked<GroupReadParams>,
) -> Result<Vec<BucketEvent>> {
    let p = params.into_inner();
    engine
        .read("group_read", move |conn| {
            let op = "group_read";
            let Some((stream, buckets)) = group_row(conn, op, &p.group)? else {
                return Ok(Vec::new());
            };
            alkstore_core::group::check_buckets(&p.group, &p.buckets, buckets)?;
            // The wanted buckets as a JSON array, unpacked by json_each: one
            // statement whatever their number.
            let wanted = format!(
                "[{}]",
                p.buckets
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let sql = format!(
                "SELECT e.id, e.key, e.payload, e.created_at, {} AS b FROM __alkstore_event e \
             WHERE e.stream = ?1 AND e.id > ?2 AND b IN (SELECT value FROM json_each(?4)) \
             ORDER BY e.id LIMIT ?5",
                bucket_expr("?3")
            );
            let name: std::sync::Arc<str> = stream.as_str().into();
            conn.prepare_cached(&sql)
                .and_then(|mut s| {
                    s.query_map(params![stream, p.after, buckets, wanted, p.limit], |r| {
                        Ok(BucketEvent {
                            bucket: r.get(4)?,
                            event: Event {
                                offset: r.get(0)?,
                                stream: name.clone(),
                                key: r.get(1)?,
                                payload: r.get(2)?,
                                created_at: r.get(3)?,
                            },
                        })
                    })?
                    .collect()
                })
                .map_err(db(op))
        })
        .await
}

/// The driver's `group_status`: each bucket's lease, checkpoint and
/// (when asked) lag.
pub(super) async fn group_status(
    engine: &SqliteEngine,
    params: Checked<GroupStatusParams>,
) -> Result<GroupStatus> {
    let p = params.into_inner();
    let now = engine.inner.clock.now_ms();
    engine
        .read("group_status", move |conn| {
            let op = "group_status";
            let Some((stream, _)) = group_row(conn, op, &p.group)? else {
                return Err(group_not_found(&p.group));
            };
            let lag = if p.lag {
                format!(
                    "(SELECT COUNT(*) FROM __alkstore_event e WHERE e.stream = g.stream \
                   AND e.id > g.checkpoint AND {} = g.bucket)",
                    bucket_expr("g.buckets")
                )
            } else {
                "0".to_string()
            };
            let sql = format!(
                "SELECT g.bucket, g.owner, g.epoch, g.lease_expires_at, g.checkpoint, {lag} \
             FROM __alkstore_group_bucket g WHERE g.group_name = ?1 ORDER BY g.bucket"
            );
            let buckets = conn
                .prepare_cached(&sql)
                .and_then(|mut s| {
                    s.query_map([&p.group], |r| {
                        let expires_at_ms: Option<i64> = r.get(3)?;
                        Ok(BucketStatus {
                            bucket: r.get(0)?,
                            owner: r.get(1)?,
                            epoch: r.get(2)?,
                            expires_at_ms,
                            expired: expires_at_ms.is_some_and(|t| t <= now),
                            checkpoint: r.get(4)?,
                            lag: count(r.get(5)?),
                        })
                    })?
                    .collect()
                })
                .map_err(db(op))?;
            Ok(GroupStatus {
                group: p.group,
                stream,
                buckets,
            })
        })
        .await
}

/// The driver's `group_list`: every group, with its live owners, workers
/// and dead letters.
pub(super) async fn group_list(engine: &SqliteEngine) -> Result<Vec<GroupInfo>> {
    let now = engine.inner.clock.now_ms();
    engine
        .read("group_list", move |conn| {
            conn.prepare_cached(
                "SELECT g.group_name, g.stream, MAX(g.buckets), \
               COUNT(DISTINCT CASE WHEN g.lease_expires_at > ?1 THEN g.owner END), \
               (SELECT COUNT(*) FROM __alkstore_group_member m \
                WHERE m.group_name = g.group_name AND m.expires_at > ?1), \
               (SELECT COUNT(*) FROM __alkstore_group_dead d WHERE d.group_name = g.group_name) \
             FROM __alkstore_group_bucket g GROUP BY g.group_name, g.stream ORDER BY g.group_name",
            )
            .and_then(|mut s| {
                s.query_map([now], |r| {
                    Ok(GroupInfo {
                        group: r.get(0)?,
                        stream: r.get(1)?,
                        buckets: r.get(2)?,
                        live_owners: r.get(3)?,
                        live_workers: r.get(4)?,
                        dead: r.get::<_, i64>(5).map(count)?,
                    })
                })?
                .collect()
            })
            .map_err(db("group_list"))
        })
        .await
}

/// The driver's `group_counts`: how many bucket rows the group has per
/// bucket count.
pub(super) async fn group_counts(
    engine: &SqliteEngine,
    params: Checked<GroupStatusParams>,
) -> Result<Vec<BucketCount>> {
    let p = params.into_inner();
    engine
        .read("group_counts", move |conn| {
            conn.prepare_cached(
                "SELECT buckets, COUNT(*) FROM __alkstore_group_bucket WHERE group_name = ?1 \
             GROUP BY buckets ORDER BY buckets",
            )
            .and_then(|mut s| {
                s.query_map([&p.group], |r| {
                    Ok(BucketCount {
                        buckets: r.get(0)?,
                        rows: count(r.get(1)?),
                    })
                })?
                .collect()
            })
            .map_err(db("group_counts"))
        })
        .await
}

/// The driver's `group_handoffs`: the latest handoffs, newest first, and
/// the counts by cause.
pub(super) async fn group_handoffs(
    engine: &SqliteEngine,
    params: Checked<alkstore_core::group::GroupHandoffsParams>,
) -> Result<alkstore_core::group::GroupHandoffs> {
    use alkstore_core::group::{GroupHandoffs, Handoff, HandoffCause};
    let p = params.into_inner();
    engine
        .read("group_handoffs", move |conn| {
            let op = "group_handoffs";
            let recent = conn
                .prepare_cached(
                    "SELECT bucket, epoch, from_worker, to_worker, cause, at \
                     FROM __alkstore_group_handoff WHERE group_name = ?1 \
                     ORDER BY at DESC, rowid DESC LIMIT ?2",
                )
                .and_then(|mut s| {
                    s.query_map(rusqlite::params![p.group, p.limit], |r| {
                        let cause: String = r.get(4)?;
                        Ok(Handoff {
                            bucket: r.get(0)?,
                            epoch: r.get(1)?,
                            from_worker: r.get(2)?,
                            to_worker: r.get(3)?,
                            cause: HandoffCause::parse(&cause).unwrap_or(HandoffCause::Lapse),
                            at_ms: r.get(5)?,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(db(op))?;
            let totals = conn
                .prepare_cached(
                    "SELECT cause, n FROM __alkstore_group_handoff_total \
                     WHERE group_name = ?1 ORDER BY cause",
                )
                .and_then(|mut s| {
                    s.query_map([&p.group], |r| {
                        let cause: String = r.get(0)?;
                        Ok((cause, r.get::<_, i64>(1)?))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(db(op))?
                .into_iter()
                .filter_map(|(c, n)| Some((HandoffCause::parse(&c)?, count(n))))
                .collect();
            Ok(GroupHandoffs { recent, totals })
        })
        .await
}
