//! The contract suite on the PostgreSQL engine. Each test gets its own schema
//! in the `alkstore_test` database of the server at `DATABASE_URL`.
//!
//! With `ALKSTORE_CONTRACT_THROUGH_PGBOUNCER=1` and `ALKSTORE_TEST_PGBOUNCER_URL`
//! (a PgBouncer in transaction pooling mode in front of that server:
//! `scripts/ensure-pgbouncer` starts one and prints it), the engine and the
//! application's own connections go through the pooler, with
//! `PgPooler::Transaction`, and only LISTEN goes straight to the server.

use alkstore_core::Writes as _;
use std::sync::Arc;

use alkstore_contract::alkstore::{AnyEngine, Store, Tx};
use alkstore_contract::{Business, BusinessFuture, Harness, HeldPublish, RuntimeHarness};
use alkstore_core::stream::NewEvent;
use alkstore_core::{Error, ManualClock, NewJob, Result, Transaction};
use alkstore_postgres::{testing, PgEngine, PgOptions, PgPooler};
// Unnamed statements (`query_typed`): each runs whole in one round trip,
// as the application's own statements must through a transaction-mode
// pooler (see `ALKSTORE_TEST_PGBOUNCER_URL` above).
use tokio_postgres::types::Type;
use tokio_postgres::NoTls;

struct PgHarness {
    engine: PgEngine,
    clock: ManualClock,
    url: String,
    /// The direct URL LISTEN uses, when `url` goes through the pooler.
    listen: Option<String>,
    schema: String,
}

/// Where the tests connect: the test database, straight or through the
/// pooler of `ALKSTORE_TEST_PGBOUNCER_URL`; and where LISTEN connects.
async fn test_database() -> (String, Option<String>) {
    let direct = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("PostgreSQL at DATABASE_URL (scripts/test starts one)");
    let through = std::env::var("ALKSTORE_CONTRACT_THROUGH_PGBOUNCER").is_ok_and(|v| v == "1");
    match std::env::var("ALKSTORE_TEST_PGBOUNCER_URL") {
        Ok(bouncer) if through && !bouncer.is_empty() => (
            testing::with_database(&bouncer, "alkstore_test"),
            Some(direct),
        ),
        _ => (direct, None),
    }
}

/// Options for `schema` at `url` (through the pooler when `listen` is set).
fn pg_options(url: &str, listen: &Option<String>, schema: &str) -> PgOptions {
    let mut opts = PgOptions::new(url, schema);
    if let Some(direct) = listen {
        opts.pooler = PgPooler::Transaction;
        opts.listen_conninfo = Some(direct.clone());
    }
    opts
}

async fn harness(_name: &'static str) -> PgHarness {
    let (url, listen) = test_database().await;
    let schema = testing::unique_schema("ct");
    let clock = ManualClock::starting_now();
    let opts = pg_options(&url, &listen, &schema).clock(Arc::new(clock.clone()));
    let engine = PgEngine::open(opts).await.expect("open");
    engine
        .client()
        .await
        .expect("client")
        .batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {} (id BIGSERIAL PRIMARY KEY, note TEXT); \
             CREATE TABLE IF NOT EXISTS {} (id BIGSERIAL PRIMARY KEY, key TEXT NOT NULL)",
            orders_table(&schema),
            business_table(&schema)
        ))
        .await
        .expect("the application's tables");
    PgHarness {
        engine,
        clock,
        url,
        listen,
        schema,
    }
}

impl PgHarness {
    /// Open `schema` with the harness's clock.
    async fn open_schema(&self, schema: &str, create: bool) -> Result<PgEngine> {
        let mut opts =
            pg_options(&self.url, &self.listen, schema).clock(Arc::new(self.clock.clone()));
        opts.create = create;
        PgEngine::open(opts).await
    }

    /// Where [`Harness::open_absent`] opens.
    fn absent_schema(&self) -> String {
        format!("{}_absent", self.schema)
    }
}

impl Harness for PgHarness {
    type Engine = PgEngine;

