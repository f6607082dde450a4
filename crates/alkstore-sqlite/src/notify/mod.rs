//! Notify/listen on SQLite: a notification is a row, kept about a minute;
//! listeners read their channel's new rows when woken (in-process hint, or
//! the data_version watcher for other processes' commits).

use alkstore_core::notify::{Notification, NotifyDriver, NotifyPollParams, NOTIFY_KEEP_MS};
use alkstore_core::{Checked, Result};
use rusqlite::{params, Connection};

use crate::{db, SqliteEngine};

/// Insert a validated notification and prune the expired ones. Shared by
/// the engine and the outbox.
pub(crate) fn insert(conn: &Connection, channel: &str, payload: &str, now_ms: i64) -> Result<()> {
    let op = "notify";
    conn.prepare_cached(
        "INSERT INTO __alkstore_notify (channel, payload, created_at) VALUES (?1, ?2, ?3)",
    )
    .and_then(|mut s| s.execute(params![channel, payload, now_ms]))
    .map_err(db(op))?;
    conn.prepare_cached("DELETE FROM __alkstore_notify WHERE created_at < ?1")
        .and_then(|mut s| s.execute([now_ms - NOTIFY_KEEP_MS]))
        .map_err(db(op))?;
    Ok(())
}

impl NotifyDriver for SqliteEngine {
    async fn notify_poll(&self, params: Checked<NotifyPollParams>) -> Result<Vec<Notification>> {
        let p = params.into_inner();
        self.read("notify_poll", move |conn| {
            conn.prepare_cached(
                "SELECT id, payload FROM __alkstore_notify WHERE channel = ?1 AND id > ?2 \
                 ORDER BY id LIMIT ?3",
            )
            .and_then(|mut s| {
                s.query_map(params![p.channel, p.after_id, p.limit], |r| {
                    Ok(Notification {
                        id: r.get(0)?,
                        payload: r.get(1)?,
                        channel: p.channel.clone(),
                    })
                })?
                .collect()
            })
            .map_err(db("notify_poll"))
        })
        .await
    }

    async fn notify_ready(&self) -> Result<()> {
        Ok(())
    }

    async fn notify_head(&self) -> Result<i64> {
        self.read("notify_head", |conn| {
            // The AUTOINCREMENT counter: right even when every row was pruned.
            conn.prepare_cached(
                "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = '__alkstore_notify'), 0)",
            )
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(db("notify_head"))
        })
        .await
    }
}
