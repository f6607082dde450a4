//! The contract suite on the SQLite engine.

use std::sync::Arc;

use alkstore_contract::alkstore::{AnyEngine, Store, Tx};
use alkstore_contract::{Business, BusinessFuture, Harness, HeldPublish, RuntimeHarness};
use alkstore_core::stream::NewEvent;
use alkstore_core::{Error, ManualClock, NewJob, Result, Transaction};
use alkstore_sqlite::{SqliteEngine, SqliteOptions};

struct SqliteHarness {
    engine: SqliteEngine,
    clock: ManualClock,
    _dir: tempfile::TempDir,
}

async fn harness(_name: &'static str) -> SqliteHarness {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = ManualClock::starting_now();
    let opts = SqliteOptions::new(dir.path().join("contract.db")).clock(Arc::new(clock.clone()));
    let engine = SqliteEngine::open(opts).expect("open");
    rusqlite::Connection::open(engine.path())
        .and_then(|c| c.execute_batch(BUSINESS_TABLE))
        .expect("the application's table");
    SqliteHarness {
        engine,
        clock,
        _dir: dir,
    }
}

/// The application's table the transaction rows write beside the store's.
const BUSINESS_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS business (id INTEGER PRIMARY KEY, key TEXT NOT NULL)";

impl SqliteHarness {
    /// Open the file at `path` with the harness's clock.
    fn open_at(&self, path: std::path::PathBuf, create: bool) -> Result<SqliteEngine> {
        let mut opts = SqliteOptions::new(path).clock(Arc::new(self.clock.clone()));
        opts.create = create;
        SqliteEngine::open(opts)
    }

    /// Where [`Harness::open_absent`] opens.
    fn absent_path(&self) -> std::path::PathBuf {
        self._dir.path().join("absent.db")
    }
}

impl Harness for SqliteHarness {
    type Engine = SqliteEngine;

    async fn reopen(&self, create: bool) -> Result<SqliteEngine> {
        self.open_at(self.engine.path().to_path_buf(), create)
    }

    async fn set_schema_version(&self, version: i64) -> Result<()> {
        let db = |e: rusqlite::Error| Error::database("set schema version", e);
        let conn = rusqlite::Connection::open(self.engine.path()).map_err(db)?;
        conn.execute(
            "UPDATE __alkstore_meta SET value = ?1 WHERE key = 'schema_version'",
            [version],
        )
        .map_err(db)?;
        Ok(())
    }

    async fn open_absent(&self, create: bool) -> Result<SqliteEngine> {
        self.open_at(self.absent_path(), create)
    }

    async fn absent_created(&self) -> bool {
        self.absent_path().exists()
    }

    fn engine(&self) -> &SqliteEngine {
        &self.engine
    }

    fn clock(&self) -> &ManualClock {
        &self.clock
    }