    async fn reopen(&self, create: bool) -> Result<PgEngine> {
        self.open_schema(&self.schema, create).await
    }

    async fn set_schema_version(&self, version: i64) -> Result<()> {
        let meta = format!(
            "{}.meta",
            alkstore_postgres::schema::quote_identifier(&self.schema)
        );
        let (client, driver) = self.app_connection().await?;
        client
            .query_typed(
                &format!("UPDATE {meta} SET value = $1 WHERE key = 'schema_version'"),
                &[(&version, Type::INT8)],
            )
            .await
            .map_err(outbox_err)?;
        drop(client);
        let _ = driver.await;
        Ok(())
    }

    async fn open_absent(&self, create: bool) -> Result<PgEngine> {
        self.open_schema(&self.absent_schema(), create).await
    }

    async fn absent_created(&self) -> bool {
        let (client, driver) = self.app_connection().await.expect("connect");
        let n: i64 = client
            .query_typed_one(
                "SELECT count(*) FROM pg_namespace WHERE nspname = $1",
                &[(&self.absent_schema(), Type::TEXT)],
            )
            .await
            .expect("catalog")
            .get(0);
        drop(client);
        let _ = driver.await;
        n > 0
    }

    fn engine(&self) -> &PgEngine {
        &self.engine
    }

    fn clock(&self) -> &ManualClock {
        &self.clock
    }

    async fn in_app_tx<P>(&self, params: P) -> Result<P::Output>
    where
        P: alkstore_core::op::Op + Send + 'static,
        P::Output: Send + 'static,
        PgEngine: alkstore_core::op::Drive<P>,
    {
        use alkstore_core::Place as _;
        let (mut client, driver) = self.app_connection().await?;
        let tx = client.transaction().await.map_err(outbox_err)?;
        // A failed write aborts the transaction; dropping it rolls back.
        let out = self.engine.within(&tx).run::<P>(params).await;
        if out.is_ok() {
            tx.commit().await.map_err(outbox_err)?;
        } else {
            drop(tx);
        }
        drop(client);
        let _ = driver.await;
        out
    }

    async fn outbox_enqueue(&self, job: NewJob, commit: bool) -> Result<()> {
        let (mut client, driver) = self.app_connection().await?;
        let tx = client.transaction().await.map_err(outbox_err)?;
        self.business_write(&tx).await?;
        self.engine.within(&tx).job_enqueue(job).await?;
        finish_tx(tx, commit).await?;
        drop(client);
        let _ = driver.await;
        Ok(())
    }

    async fn outbox_publish(&self, events: Vec<NewEvent>, commit: bool) -> Result<Vec<i64>> {
        let (mut client, driver) = self.app_connection().await?;
        let tx = client.transaction().await.map_err(outbox_err)?;
        self.business_write(&tx).await?;
        let offsets = self.engine.within(&tx).stream_publish(events).await?;
        finish_tx(tx, commit).await?;
        drop(client);
        let _ = driver.await;
        Ok(offsets)
    }

    async fn publish_held(&self, events: Vec<NewEvent>) -> Result<HeldPublish> {
        publish_held(&self.url, self.engine.clone(), events).await
    }

    async fn hold_foreign_write(&self, same_database: bool) -> Result<Option<HeldPublish>> {
        // Straight to the server: a foreign transaction is not the pooler's.
        let (url, statement) = if same_database {
            (
                self.listen.clone().unwrap_or_else(|| self.url.clone()),
                format!(
                    "INSERT INTO {} (note) VALUES ('a foreign write')",
                    orders_table(&self.schema)
                ),
            )
        } else {
            (
                testing::ensure_database(&testing::database_url(), "alkstore_test_foreign").await?,
                "CREATE TEMP TABLE foreign_write (x INT) ON COMMIT DROP; \
                 INSERT INTO foreign_write VALUES (1)"
                    .to_string(),
            )
        };
        let (mut client, conn) = tokio_postgres::connect(&url, NoTls)
            .await
            .map_err(outbox_err)?;
        let driver = tokio::spawn(conn);
        let (begun_tx, begun) = tokio::sync::oneshot::channel();
        let (end, decision) = tokio::sync::oneshot::channel::<bool>();
        let done = tokio::spawn(async move {
            let tx = client.transaction().await.map_err(outbox_err)?;
            tx.batch_execute(&statement).await.map_err(outbox_err)?;
            let _ = begun_tx.send(());
            finish_tx(tx, decision.await.unwrap_or(false)).await?;
            drop(client);
            let _ = driver.await;
            Ok(())
        });
        begun
            .await
            .map_err(|_| Error::database("foreign write", "the transaction failed"))?;
        Ok(Some(HeldPublish::new(Vec::new(), end, done)))
    }

