//! Moving job rows to the dead table with their reason and last error,
//! and appending to a row's error list: shared by the rescue, settling and
//! cancelling.

use alkstore_core::Result;
use rusqlite::{Connection, ToSql};

use super::rows::MOVE_COLS;
use crate::db;

/// The row's `errors` list with one more entry for its current attempt
/// (keeping the most recent `MAX_ERRORS_KEPT`); `at` and `err` are SQL
/// parameter placeholders.
pub(super) fn errors_appended(at: &str, err: &str) -> String {
    format!(
        "json_insert(CASE WHEN json_array_length(COALESCE(errors, '[]')) >= {max} \
           THEN json_remove(errors, '$[0]') ELSE COALESCE(errors, '[]') END, '$[#]', \
           json_object('attempt', attempts, 'at', {at}, 'error', {err}))",
        max = alkstore_core::queue::MAX_ERRORS_KEPT
    )
}

/// Why a row goes to dead: a SQL expression over the job row (only constant
/// texts from this file, never input).
pub(super) const FAILED_OR_CANCELLED: &str =
    "CASE WHEN cancel_requested THEN 'cancelled' ELSE 'failed' END";
pub(super) const EXHAUSTED_OR_CANCELLED: &str =
    "CASE WHEN cancel_requested THEN 'cancelled' ELSE 'exhausted' END";

/// Move the job rows selected by `where_sql` to the dead table with reason
/// `reason_sql` (a SQL expression); `error`, when given, becomes the last
/// error and joins the row's error list.
pub(super) fn move_to_dead(
    conn: &Connection,
    op: &'static str,
    where_sql: &str,
    reason_sql: &str,
    error: Option<&str>,
    now: i64,
    args: &[&dyn ToSql],
) -> Result<u64> {
    // Parameters ?1..?n belong to `where_sql`; error and now follow.
    let n = args.len();
    let (e, t) = (format!("?{}", n + 1), format!("?{}", n + 2));
    let insert = format!(
        "INSERT OR REPLACE INTO __alkstore_dead ({MOVE_COLS}, last_error, errors, reason, died_at) \
         SELECT {MOVE_COLS}, COALESCE({e}, last_error), \
           CASE WHEN {e} IS NULL THEN errors ELSE {appended} END, {reason_sql}, {t} \
         FROM __alkstore_job WHERE {where_sql}",
        appended = errors_appended(&t, &e),
    );
    let mut all: Vec<&dyn ToSql> = args.to_vec();
    all.push(&error);
    all.push(&now);
    let moved = conn
        .prepare_cached(&insert)
        .and_then(|mut s| s.execute(all.as_slice()))
        .map_err(db(op))?;
    if moved > 0 {
        conn.prepare_cached(&format!("DELETE FROM __alkstore_job WHERE {where_sql}"))
            .and_then(|mut s| s.execute(args))
            .map_err(db(op))?;
    }
    Ok(moved as u64)
}