    async fn in_app_tx<P>(&self, params: P) -> Result<P::Output>
    where
        P: alkstore_core::op::Op + Send + 'static,
        P::Output: Send + 'static,
        SqliteEngine: alkstore_core::op::Drive<P>,
    {
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || {
            let db = |e: rusqlite::Error| Error::database("app transaction", e);
            let mut conn = open_app_connection(engine.path()).map_err(db)?;
            // Immediate, as `within`'s docs ask of a transaction that may
            // fence (ack, settle, checkpoint, lock fence).
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(db)?;
            // An error leaves the rollback to the caller: dropping `tx`.
            let out = engine.within(&tx).run_now::<P>(params)?;
            tx.commit().map_err(db)?;
            Ok(out)
        })
        .await
        .map_err(|e| Error::database("app transaction", e.to_string()))?
    }

    async fn outbox_enqueue(&self, job: NewJob, commit: bool) -> Result<()> {
        let path = self.engine.path().to_path_buf();
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || {
            let db = |e: rusqlite::Error| Error::database("outbox test", e);
            let mut conn = rusqlite::Connection::open(path).map_err(db)?;
            conn.busy_timeout(std::time::Duration::from_secs(10))
                .map_err(db)?;
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, note TEXT)",
            )
            .map_err(db)?;
            let tx = conn.transaction().map_err(db)?;
            tx.execute("INSERT INTO orders (note) VALUES ('business write')", [])
                .map_err(db)?;
            engine
                .within(&tx)
                .run_now::<alkstore_core::queue::JobEnqueueParams>(job)?;
            if commit {
                tx.commit().map_err(db)
            } else {
                tx.rollback().map_err(db)
            }
        })
        .await
        .map_err(|e| Error::database("outbox test", e.to_string()))?
    }

    async fn outbox_publish(&self, events: Vec<NewEvent>, commit: bool) -> Result<Vec<i64>> {
        let path = self.engine.path().to_path_buf();
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || {
            let db = |e: rusqlite::Error| Error::database("outbox test", e);
            let mut conn = open_app_connection(&path).map_err(db)?;
            let tx = conn.transaction().map_err(db)?;
            tx.execute("INSERT INTO orders (note) VALUES ('business write')", [])
                .map_err(db)?;
            let offsets = engine
                .within(&tx)
                .run_now::<alkstore_core::stream::StreamPublishParams>(events)?;
            if commit {
                tx.commit().map_err(db)?;
            } else {
                tx.rollback().map_err(db)?;
            }
            Ok(offsets)
        })
        .await
        .map_err(|e| Error::database("outbox test", e.to_string()))?
    }

    async fn publish_held(&self, events: Vec<NewEvent>) -> Result<HeldPublish> {
        publish_held(self.engine.clone(), events).await
    }

    async fn hold_foreign_write(&self, same_database: bool) -> Result<Option<HeldPublish>> {
        if same_database {
            // It would hold the file's one write lock: no publish could run.
            return Ok(None);
        }
        let path = self._dir.path().join("foreign.db");
        let (begun_tx, begun) = tokio::sync::oneshot::channel();
        let (end, decision) = tokio::sync::oneshot::channel::<bool>();
        let done = tokio::task::spawn_blocking(move || {
            let db = |e: rusqlite::Error| Error::database("foreign write", e);
            let mut conn = rusqlite::Connection::open(path).map_err(db)?;
            let tx = conn.transaction().map_err(db)?;
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS foreign_write (x INTEGER); \
                 INSERT INTO foreign_write VALUES (1);",
            )
            .map_err(db)?;
            let _ = begun_tx.send(());
            if decision.blocking_recv().unwrap_or(false) {
                tx.commit().map_err(db)
            } else {
                tx.rollback().map_err(db)
            }
        });
        begun
            .await
            .map_err(|_| Error::database("foreign write", "the transaction failed"))?;
        Ok(Some(HeldPublish::new(Vec::new(), end, done)))
    }

    async fn business_insert(&self, tx: &mut Transaction<SqliteEngine>, key: &str) -> Result<()> {
        let conn = tx
            .driver_tx()
            .ok_or_else(|| Error::database("business insert", "the transaction ended"))?
            .conn();
        conn.execute("INSERT INTO business (key) VALUES (?1)", [key])
            .map(drop)
            .map_err(|e| Error::database("business insert", e))
    }

    async fn business_rows(&self) -> Vec<String> {
        let conn = rusqlite::Connection::open(self.engine.path()).expect("conn");
        let mut rows = conn
            .prepare("SELECT key FROM business ORDER BY id")
            .expect("select");
        let keys = rows.query_map([], |r| r.get(0)).expect("rows");
        keys.collect::<rusqlite::Result<_>>().expect("keys")
    }

    async fn teardown(self) {}
}

/// On an application connection of its own, publish `events` in a
/// transaction kept open until the handle ends it.
async fn publish_held(engine: SqliteEngine, events: Vec<NewEvent>) -> Result<HeldPublish> {
    let (published_tx, published) = tokio::sync::oneshot::channel();
    let (end, decision) = tokio::sync::oneshot::channel::<bool>();
    let done = tokio::task::spawn_blocking(move || {
        let db = |e: rusqlite::Error| Error::database("held publish", e);
        let mut conn = open_app_connection(engine.path()).map_err(db)?;
        let tx = conn.transaction().map_err(db)?;
        let offsets = engine
            .within(&tx)
            .run_now::<alkstore_core::stream::StreamPublishParams>(events)?;
        let _ = published_tx.send(offsets);
        if decision.blocking_recv().unwrap_or(false) {
            tx.commit().map_err(db)
        } else {
            tx.rollback().map_err(db)
        }
    });
    let offsets = published
        .await
        .map_err(|_| Error::database("held publish", "the publisher failed"))?;
    Ok(HeldPublish::new(offsets, end, done))
}