    async fn business_insert(&self, tx: &mut Transaction<PgEngine>, key: &str) -> Result<()> {
        let client = tx
            .driver_tx()
            .ok_or_else(|| Error::database("business insert", "the transaction ended"))?
            .client();
        client
            .query_typed(
                &format!(
                    "INSERT INTO {} (key) VALUES ($1)",
                    business_table(&self.schema)
                ),
                &[(&key, Type::TEXT)],
            )
            .await
            .map(drop)
            .map_err(|e| Error::database("business insert", e))
    }

    async fn business_rows(&self) -> Vec<String> {
        let client = self.engine.client().await.expect("client");
        client
            .query_typed(
                &format!(
                    "SELECT key FROM {} ORDER BY id",
                    business_table(&self.schema)
                ),
                &[],
            )
            .await
            .expect("business rows")
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    fn foreign_hints_name_queue(&self) -> bool {
        true
    }

    async fn teardown(self) {
        let _ = testing::drop_schema(&self.url, &self.schema).await;
        let _ = testing::drop_schema(&self.url, &self.absent_schema()).await;
    }
}

fn orders_table(schema: &str) -> String {
    format!(
        "{}.orders",
        alkstore_postgres::schema::quote_identifier(schema)
    )
}

/// The application's table the transaction rows write beside the store's.
fn business_table(schema: &str) -> String {
    format!(
        "{}.business",
        alkstore_postgres::schema::quote_identifier(schema)
    )
}

fn outbox_err(e: tokio_postgres::Error) -> Error {
    Error::database("outbox test", e)
}

/// On an application connection of its own, publish `events` in a
/// transaction kept open until the handle ends it.
async fn publish_held(url: &str, engine: PgEngine, events: Vec<NewEvent>) -> Result<HeldPublish> {
    let (mut client, conn) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(outbox_err)?;
    let driver = tokio::spawn(conn);
    let (published_tx, published) = tokio::sync::oneshot::channel();
    let (end, decision) = tokio::sync::oneshot::channel::<bool>();
    let done = tokio::spawn(async move {
        let tx = client.transaction().await.map_err(outbox_err)?;
        let offsets = engine.within(&tx).stream_publish(events).await?;
        let _ = published_tx.send(offsets);
        finish_tx(tx, decision.await.unwrap_or(false)).await?;
        drop(client);
        let _ = driver.await;
        Ok(())
    });
    let offsets = published
        .await
        .map_err(|_| Error::database("held publish", "the publisher failed"))?;
    Ok(HeldPublish::new(offsets, end, done))
}

/// Commit or roll back the application's transaction.
async fn finish_tx(tx: tokio_postgres::Transaction<'_>, commit: bool) -> Result<()> {
    if commit {
        tx.commit().await.map_err(outbox_err)
    } else {
        tx.rollback().await.map_err(outbox_err)
    }
}

impl PgHarness {
    /// A connection of the application's own (not the engine's pool), and
    /// the task driving it.
    async fn app_connection(
        &self,
    ) -> Result<(
        tokio_postgres::Client,
        tokio::task::JoinHandle<std::result::Result<(), tokio_postgres::Error>>,
    )> {
        let (client, conn) = tokio_postgres::connect(&self.url, NoTls)
            .await
            .map_err(outbox_err)?;
        Ok((client, tokio::spawn(conn)))
    }

