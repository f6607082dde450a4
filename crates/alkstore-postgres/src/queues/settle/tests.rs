//! Unit tests of the settle path that need no database.

use super::first_cause;
use alkstore_core::Error;

fn aborted() -> Error {
    Error::database(
        "job_settle",
        "current transaction is aborted (SQLSTATE 25P02)",
    )
}

fn cause() -> Error {
    Error::database("job_fail", "deadlock detected (SQLSTATE 40P01)")
}

/// A settle batch reports the statement that failed, not the ones
/// PostgreSQL refused after it, wherever each stands in the batch.
#[test]
fn first_cause_reports_the_failure_not_the_aborted_statements() {
    let is_cause = |r: Result<(), Error>| r.expect_err("fails").to_string().contains("40P01");
    assert!(is_cause(
        first_cause(Err::<(), _>(aborted()), vec![Ok(1), Err(cause())]).map(drop)
    ));
    assert!(is_cause(
        first_cause(Err::<(), _>(cause()), vec![Err::<(), _>(aborted())]).map(drop)
    ));
    assert!(is_cause(
        first_cause(Ok(()), vec![Err::<(), _>(aborted()), Err(cause())]).map(drop)
    ));
    let fine = first_cause(Ok(7), vec![Ok(1), Ok(2)]).expect("no error");
    assert_eq!(fine, (7, vec![1, 2]));
}
