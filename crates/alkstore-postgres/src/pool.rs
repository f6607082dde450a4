//! The engine's one connection pool: how connections are made and handed
//! out, which of them commit without waiting for the WAL flush, and how
//! idle ones are closed.
//!
//! One pool, not one per commit mode: a process holds only the connections
//! it uses at once (two pools held each one's idle connections besides the
//! other's, and a worker that claims, acks and rescues kept both warm:
//! five connections per idle `alk worker`, 160 for 32 of them against a
//! server's default 100). A connection is put in the commit mode its next
//! caller asks for with one `SET`, only when its mode differs.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use alkstore_core::{Error, Result};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, StatementCache};

use crate::tls;

/// Pooled connections unused this long are closed (all but one), so a
/// burst's connections do not stay open for the life of the process.
pub(crate) const IDLE_CLOSE: Duration = Duration::from_secs(30);

/// How often the idle connections are looked at.
const IDLE_CHECK: Duration = Duration::from_secs(10);

pub(crate) fn build(
    config: tokio_postgres::Config,
    tls: tls::Connector,
    size: usize,
    target: &str,
) -> Result<Pool> {
    let manager = Manager::from_config(
        config,
        tls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size.max(1))
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(30)))
        .create_timeout(Some(Duration::from_secs(15)))
        .build()
        .map_err(|e| Error::connect(target, e))
}

/// A pooled connection; a failure to make one names `target`.
pub(crate) async fn checkout(pool: &Pool, target: &str) -> Result<Object> {
    pool.get().await.map_err(|e| match e {
        deadpool_postgres::PoolError::Backend(e) => refused(target, e),
        deadpool_postgres::PoolError::Closed => Error::Closed,
        other => Error::connect(target, other),
    })
}

/// [`Error::Connect`] for a connection the server would not open; when it
/// refused for want of connection slots, what to change to get one.
pub(crate) fn refused(target: &str, e: tokio_postgres::Error) -> Error {
    match e.as_db_error() {
        Some(d) if d.code() == &tokio_postgres::error::SqlState::TOO_MANY_CONNECTIONS => {
            Error::connect(
                target,
                format!("{} (SQLSTATE 53300)", d.message()) + TOO_MANY_HINT,
            )
        }
        _ => Error::connect(target, e),
    }
}

/// What [`refused`] adds when the server is out of connection slots.
const TOO_MANY_HINT: &str = ": the server is out of connection slots (its max_connections, \
    or the role's or database's CONNECTION LIMIT); lower what each \
    process may open (`pool_size=N` in the store URL; an engine holds at most pool_size \
    connections, plus one to LISTEN), put PgBouncer in transaction mode \
    in front (docs/pgbouncer.md), or raise max_connections on the server";

/// Which pooled connections are in relaxed mode (`synchronous_commit =
/// off` for the session). A connection is known by its statement cache,
/// which lives exactly as long as it: a `Weak` to it keeps the address
/// from being reused, so a new connection is never taken for an old one,
/// and a new connection starts in the server's mode, durable.
#[derive(Default)]
pub(crate) struct CommitModes {
    relaxed: Mutex<Vec<Weak<StatementCache>>>,
}

impl CommitModes {
    fn is_relaxed(&self, client: &Object) -> bool {
        let cache = Arc::as_ptr(&client.statement_cache);
        self.list().iter().any(|w| std::ptr::eq(w.as_ptr(), cache))
    }

    /// The list, even if a thread panicked holding it (no update of it
    /// can be left half-done: each is one `retain` or `push`).
    fn list(&self) -> std::sync::MutexGuard<'_, Vec<Weak<StatementCache>>> {
        self.relaxed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn mark(&self, client: &Object, relaxed: bool) {
        let cache = Arc::as_ptr(&client.statement_cache);
        let mut r = self.list();
        r.retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), cache));
        if relaxed {
            r.push(Arc::downgrade(&client.statement_cache));
        }
    }

    /// Put `client` in the commit mode asked for, when it is not. Marked
    /// relaxed before the `SET` and durable only after it, so a call
    /// cancelled half-way leaves a connection the next caller sets again,
    /// never a relaxed one taken for durable.
    pub(crate) async fn set(&self, client: &Object, relaxed: bool, target: &str) -> Result<()> {
        if self.is_relaxed(client) == relaxed {
            return Ok(());
        }
        if relaxed {
            self.mark(client, true);
            client
                .batch_execute("SET synchronous_commit = off")
                .await
                .map_err(|e| Error::connect(target, e))
        } else {
            client
                .batch_execute("SET synchronous_commit = DEFAULT")
                .await
                .map_err(|e| Error::connect(target, e))?;
            self.mark(client, false);
            Ok(())
        }
    }
}

/// Close the pool's connections idle for [`IDLE_CLOSE`] (keeping one)
/// every few seconds, until the pool is gone or closed.
pub(crate) fn close_idle_connections(pool: &Pool) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let weak = pool.weak();
    handle.spawn(async move {
        let mut tick = tokio::time::interval(IDLE_CHECK);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(pool) = weak.upgrade() else { return };
            if pool.is_closed() {
                return;
            }
            close_idle(&pool, IDLE_CLOSE);
        }
    });
}

/// Close `pool`'s connections unused for `idle`, keeping one open (when
/// none was used lately, whichever comes first). Returns how many closed.
pub(crate) fn close_idle(pool: &Pool, idle: Duration) -> usize {
    let mut fresh = 0;
    pool.retain(|_, m| {
        fresh += usize::from(m.last_used() < idle);
        true
    });
    let mut keep_one = fresh == 0;
    pool.retain(|_, m| {
        if m.last_used() < idle {
            return true;
        }
        std::mem::replace(&mut keep_one, false)
    })
    .removed
    .len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Idle connections close, all but one; busy ones stay.
    #[tokio::test]
    async fn idle_connections_close_but_one() {
        let url = crate::testing::database_url();
        let (config, connector) = tls::prepare(&url).expect("url");
        let pool = build(config, connector, 4, "test").expect("pool");
        let held: Vec<Object> =
            futures_util::future::try_join_all((0..4).map(|_| checkout(&pool, "test")))
                .await
                .expect("four connections");
        assert_eq!(pool.status().size, 4);
        let busy = held.into_iter().next();
        assert_eq!(close_idle(&pool, Duration::from_secs(60)), 0, "all fresh");
        assert_eq!(close_idle(&pool, Duration::ZERO), 2, "three idle, one kept");
        assert_eq!(pool.status().size, 2, "the busy one and the kept one");
        drop(busy);
        assert_eq!(close_idle(&pool, Duration::ZERO), 1);
        assert_eq!(pool.status().size, 1);
    }
}
