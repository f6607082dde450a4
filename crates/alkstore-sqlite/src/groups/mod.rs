//! The consumer-group area on SQLite: its SQL functions and statements.

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
