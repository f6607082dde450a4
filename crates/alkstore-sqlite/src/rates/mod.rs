//! Rate limits on SQLite: one upsert on the write connection, timed by the
//! engine's clock.

use alkstore_core::rate::{window_start, RateAcquireParams, RateDecision, RateDriver};
use alkstore_core::{Checked, Result};
use rusqlite::{params, OptionalExtension};

use crate::{db, SqliteEngine};

impl RateDriver for SqliteEngine {
    async fn rate_acquire(&self, params: Checked<RateAcquireParams>) -> Result<RateDecision> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("rate_acquire", move |st| {
                let per = p.window_ms();
                let window = window_start(st.clock.now_ms(), per);
                // A new window starts the count again; a full one admits
                // nothing (and returns no row).
                let admitted: Option<i64> = st
                    .conn
                    .prepare_cached(
                        "INSERT INTO __alkstore_rate_limit (name, window_start, admitted) \
                         VALUES (?1, ?2, 1) \
                         ON CONFLICT (name) DO UPDATE SET \
                           admitted = CASE WHEN window_start = excluded.window_start \
                             THEN admitted + 1 ELSE 1 END, \
                           window_start = excluded.window_start \
                         WHERE window_start < excluded.window_start \
                           OR (window_start = excluded.window_start AND admitted < ?3) \
                         RETURNING admitted",
                    )
                    .and_then(|mut s| {
                        s.query_row(params![p.name, window, p.limit], |r| r.get(0))
                            .optional()
                    })
                    .map_err(db("rate_acquire"))?;
                Ok(RateDecision::new(admitted, p.limit, window, per))
            })
            .await
    }
}
