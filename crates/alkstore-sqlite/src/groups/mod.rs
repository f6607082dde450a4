//! The consumer-group area on SQLite: its SQL functions and statements.

use alkstore_core::group::{
    fenced, hashtextextended, resize_refused, ttl_ms, BucketEvent, BucketLease, BucketStatus,
    GroupCheckpointParams, GroupClaimParams, GroupDead, GroupDeadAddParams, GroupDeadListParams,
    GroupDeadPurgeParams, GroupDeadRequeueParams, GroupDeadResolveParams, GroupDeadTakeParams,
    GroupDriver, GroupEnsureParams, GroupInfo, GroupLeaveParams, GroupReadParams,
    GroupReleaseParams, GroupRenewParams, GroupResize, GroupResizeParams, GroupStatus,
    GroupStatusParams, Renewal,
};
use alkstore_core::stream::Event;
use alkstore_core::validate::count;
use alkstore_core::{Checked, Error, Result};
use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OptionalExtension};

use crate::{db, SqliteEngine};

/// Register `hashtextextended(text, seed)` — PostgreSQL's function, bit for
/// bit — so bucket assignment is the same SQL on both engines. A NULL key
/// or seed gives NULL, as in PostgreSQL; a blob is hashed by its bytes.
pub(crate) fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        "hashtextextended",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let seed = match ctx.get_raw(1) {
                ValueRef::Null => return Ok(None),
                ValueRef::Integer(s) => s,
                _ => {
                    return Err(rusqlite::Error::UserFunctionError(
                        "hashtextextended: the seed must be an integer".into(),
                    ))
                }
            };
            Ok(match ctx.get_raw(0) {
                ValueRef::Null => None,
                ValueRef::Text(b) | ValueRef::Blob(b) => Some(hashtextextended(b, seed)),
                ValueRef::Integer(_) | ValueRef::Real(_) => {
                    // PostgreSQL would hash the value's text form.
                    let text: String = ctx.get(0)?;
                    Some(hashtextextended(text.as_bytes(), seed))
                }
            })
        },
    )
}

/// The bucket of an event row `e` in a group of `buckets` buckets: the SQL
/// both engines share (PostgreSQL's own hash; keyless events by offset),
/// on the key's hash stored at publish (`key_hash`), so a scan hashes
/// nothing — or computed, for a row written without it (by an older
/// process that opened the file before it migrated).
fn bucket_expr(buckets: &str) -> String {
    format!(
        "(CASE WHEN e.key IS NULL THEN e.id % {buckets} \
         ELSE ((COALESCE(e.key_hash, hashtextextended(e.key, 0)) % {buckets}) + {buckets}) \
           % {buckets} END)"
    )
}

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

