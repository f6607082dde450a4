//! The SQL hash against PostgreSQL's values.

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
