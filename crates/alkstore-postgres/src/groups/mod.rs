//! The consumer-group area on PostgreSQL: its operations (here) and
//! statement texts (`sql.rs`).

pub(crate) mod sql;

use alkstore_core::group::BucketCount;
use alkstore_core::group::{
    checkpoint_fence, fenced, group_not_found, resize_refused, ttl_ms, BucketEvent, BucketLease,
    BucketStatus, GroupCheckpointParams, GroupClaimParams, GroupDead, GroupDeadAddParams,
    GroupDeadListParams, GroupDeadPurgeParams, GroupDeadRequeueParams, GroupDeadResolveParams,
    GroupDeadTakeParams, GroupDriver, GroupEnsureParams, GroupInfo, GroupLeaveParams,
    GroupReadParams, GroupReleaseParams, GroupRenewParams, GroupResize, GroupResizeParams,
    GroupStatus, GroupStatusParams, Renewal,
};
use alkstore_core::stream::Event;
use alkstore_core::validate::count;
use alkstore_core::{Checked, Error, Result};
use tokio_postgres::Row;

use crate::conn::{fetch_opt, Exec};
use crate::{db, PgEngine};

/// A stored bucket number or count (0..=4096 by the table's checks).
fn small(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

/// A bucket number, count or attempt for an `INT` column (validated far
/// below `i32::MAX`).
fn int(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn lease(r: &Row) -> BucketLease {
    BucketLease {
        bucket: small(r.get(0)),
        epoch: r.get(1),
        checkpoint: r.get(2),
        expires_at_ms: r.get(3),
    }
}

fn leases(rows: &[Row]) -> Vec<BucketLease> {
    let mut leases: Vec<BucketLease> = rows.iter().map(lease).collect();
    leases.sort_by_key(|l| l.bucket);
    leases
}

/// A dead letter read with `sql::DEAD_COLUMNS`.
fn dead(r: &Row) -> GroupDead {
    GroupDead {
        offset: r.get(0),
        bucket: small(r.get(1)),
        stream: r.get(2),
        key: r.get(3),
        payload: r.get(4),
        error: r.get(5),
        attempts: u32::try_from(r.get::<_, i32>(6)).unwrap_or(0),
        failed_at: r.get(7),
        created_at: r.get(8),
        requeued: r.get(9),
    }
}

/// Save a bucket's checkpoint on `e` under the lease epoch the caller
/// holds: never backward, never past the stream's readable head. A lease
/// no longer held is [`Error::NotHeld`], found from the rows the statement
/// returns (no statement error, which would abort a transaction). The
/// statement locks the bucket's row (`FOR UPDATE`), so inside a
/// transaction no claim can take the bucket (claims skip locked rows), nor
/// a renewal or release change it, until the transaction ends.
pub(crate) async fn checkpoint_in<E: Exec + ?Sized>(
    e: &E,
    sql: &sql::GroupSql,
    now_ms: Option<i64>,
    p: &GroupCheckpointParams,
) -> Result<i64> {
    let bucket = int(p.bucket);
    let row = fetch_opt(
        e,
        "group_checkpoint",
        &sql.checkpoint,
        &[&now_ms, &p.group, &bucket, &p.worker, &p.epoch, &p.offset],
    )
    .await?;
    let Some(r) = row else {
        return Err(fenced(&p.group, p.bucket, p.epoch));
    };
    let (owner, epoch, saved): (Option<String>, i64, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
    if let Some(saved) = checkpoint_fence(p, Some((owner.as_deref(), epoch, saved)))? {
        return Ok(saved);
    }
    // The statement moved it, unless the offset is beyond the head.
    let (stream, head, moved): (String, i64, Option<i64>) = (r.get(3)?, r.get(4)?, r.get(5)?);
    match moved {
        Some(m) => Ok(m),
        None => Err(alkstore_core::stream::beyond_head(p.offset, &stream, head)),
    }
}

impl GroupDriver for PgEngine {
    async fn group_ensure(&self, params: Checked<GroupEnsureParams>) -> Result<()> {
        let p = params.into_inner();
        let op = "group_ensure";
        let sql = &self.inner.group_sql;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db(op))?;
        let on = self.on_tx(&tx);
        // Two workers ensuring different N at once: one waits, then sees
        // the other's rows and refuses.
        on.changed(op, &sql.lock, &[&self.inner.opts.schema, &p.group])
            .await?;
        let existing = on.rows(op, &sql.existing, &[&p.group]).await?;
        for r in &existing {
            let (n, stream): (i32, String) = (r.get(0), r.get(1));
            if small(n) != p.buckets || stream != p.stream {
                return Err(Error::GroupMismatch {
                    group: p.group,
                    existing_buckets: small(n),
                    requested_buckets: p.buckets,
                    existing_stream: stream,
                    requested_stream: p.stream,
                });
            }
        }
        let n = int(p.buckets);
        on.changed(
            op,
            &sql.insert,
            &[&self.now_ms_override(), &p.group, &n, &p.stream],
        )
        .await?;
        drop(existing);
        tx.commit().await.map_err(db(op))
    }

    async fn group_claim(&self, params: Checked<GroupClaimParams>) -> Result<Vec<BucketLease>> {
        let p = params.into_inner();
        let rows = self
            .query(
                "group_claim",
                &self.inner.group_sql.claim,
                &[
                    &self.now_ms_override(),
                    &p.group,
                    &p.worker,
                    &ttl_ms(p.ttl),
                    &i64::from(p.max),
                    &ttl_ms(alkstore_core::group::HANDOFF_RETENTION),
                ],
            )
            .await?;
        Ok(leases(&rows))
    }

    async fn group_renew(&self, params: Checked<GroupRenewParams>) -> Result<Renewal> {
        let p = params.into_inner();
        let op = "group_renew";
        let now = self.now_ms_override();
        let rows = self
            .query(
                op,
                &self.inner.group_sql.renew,
                &[&now, &p.group, &p.worker, &ttl_ms(p.ttl)],
            )
            .await?;
        let held = leases(&rows);
        let live = self
            .query(
                op,
                &self.inner.group_sql.live,
                &[&now, &p.group, &p.worker, &ttl_ms(p.ttl)],
            )
            .await?;
        let r = live.first().ok_or_else(|| Error::database(op, "no row"))?;
        let (live_workers, buckets, next_lapse_in_ms): (i32, Option<i32>, Option<i64>) =
            (r.get(0), r.get(1), r.get(2));
        let Some(buckets) = buckets else {
            return Err(group_not_found(&p.group));
        };
        Ok(Renewal {
            held,
            live_workers: small(live_workers),
            buckets: small(buckets),
            next_lapse_in_ms,
        })
    }

    async fn group_release(&self, params: Checked<GroupReleaseParams>) -> Result<u64> {
        let p = params.into_inner();
        let buckets: Vec<i32> = p.buckets.iter().map(|b| int(*b)).collect();
        let rows = self
            .query(
                "group_release",
                &self.inner.group_sql.release,
                &[&self.now_ms_override(), &p.group, &p.worker, &buckets],
            )
            .await?;
        Ok(rows.len() as u64)
    }

    async fn group_read(&self, params: Checked<GroupReadParams>) -> Result<Vec<BucketEvent>> {
        let p = params.into_inner();
        let buckets: Vec<i32> = p.buckets.iter().map(|b| int(*b)).collect();
        let rows = self
            .query(
                "group_read",
                &self.inner.group_sql.read,
                &[&p.group, &buckets, &p.after, &i64::from(p.limit)],
            )
            .await?;
        // Always a row: the group's N (NULL: no such group), then the
        // page's events, if any (a lone row without one: an empty page).
        let Some(n) = rows.first().and_then(|r| r.get::<_, Option<i32>>(0)) else {
            return Ok(Vec::new());
        };
        alkstore_core::group::check_buckets(&p.group, &p.buckets, small(n))?;
        let Some(stream) = rows.first().and_then(|r| r.get::<_, Option<&str>>(1)) else {
            return Ok(Vec::new());
        };
        let stream: std::sync::Arc<str> = stream.into();
        Ok(rows
            .iter()
            .map(|r| BucketEvent {
                bucket: small(r.get(6)),
                event: Event {
                    offset: r.get(2),
                    stream: stream.clone(),
                    key: r.get(3),
                    payload: r.get(4),
                    created_at: r.get(5),
                },
            })
            .collect())
    }

    async fn group_status(&self, params: Checked<GroupStatusParams>) -> Result<GroupStatus> {
        let p = params.into_inner();
        let rows = self
            .query(
                "group_status",
                if p.lag {
                    &self.inner.group_sql.status
                } else {
                    &self.inner.group_sql.status_no_lag
                },
                &[&self.now_ms_override(), &p.group],
            )
            .await?;
        let Some(first) = rows.first() else {
            return Err(group_not_found(&p.group));
        };
        let stream: String = first.get(6);
        let buckets = rows
            .iter()
            .map(|r| {
                let expires_at_ms: Option<i64> = r.get(3);
                let now: i64 = r.get(7);
                BucketStatus {
                    bucket: small(r.get(0)),
                    owner: r.get(1),
                    epoch: r.get(2),
                    expires_at_ms,
                    expired: expires_at_ms.is_some_and(|t| t <= now),
                    checkpoint: r.get(4),
                    lag: count(r.get(5)),
                }
            })
            .collect();
        Ok(GroupStatus {
            group: p.group,
            stream,
            buckets,
        })
    }

    async fn group_list(&self) -> Result<Vec<GroupInfo>> {
        let rows = self
            .query(
                "group_list",
                &self.inner.group_sql.list,
                &[&self.now_ms_override()],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| GroupInfo {
                group: r.get(0),
                stream: r.get(1),
                buckets: small(r.get(2)),
                live_owners: small(r.get(3)),
                live_workers: small(r.get(4)),
                dead: count(r.get(5)),
            })
            .collect())
    }

    async fn group_leave(&self, params: Checked<GroupLeaveParams>) -> Result<u64> {
        let p = params.into_inner();
        let rows = self
            .query(
                "group_leave",
                &self.inner.group_sql.leave,
                &[&self.now_ms_override(), &p.group, &p.worker],
            )
            .await?;
        Ok(rows.first().map_or(0, |r| count(r.get(0))))
    }

    async fn group_dead_add(&self, params: Checked<GroupDeadAddParams>) -> Result<()> {
        let p = params.into_inner();
        let bucket = int(p.bucket);
        let attempts = int(p.attempts);
        let rows = self
            .query(
                "group_dead_add",
                &self.inner.group_sql.dead_add,
                &[
                    &self.now_ms_override(),
                    &p.group,
                    &p.event.offset,
                    &bucket,
                    &&*p.event.stream,
                    &p.event.key,
                    &p.event.payload,
                    &p.error,
                    &attempts,
                    &p.worker,
                    &p.epoch,
                    &p.event.created_at,
                ],
            )
            .await?;
        if rows.is_empty() {
            return Err(fenced(&p.group, p.bucket, p.epoch));
        }
        Ok(())
    }

    async fn group_dead_list(
        &self,
        params: Checked<GroupDeadListParams>,
    ) -> Result<Vec<GroupDead>> {
        let p = params.into_inner();
        let rows = self
            .query(
                "group_dead_list",
                &self.inner.group_sql.dead_list,
                &[&p.group, &p.after, &i64::from(p.limit)],
            )
            .await?;
        Ok(rows.iter().map(dead).collect())
    }

    async fn group_resize(&self, params: Checked<GroupResizeParams>) -> Result<GroupResize> {
        let p = params.into_inner();
        let op = "group_resize";
        let sql = &self.inner.group_sql;
        let now = self.now_ms_override();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db(op))?;
        let on = self.on_tx(&tx);
        on.changed(op, &sql.lock, &[&self.inner.opts.schema, &p.group])
            .await?;
        let r = on.row(op, &sql.resize_facts, &[&now, &p.group]).await?;
        let facts: (Option<i32>, Option<String>, i64, Option<i64>, Option<i64>) =
            (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
        let (Some(from), Some(stream), live, Some(rewound_to), Some(epoch)) = facts else {
            return Err(group_not_found(&p.group));
        };
        if live > 0 {
            return Err(resize_refused(&p.group, count(live)));
        }
        on.changed(op, &sql.resize_delete, &[&p.group]).await?;
        let n = int(p.buckets);
        on.changed(
            op,
            &sql.resize_insert,
            &[&now, &p.group, &n, &stream, &epoch, &rewound_to],
        )
        .await?;
        tx.commit().await.map_err(db(op))?;
        Ok(GroupResize {
            from: small(from),
            to: p.buckets,
            rewound_to,
        })
    }

    async fn group_dead_requeue(&self, params: Checked<GroupDeadRequeueParams>) -> Result<u64> {
        let p = params.into_inner();
        let sql = &self.inner.group_sql.dead_requeue;
        self.execute("group_dead_requeue", sql, &[&p.group, &p.offsets])
            .await
    }

    async fn group_dead_purge(&self, params: Checked<GroupDeadPurgeParams>) -> Result<u64> {
        let p = params.into_inner();
        let sql = &self.inner.group_sql.dead_purge;
        self.execute("group_dead_purge", sql, &[&p.group, &p.offsets])
            .await
    }

    async fn group_dead_take(
        &self,
        params: Checked<GroupDeadTakeParams>,
    ) -> Result<Vec<GroupDead>> {
        let p = params.into_inner();
        let rows = self
            .query(
                "group_dead_take",
                &self.inner.group_sql.dead_take,
                &[&p.group, &p.worker, &i64::from(p.limit)],
            )
            .await?;
        let mut taken: Vec<GroupDead> = rows.iter().map(dead).collect();
        taken.sort_by_key(|d| d.offset);
        Ok(taken)
    }

    async fn group_dead_resolve(&self, params: Checked<GroupDeadResolveParams>) -> Result<()> {
        let p = params.into_inner();
        let op = "group_dead_resolve";
        let bucket = int(p.bucket);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db(op))?;
        // The lease row stays locked until the delete commits: no claim
        // can take the bucket in between.
        let on = self.on_tx(&tx);
        let held = on
            .rows(
                op,
                &self.inner.group_sql.holds,
                &[&p.group, &bucket, &p.worker, &p.epoch],
            )
            .await?;
        if held.is_empty() {
            return Err(fenced(&p.group, p.bucket, p.epoch));
        }
        drop(held);
        on.changed(
            op,
            &self.inner.group_sql.dead_delete,
            &[&p.group, &p.offset],
        )
        .await?;
        tx.commit().await.map_err(db(op))
    }

    async fn group_handoffs(
        &self,
        params: Checked<alkstore_core::group::GroupHandoffsParams>,
    ) -> Result<alkstore_core::group::GroupHandoffs> {
        use alkstore_core::group::{GroupHandoffs, Handoff, HandoffCause};
        let p = params.into_inner();
        let op = "group_handoffs";
        let sql = &self.inner.group_sql;
        let recent = self
            .query(op, &sql.handoffs, &[&p.group, &i64::from(p.limit)])
            .await?
            .iter()
            .map(|r| Handoff {
                bucket: u32::try_from(r.get::<_, i32>(0)).unwrap_or(0),
                epoch: r.get(1),
                from_worker: r.get(2),
                to_worker: r.get(3),
                cause: HandoffCause::parse(r.get(4)).unwrap_or(HandoffCause::Lapse),
                at_ms: r.get(5),
            })
            .collect();
        let totals = self
            .query(op, &sql.handoff_totals, &[&p.group])
            .await?
            .iter()
            .filter_map(|r| Some((HandoffCause::parse(r.get(0))?, count(r.get(1)))))
            .collect();
        Ok(GroupHandoffs { recent, totals })
    }

    async fn group_counts(&self, params: Checked<GroupStatusParams>) -> Result<Vec<BucketCount>> {
        let p = params.into_inner();
        let rows = self
            .query("group_counts", &self.inner.group_sql.counts, &[&p.group])
            .await?;
        Ok(rows
            .iter()
            .map(|r| BucketCount {
                buckets: small(r.get(0)),
                rows: count(r.get(1)),
            })
            .collect())
    }
}