/// Whether `worker` holds `bucket` of `group` under `epoch`.
fn holds(
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
fn group_row(conn: &Connection, op: &'static str, group: &str) -> Result<Option<(String, u32)>> {
    conn.prepare_cached(
        "SELECT stream, buckets FROM __alkstore_group_bucket WHERE group_name = ?1 LIMIT 1",
    )
    .and_then(|mut s| {
        s.query_row([group], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
    })
    .map_err(db(op))
}

fn not_found(group: &str) -> Error {
    Error::NotFound {
        what: format!("group {group:?}"),
        detail: "no worker or command has created it".into(),
    }
}

/// Save a bucket's checkpoint at `now_ms` under the lease epoch the caller
/// holds ([`NotHeld`](Error::NotHeld) when the bucket is not its under
/// that epoch): monotone, never beyond the stream's head
/// ([`InvalidInput`](Error::InvalidInput)). Shared by the writer and
/// transactions.
pub(crate) fn checkpoint_in(
    conn: &Connection,
    p: &GroupCheckpointParams,
    now_ms: i64,
) -> Result<i64> {
    let op = "group_checkpoint";
    let row: Option<(Option<String>, i64, i64, String)> = conn
        .prepare_cached(
            "SELECT owner, epoch, checkpoint, stream FROM __alkstore_group_bucket \
             WHERE group_name = ?1 AND bucket = ?2",
        )
        .and_then(|mut s| {
            s.query_row(params![p.group, p.bucket], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()
        })
        .map_err(db(op))?;
    let Some((owner, epoch, saved, stream)) = row else {
        return Err(fenced(&p.group, p.bucket, p.epoch));
    };
    if owner.as_deref() != Some(p.worker.as_str()) || epoch != p.epoch {
        return Err(fenced(&p.group, p.bucket, p.epoch));
    }
    if saved >= p.offset {
        return Ok(saved);
    }
    let head = crate::streams::head_bound(conn, op, &stream)?.unwrap_or(0);
    if p.offset > head {
        return Err(alkstore_core::stream::beyond_head(p.offset, &stream, head));
    }
    conn.prepare_cached(
        "UPDATE __alkstore_group_bucket SET checkpoint = ?3, updated_at = ?4 \
         WHERE group_name = ?1 AND bucket = ?2",
    )
    .and_then(|mut s| s.execute(params![p.group, p.bucket, p.offset, now_ms]))
    .map_err(db(op))?;
    Ok(p.offset)
}

impl GroupDriver for SqliteEngine {
    async fn group_ensure(&self, params: Checked<GroupEnsureParams>) -> Result<()> {
        let p = params.into_inner();
        self.inner
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

    async fn group_claim(&self, params: Checked<GroupClaimParams>) -> Result<Vec<BucketLease>> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("group_claim", move |st| {
                let now = st.clock.now_ms();
                st.conn
                    .prepare_cached(
                        "UPDATE __alkstore_group_bucket SET owner = ?2, \
                           lease_expires_at = ?3 + ?4, heartbeat_at = ?3, \
                           epoch = epoch + 1, updated_at = ?3 \
                         WHERE group_name = ?1 AND bucket IN ( \
                           SELECT bucket FROM __alkstore_group_bucket WHERE group_name = ?1 \
                             AND (owner IS NULL OR lease_expires_at <= ?3) \
                           ORDER BY bucket LIMIT ?5) \
                         RETURNING bucket, epoch, checkpoint, lease_expires_at",
                    )
                    .and_then(|mut s| {
                        collect_leases(
                            &mut s,
                            params![p.group, p.worker, now, ttl_ms(p.ttl), p.max],
                        )
                    })
                    .map_err(db("group_claim"))
            })
            .await
    }

    async fn group_renew(&self, params: Checked<GroupRenewParams>) -> Result<Renewal> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("group_renew", move |st| {
                let op = "group_renew";
                let now = st.clock.now_ms();
                let Some((_, buckets)) = group_row(&st.conn, op, &p.group)? else {
                    return Err(not_found(&p.group));
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

    async fn group_release(&self, params: Checked<GroupReleaseParams>) -> Result<u64> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("group_release", move |st| {
                let now = st.clock.now_ms();
                let mut released = 0;
                let mut stmt = st
                    .conn
                    .prepare_cached(
                        "UPDATE __alkstore_group_bucket SET owner = NULL, \
                           lease_expires_at = NULL, updated_at = ?4 \
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

    async fn group_checkpoint(&self, params: Checked<GroupCheckpointParams>) -> Result<i64> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("group_checkpoint", move |st| {
                checkpoint_in(&st.conn, &p, st.clock.now_ms())
            })
            .await
    }

    async fn group_read(&self, params: Checked<GroupReadParams>) -> Result<Vec<BucketEvent>> {
        let p = params.into_inner();
        self.read("group_read", move |conn| {
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

    async fn group_status(&self, params: Checked<GroupStatusParams>) -> Result<GroupStatus> {
        let p = params.into_inner();
        let now = self.inner.clock.now_ms();
        self.read("group_status", move |conn| {
            let op = "group_status";
            let Some((stream, _)) = group_row(conn, op, &p.group)? else {
                return Err(not_found(&p.group));
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

    async fn group_list(&self) -> Result<Vec<GroupInfo>> {
        let now = self.inner.clock.now_ms();
        self.read("group_list", move |conn| {
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

    async fn group_leave(&self, params: Checked<GroupLeaveParams>) -> Result<u64> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("group_leave", move |st| {
                let op = "group_leave";
                let released = st
                    .conn
                    .prepare_cached(
                        "UPDATE __alkstore_group_bucket SET owner = NULL, \
                           lease_expires_at = NULL, updated_at = ?3 \
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

    async fn group_dead_add(&self, params: Checked<GroupDeadAddParams>) -> Result<()> {
        let p = params.into_inner();
        self.inner
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

    async fn group_dead_list(
        &self,
        params: Checked<GroupDeadListParams>,
    ) -> Result<Vec<GroupDead>> {
        let p = params.into_inner();
        self.read("group_dead_list", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {DEAD_COLUMNS} FROM __alkstore_group_dead WHERE group_name = ?1 AND id > ?2 \
                 ORDER BY id LIMIT ?3"
            ))
            .and_then(|mut s| s.query_map(params![p.group, p.after, p.limit], dead)?.collect())
            .map_err(db("group_dead_list"))
        })
        .await
    }

    async fn group_resize(&self, params: Checked<GroupResizeParams>) -> Result<GroupResize> {
        let p = params.into_inner();
        self.inner
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
                    return Err(not_found(&p.group));
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

    async fn group_dead_requeue(&self, params: Checked<GroupDeadRequeueParams>) -> Result<u64> {
        let p = params.into_inner();
        self.on_dead_letters(
            "group_dead_requeue",
            "UPDATE __alkstore_group_dead SET requeued = 1 WHERE group_name = ?1 \
             AND (?2 OR id IN (SELECT value FROM json_each(?3)))",
            p.group,
            &p.offsets,
        )
        .await
    }

    async fn group_dead_purge(&self, params: Checked<GroupDeadPurgeParams>) -> Result<u64> {
        let p = params.into_inner();
        self.on_dead_letters(
            "group_dead_purge",
            "DELETE FROM __alkstore_group_dead WHERE group_name = ?1 \
             AND (?2 OR id IN (SELECT value FROM json_each(?3)))",
            p.group,
            &p.offsets,
        )
        .await
    }

    async fn group_dead_take(
        &self,
        params: Checked<GroupDeadTakeParams>,
    ) -> Result<Vec<GroupDead>> {
        let p = params.into_inner();
        // Readers call this whenever they catch up: look first on a read
        // connection, so the usual "nothing requeued" takes no write lock.
        let group = p.group.clone();
        let any = self
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
        self.inner
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

    async fn group_dead_resolve(&self, params: Checked<GroupDeadResolveParams>) -> Result<()> {
        let p = params.into_inner();
        self.inner
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

    async fn group_counts(&self, params: Checked<GroupStatusParams>) -> Result<Vec<(u32, u64)>> {
        let p = params.into_inner();
        self.read("group_counts", move |conn| {
            conn.prepare_cached(
                "SELECT buckets, COUNT(*) FROM __alkstore_group_bucket WHERE group_name = ?1 \
                 GROUP BY buckets ORDER BY buckets",
            )
            .and_then(|mut s| {
                s.query_map([&p.group], |r| Ok((r.get(0)?, count(r.get(1)?))))?
                    .collect()
            })
            .map_err(db("group_counts"))
        })
        .await
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The SQL function gives the values PostgreSQL gives (read off
    /// PostgreSQL 15), and the bucket expression of consumer groups works
    /// unchanged.
    #[test]
    fn hashtextextended_in_sql_matches_postgresql() {
        let conn = Connection::open_in_memory().expect("open");
        register_functions(&conn).expect("register");
        let h: i64 = conn
            .query_row("SELECT hashtextextended('hello world!x', -5)", [], |r| {
                r.get(0)
            })
            .expect("hash");
        assert_eq!(h, -3_006_652_675_899_631_702);
        let h: i64 = conn
            .query_row("SELECT hashtextextended('ü€𝄞', 123)", [], |r| {
                r.get(0)
            })
            .expect("hash");
        assert_eq!(h, 1_553_458_323_974_915_005);
        let null: Option<i64> = conn
            .query_row("SELECT hashtextextended(NULL, 0)", [], |r| r.get(0))
            .expect("null");
        assert_eq!(null, None);
        let bucket: i64 = conn
            .query_row(
                "SELECT (((hashtextextended(?1, 0) % ?2) + ?2) % ?2)",
                rusqlite::params!["customer-42", 16],
                |r| r.get(0),
            )
            .expect("bucket");
        assert_eq!(
            bucket,
            i64::from(alkstore_core::group::bucket_of(b"customer-42", 16))
        );
    }
}