    /// The application's own write beside the store's, in `tx` (its table
    /// is made with the harness, so concurrent writers never race to).
    async fn business_write(&self, tx: &tokio_postgres::Transaction<'_>) -> Result<()> {
        tx.batch_execute(&format!(
            "INSERT INTO {} (note) VALUES ('business write')",
            orders_table(&self.schema)
        ))
        .await
        .map_err(outbox_err)
    }
}

/// A facade store over a fresh engine on the server's clock (no clock
/// injected), for the runtime rows; its own schema, like [`PgHarness`].
struct PgRuntime {
    store: Store,
    url: String,
    schema: String,
}

async fn runtime_harness(_name: &'static str) -> PgRuntime {
    let (url, listen) = test_database().await;
    let schema = testing::unique_schema("wk");
    let engine = PgEngine::open(pg_options(&url, &listen, &schema))
        .await
        .expect("open");
    engine
        .client()
        .await
        .expect("client")
        .batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {} \
             (id BIGSERIAL PRIMARY KEY, key TEXT NOT NULL, n BIGINT NOT NULL)",
            business_table(&schema)
        ))
        .await
        .expect("the application's table");
    PgRuntime {
        store: Store::from_engine(AnyEngine::Postgres(engine)),
        url,
        schema,
    }
}

/// The application's own table in the store's schema, for the
/// transactional runtime rows.
struct PgBusiness {
    engine: PgEngine,
    table: String,
}

impl Business for PgBusiness {
    fn insert<'t>(&'t self, tx: &'t mut Tx, key: &'t str, n: i64) -> BusinessFuture<'t, ()> {
        Box::pin(async move {
            let client = tx.postgres().ok_or_else(|| {
                Error::database("business insert", "not a PostgreSQL transaction")
            })?;
            client
                .query_typed(
                    &format!("INSERT INTO {} (key, n) VALUES ($1, $2)", self.table),
                    &[(&key, Type::TEXT), (&n, Type::INT8)],
                )
                .await
                .map(drop)
                .map_err(|e| Error::database("business insert", e))
        })
    }

    fn rows(&self) -> BusinessFuture<'_, Vec<(String, i64)>> {
        Box::pin(async move {
            let client = self.engine.client().await?;
            let rows = client
                .query_typed(
                    &format!("SELECT key, n FROM {} ORDER BY id", self.table),
                    &[],
                )
                .await
                .map_err(|e| Error::database("business rows", e))?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }
}

impl RuntimeHarness for PgRuntime {
    fn store(&self) -> &Store {
        &self.store
    }

    async fn notify_in_transaction(
        &self,
        channel: &str,
        payload: &str,
        commit: bool,
    ) -> Result<()> {
        let engine = self.store.postgres().expect("a PostgreSQL store");
        let (mut client, conn) = tokio_postgres::connect(&self.url, NoTls)
            .await
            .map_err(outbox_err)?;
        let driver = tokio::spawn(conn);
        let tx = client.transaction().await.map_err(outbox_err)?;
        engine
            .within(&tx)
            .notify(alkstore_core::notify::NotifyParams::new(channel, payload))
            .await?;
        finish_tx(tx, commit).await?;
        drop(client);
        let _ = driver.await;
        Ok(())
    }

    async fn publish_held(&self, events: Vec<NewEvent>) -> Result<HeldPublish> {
        let engine = self.store.postgres().expect("a PostgreSQL store").clone();
        publish_held(&self.url, engine, events).await
    }

    fn business(&self) -> Arc<dyn Business> {
        Arc::new(PgBusiness {
            engine: self.store.postgres().expect("a PostgreSQL store").clone(),
            table: business_table(&self.schema),
        })
    }

    async fn teardown(self) {
        let _ = testing::drop_schema(&self.url, &self.schema).await;
    }
}

alkstore_contract::contract_suite!(crate::harness, runtime = crate::runtime_harness);
