//! The SQL side of bucket assignment: PostgreSQL's `hashtextextended` as
//! a SQLite function, and the bucket expression both engines share.

use alkstore_core::group::hashtextextended;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

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
pub(super) fn bucket_expr(buckets: &str) -> String {
    format!(
        "(CASE WHEN e.key IS NULL THEN e.id % {buckets} \
         ELSE ((COALESCE(e.key_hash, hashtextextended(e.key, 0)) % {buckets}) + {buckets}) \
           % {buckets} END)"
    )
}

#[cfg(test)]
mod tests;
