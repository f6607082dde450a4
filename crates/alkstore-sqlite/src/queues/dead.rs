//! The dead-letter calls: list dead jobs, requeue, purge and count them,
//! and the selection of dead jobs they share.

use alkstore_core::queue::{DeadCountParams, DeadPurgeParams, DeadRequeueParams};
use alkstore_core::validate::count;
use alkstore_core::{Checked, DeadListParams, DeadSelect, JobInfo, Result};
use rusqlite::{params, Connection};

use super::rows::{job_info, Source, JOB_COLS};
use crate::{db, SqliteEngine};

/// The driver's `dead_list`: dead jobs, by id.
pub(super) async fn dead_list(
    engine: &SqliteEngine,
    params: Checked<DeadListParams>,
) -> Result<Vec<JobInfo>> {
    let p = params.into_inner();
    engine
        .read("dead_list", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {JOB_COLS}, reason, died_at FROM __alkstore_dead \
             WHERE (?1 IS NULL OR queue = ?1) AND id > ?2 \
               AND (?4 IS NULL OR EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?4)) \
             ORDER BY id LIMIT (SELECT ?3)"
            ))
            .and_then(|mut s| {
                s.query_map(
                    params![p.queue, p.after_id.unwrap_or(i64::MIN), p.limit, p.tag],
                    |r| job_info(r, Source::Dead),
                )?
                .collect()
            })
            .map_err(db("dead_list"))
        })
        .await
}

/// The driver's `dead_requeue`: move the selected dead jobs back to
/// pending; how many moved.
pub(super) async fn dead_requeue(
    engine: &SqliteEngine,
    params: Checked<DeadRequeueParams>,
) -> Result<u64> {
    let sel = params.into_inner();
    engine
        .inner
        .writer
        .write("dead_requeue", move |st| {
            let op = "dead_requeue";
            let now = st.clock.now();
            let ids = selected_dead_ids(&st.conn, &sel, true)?;
            let mut insert = st
                .conn
                .prepare_cached(
                    "INSERT INTO __alkstore_job (id, queue, payload, priority, run_at, attempts, \
                       max_attempts, created_at, visibility_timeout_s, backoff_base_s, \
                       dead_letter_retention_s, unique_key, last_error, errors, claim_count, \
                       keep_completed_s, tags, meta) \
                     SELECT id, queue, payload, priority, ?2, 0, max_attempts, created_at, \
                       visibility_timeout_s, backoff_base_s, dead_letter_retention_s, unique_key, \
                       last_error, errors, claim_count, keep_completed_s, tags, meta \
                     FROM __alkstore_dead WHERE id = ?1 \
                     ON CONFLICT DO NOTHING",
                )
                .map_err(db(op))?;
            let mut delete = st
                .conn
                .prepare_cached("DELETE FROM __alkstore_dead WHERE id = ?1")
                .map_err(db(op))?;
            let mut n = 0;
            for id in ids {
                if insert.execute(params![id, now]).map_err(db(op))? == 1 {
                    delete.execute([id]).map_err(db(op))?;
                    n += 1;
                }
            }
            Ok(n)
        })
        .await
}

/// The driver's `dead_purge`: delete the selected dead jobs.
pub(super) async fn dead_purge(
    engine: &SqliteEngine,
    params: Checked<DeadPurgeParams>,
) -> Result<u64> {
    let sel = params.into_inner();
    engine
        .inner
        .writer
        .write("dead_purge", move |st| {
            let ids = selected_dead_ids(&st.conn, &sel, false)?;
            let mut delete = st
                .conn
                .prepare_cached("DELETE FROM __alkstore_dead WHERE id = ?1")
                .map_err(db("dead_purge"))?;
            let mut n = 0;
            for id in ids {
                n += delete.execute([id]).map_err(db("dead_purge"))? as u64;
            }
            Ok(n)
        })
        .await
}

/// The driver's `dead_count`: how many dead jobs the selection names.
pub(super) async fn dead_count(
    engine: &SqliteEngine,
    params: Checked<DeadCountParams>,
) -> Result<u64> {
    let mut sel = params.into_inner();
    sel.limit = None;
    engine
        .read("dead_count", move |conn| {
            if sel.ids.is_some() {
                return Ok(selected_dead_ids(conn, &sel, false)?.len() as u64);
            }
            conn.prepare_cached(
                "SELECT COUNT(*) FROM __alkstore_dead WHERE (?1 IS NULL OR queue = ?1)",
            )
            .and_then(|mut s| s.query_row([&sel.queue], |r| r.get::<_, i64>(0)))
            .map(count)
            .map_err(db("dead_count"))
        })
        .await
}

/// The dead-letter ids `sel` names, lowest first, at most `sel.limit`.
/// With `requeueable`, only those whose unique key no live job holds, so a
/// batch never comes back empty while later rows could still be requeued.
fn selected_dead_ids(conn: &Connection, sel: &DeadSelect, requeueable: bool) -> Result<Vec<i64>> {
    let op = "dead_select";
    let limit = sel.limit.map(i64::from).unwrap_or(i64::MAX);
    let free = if requeueable {
        "AND (d.unique_key IS NULL OR NOT EXISTS (SELECT 1 FROM __alkstore_job j \
           WHERE j.queue = d.queue AND j.unique_key = d.unique_key))"
    } else {
        ""
    };
    match &sel.ids {
        None => conn
            .prepare_cached(&format!(
                "SELECT id FROM __alkstore_dead d WHERE (?1 IS NULL OR queue = ?1) {free} \
                 ORDER BY id LIMIT (SELECT ?2)"
            ))
            .and_then(|mut s| {
                s.query_map(params![sel.queue, limit], |r| r.get(0))?
                    .collect()
            })
            .map_err(db(op)),
        Some(ids) => {
            let mut wanted = ids.clone();
            wanted.sort_unstable();
            wanted.dedup();
            let mut exists = conn
                .prepare_cached(&format!(
                    "SELECT EXISTS (SELECT 1 FROM __alkstore_dead d WHERE id = ?1 \
                     AND (?2 IS NULL OR queue = ?2) {free})"
                ))
                .map_err(db(op))?;
            let mut out = Vec::new();
            for id in wanted {
                if i64::try_from(out.len()).unwrap_or(i64::MAX) >= limit {
                    break;
                }
                if exists
                    .query_row(params![id, sel.queue], |r| r.get::<_, bool>(0))
                    .map_err(db(op))?
                {
                    out.push(id);
                }
            }
            Ok(out)
        }
    }
}