/// The application's own connection to the store's file, with the table
/// the outbox rows write beside their events.
fn open_app_connection(path: &std::path::Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.execute_batch("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, note TEXT)")?;
    Ok(conn)
}

/// A facade store over a fresh engine on the system clock, for the runtime
/// rows.
struct SqliteRuntime {
    store: Store,
    _dir: tempfile::TempDir,
}

async fn runtime_harness(_name: &'static str) -> SqliteRuntime {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine =
        SqliteEngine::open(SqliteOptions::new(dir.path().join("runtime.db"))).expect("open");
    SqliteBusiness::create(engine.path()).expect("the application's table");
    SqliteRuntime {
        store: Store::from_engine(AnyEngine::Sqlite(engine)),
        _dir: dir,
    }
}

/// The application's own table in the store's file, for the transactional
/// runtime rows.
struct SqliteBusiness {
    path: std::path::PathBuf,
}

impl SqliteBusiness {
    fn create(path: &std::path::Path) -> rusqlite::Result<()> {
        open_app_connection(path)?.execute_batch(
            "CREATE TABLE IF NOT EXISTS business \
             (id INTEGER PRIMARY KEY, key TEXT NOT NULL, n INTEGER NOT NULL)",
        )
    }
}

impl Business for SqliteBusiness {
    fn insert<'t>(&'t self, tx: &'t mut Tx, key: &'t str, n: i64) -> BusinessFuture<'t, ()> {
        let db = |e: rusqlite::Error| Error::database("business insert", e);
        let inserted = match tx.sqlite() {
            Some(conn) => conn
                .prepare_cached("INSERT INTO business (key, n) VALUES (?1, ?2)")
                .and_then(|mut s| s.execute(rusqlite::params![key, n]))
                .map(drop)
                .map_err(db),
            None => Err(Error::database(
                "business insert",
                "not a SQLite transaction",
            )),
        };
        Box::pin(std::future::ready(inserted))
    }

    fn rows(&self) -> BusinessFuture<'_, Vec<(String, i64)>> {
        let path = self.path.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let db = |e: rusqlite::Error| Error::database("business rows", e);
                let conn = open_app_connection(&path).map_err(db)?;
                let mut stmt = conn
                    .prepare("SELECT key, n FROM business ORDER BY id")
                    .map_err(db)?;
                let rows = stmt
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(db)?;
                rows.collect::<rusqlite::Result<Vec<(String, i64)>>>()
                    .map_err(db)
            })
            .await
            .map_err(|e| Error::database("business rows", e.to_string()))?
        })
    }
}

impl RuntimeHarness for SqliteRuntime {
    fn store(&self) -> &Store {
        &self.store
    }

    async fn notify_in_transaction(
        &self,
        channel: &str,
        payload: &str,
        commit: bool,
    ) -> Result<()> {
        let engine = self.store.sqlite().expect("a SQLite store").clone();
        let (channel, payload) = (channel.to_string(), payload.to_string());
        tokio::task::spawn_blocking(move || {
            let db = |e: rusqlite::Error| Error::database("notify test", e);
            let mut conn = open_app_connection(engine.path()).map_err(db)?;
            let tx = conn.transaction().map_err(db)?;
            engine
                .within(&tx)
                .run_now::<alkstore_core::notify::NotifyParams>(
                    alkstore_core::notify::NotifyParams::new(channel, payload),
                )?;
            if commit {
                tx.commit().map_err(db)
            } else {
                tx.rollback().map_err(db)
            }
        })
        .await
        .map_err(|e| Error::database("notify test", e.to_string()))?
    }

    async fn publish_held(&self, events: Vec<NewEvent>) -> Result<HeldPublish> {
        let engine = self.store.sqlite().expect("a SQLite store").clone();
        publish_held(engine, events).await
    }

    fn business(&self) -> Arc<dyn Business> {
        let engine = self.store.sqlite().expect("a SQLite store");
        Arc::new(SqliteBusiness {
            path: engine.path().to_path_buf(),
        })
    }

    async fn teardown(self) {}
}

alkstore_contract::contract_suite!(crate::harness, runtime = crate::runtime_harness);
