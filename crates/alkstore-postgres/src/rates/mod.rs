//! Rate limits on PostgreSQL: one statement; the window comes from the
//! database's clock (`$1` overrides it in tests), and the upsert's row lock
//! makes concurrent callers count one at a time. A statement's clock is
//! read before it waits for the row, so callers can reach it out of time
//! order: only a newer window starts the count again, and a caller from an
//! older window than the row's is refused.

use alkstore_core::rate::{RateAcquireParams, RateDecision, RateDriver};
use alkstore_core::{Checked, Error, Result};

use crate::groups::sql::NOW_MS;
use crate::schema::{tables, QualifiedTable};
use crate::PgEngine;

/// `rate_acquire`'s statement for `schema`: the window's admissions after
/// the call (NULL: refused) and the window's start.
pub(crate) fn acquire_sql(schema: &str) -> String {
    let t = QualifiedTable::new(schema, tables::RATE_LIMIT);
    format!(
        "WITH w AS (SELECT ({NOW_MS} / $4) * $4 AS start), \
         up AS (INSERT INTO {t} AS r (name, window_start, admitted) SELECT $2, w.start, 1 FROM w \
           ON CONFLICT (name) DO UPDATE SET \
             admitted = CASE WHEN r.window_start = excluded.window_start \
               THEN r.admitted + 1 ELSE 1 END, \
             window_start = excluded.window_start \
           WHERE r.window_start < excluded.window_start \
             OR (r.window_start = excluded.window_start AND r.admitted < $3) \
           RETURNING admitted) \
         SELECT (SELECT admitted FROM up), (SELECT start FROM w)"
    )
}

impl RateDriver for PgEngine {
    async fn rate_acquire(&self, params: Checked<RateAcquireParams>) -> Result<RateDecision> {
        let p = params.into_inner();
        let op = "rate_acquire";
        let per = p.window_ms();
        let rows = self
            .query(
                op,
                &self.inner.rate_sql,
                &[&self.now_ms_override(), &p.name, &i64::from(p.limit), &per],
            )
            .await?;
        let r = rows.first().ok_or_else(|| Error::database(op, "no row"))?;
        Ok(RateDecision::new(r.get(0), p.limit, r.get(1), per))
    }
}
