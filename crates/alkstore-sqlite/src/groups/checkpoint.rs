//! Saving a bucket's checkpoint under the lease that holds it: the
//! writer's call and the application's transactions (`outbox.rs`) share
//! [`checkpoint_in`].

use alkstore_core::group::{checkpoint_fence, GroupCheckpointParams};
use alkstore_core::Result;
use rusqlite::{params, Connection, OptionalExtension};

use crate::db;

/// Save a bucket's checkpoint at `now_ms` under the lease epoch the caller
/// holds ([`NotHeld`](alkstore_core::Error::NotHeld) when the bucket is
/// not its under that epoch): monotone, never beyond the stream's head
/// ([`InvalidInput`](alkstore_core::Error::InvalidInput)). Shared by the
/// writer and transactions.
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
    let found = row.as_ref().map(|(o, e, s, _)| (o.as_deref(), *e, *s));
    if let Some(saved) = checkpoint_fence(p, found)? {
        return Ok(saved);
    }
    let stream = row.map(|r| r.3).unwrap_or_default();
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
