//! The alkstore contract suite: every behaviour an engine promises, written
//! once and run against each engine.
//!
//! An engine's `tests/contract.rs` provides two factories, then calls
//! [`contract_suite!`] once:
//!
//! - one that builds a fresh, isolated [`Harness`] (its own file, schema or
//!   database, and a `ManualClock`) for the engine rows (`queues`, …);
//! - one that builds a fresh, isolated [`RuntimeHarness`]: a facade
//!   [`Store`](alkstore::Store) over the same engine on its real clock, for
//!   the `runtime` rows, which run a [`Worker`](alkstore::Worker) and wait
//!   for real time to pass (retries, heartbeats, timeouts).
//!
//! The macro expands to one named `#[tokio::test]` per contract row, grouped
//! in modules by area (`queues`, `runtime`, …). Each test tears its harness
//! down even when the row panics, then fails with the row's panic.
//!
//! ```text
//! async fn harness(name: &'static str) -> MyHarness { /* fresh store */ }
//! async fn runtime_harness(name: &'static str) -> MyRuntime { /* fresh store */ }
//! alkstore_contract::contract_suite!(crate::harness, runtime = crate::runtime_harness);
//! ```
//!
//! # Layout and registration
//!
//! Rows live in `src/<area>/<sub_area>.rs`: `src/queues/claim.rs` holds the
//! claim rows, `src/queues/support.rs` the helpers they share. A row is a
//! `pub async fn name<H: Harness>(h: &H)` (`<H: RuntimeHarness>` in the
//! `runtime` area), and is declared where it is
//! written: each sub-area file ends with a hidden exported macro,
//! `__<area>_<sub_area>!`, that lists that file's rows. The area's `mod.rs`
//! has a macro, `__<area>!`, naming each of its sub-area macros, and the
//! crate's `__areas!` names each area macro. [`contract_suite!`] expands that
//! chain into tests; a unit test in this crate
//! (`every_row_is_registered`, run by `cargo test -p alkstore-contract` and
//! `scripts/test`) expands the same chain into a list of names and fails if
//! any row in `src/` is missing from it, is listed in another file's macro,
//! or shares its name with another row of its area.
//!
//! - A new row: write the function, add its name to the list at the end of
//!   its file.
//! - A new sub-area: a file with its rows and list macro, plus `pub mod` and
//!   one `$crate::__<area>_<sub_area>!` line in the area's `mod.rs`.
//! - A new area (streams, groups, locks): a folder shaped like `queues/`,
//!   plus `pub mod <area>;` and one `$crate::__<area>!` line in `__areas!`
//!   below. Its rows take a [`Harness`]; only the `runtime` area's take a
//!   [`RuntimeHarness`] (the worker runtime of a new primitive belongs
//!   there, as a sub-area).
//!
//! - A write row (one that checks what a write operation does) takes the
//!   place its writes run as well, `pub async fn name<H: Harness>(h: &H,
//!   at: Where)`, makes those writes on [`writer(h, at)`](writer), and is listed under
//!   `@places` instead of `@rows`: it runs three times, as
//!   `<area>::<row>::autocommit`, `::engine_tx` and `::app_tx` (see
//!   [`places`]), so every behaviour it checks holds inside the engine's
//!   transaction and the application's as it does on its own.
//!
//! Test names are `<area>::<row>` (the sub-area is not part of the name), so
//! row names must be unique within an area.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::Poll;

use alkstore_core::stream::NewEvent;
use alkstore_core::{
    GroupEngine, LockEngine, ManualClock, NewJob, NotifyEngine, ProcessEngine, QueueAdmin,
    QueueEngine, RateEngine, Result, ResultEngine, ScheduleEngine, StreamEngine, Transaction,
    TxDriver,
};

/// The facade the `runtime` rows drive, re-exported so an engine's
/// `tests/contract.rs` can build its [`RuntimeHarness`] (`Store::from_engine`,
/// `AnyEngine`) without depending on `alkstore` itself.
pub use alkstore;
pub use places::{writer, Where, Writer};

pub mod channels;
pub mod groups;
pub mod locks;
mod model;
pub mod open;
pub mod places;
pub mod processes;
pub mod queues;
pub mod rates;
pub mod results;
pub mod runtime;
pub mod schedules;
pub mod streams;
pub mod tx;

/// One isolated store under test.
pub trait Harness: Send + Sync + Sized + 'static {
    /// The engine under test.
    type Engine: QueueEngine
        + QueueAdmin
        + StreamEngine
        + GroupEngine
        + LockEngine
        + RateEngine
        + ResultEngine
        + ScheduleEngine
        + NotifyEngine
        + ProcessEngine
        + TxDriver
        + alkstore_core::AllOps
        + Clone;

    /// The engine, opened with [`Harness::clock`] as its clock.
    fn engine(&self) -> &Self::Engine;

    /// The clock the engine reads; tests move it instead of sleeping.
    fn clock(&self) -> &ManualClock;

    /// On the engine's own driver, open a transaction, write a business row,
    /// enqueue `job` inside the same transaction, then commit or roll back.
    fn outbox_enqueue(&self, job: NewJob, commit: bool) -> impl Future<Output = Result<()>> + Send;

    /// On the engine's own driver, open a transaction, write a business row,
    /// publish `events` inside the same transaction (the engine's
    /// `within(..)` and `stream_publish`), then commit or roll back. Returns the offsets
    /// the publish reported.
    fn outbox_publish(
        &self,
        events: Vec<NewEvent>,
        commit: bool,
    ) -> impl Future<Output = Result<Vec<i64>>> + Send;

    /// On another connection, open a transaction and publish `events` in it
    /// (the engine's `within(..)` and `stream_publish`), and keep it open until the
    /// returned handle ends it.
    fn publish_held(
        &self,
        events: Vec<NewEvent>,
    ) -> impl Future<Output = Result<HeldPublish>> + Send;

    /// On a connection of the application's, open a transaction that
    /// writes a row of its own (publishing nothing) and keep it open until
    /// the returned handle ends it: in the store's own database when
    /// `same_database`, else in another database of the same server
    /// (another file beside the store's, for SQLite). `None` where such a
    /// transaction would stop the store's own writers (SQLite's one writer
    /// per file), so there is nothing to ask the engine.
    fn hold_foreign_write(
        &self,
        same_database: bool,
    ) -> impl Future<Output = Result<Option<HeldPublish>>> + Send;

    /// The application's own SQL inside `tx`: insert a row keyed `key` into
    /// the application's business table (made with the harness), through
    /// the transaction's native handle (SQLite's connection,
    /// PostgreSQL's client).
    fn business_insert(
        &self,
        tx: &mut Transaction<Self::Engine>,
        key: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The keys of the business table's committed rows, in the order they
    /// were inserted, read outside any transaction.
    fn business_rows(&self) -> impl Future<Output = Vec<String>> + Send;

    /// Run the write `params` inside a transaction of the application's
    /// own connection (rusqlite's, tokio-postgres's) with the engine's
    /// `within(..)`, then commit; on the write's error, roll back and
    /// return it. [`Where::AppTx`] runs a row's writes here.
    fn in_app_tx<P>(&self, params: P) -> impl Future<Output = Result<P::Output>> + Send
    where
        P: alkstore_core::op::Op + Send + 'static,
        P::Output: Send + 'static,
        Self::Engine: alkstore_core::op::Drive<P>;

    /// Whether the engine relays another connection's commits as hints that
    /// name their queue (PostgreSQL's NOTIFY), announcing its listener with
    /// one [`Wake::All`](alkstore_core::Wake::All) when it is ready, rather
    /// than as bare "something changed" hints (SQLite's `data_version`).
    fn foreign_hints_name_queue(&self) -> bool {
        false
    }

    /// Open another engine over this harness's store (the same file or
    /// schema) with [`Harness::clock`]; `create: false` opens it
    /// existing-only, as read-only tools do.
    fn reopen(&self, create: bool) -> impl Future<Output = Result<Self::Engine>> + Send;

    /// Set the store's schema version to `version` with the engine's own
    /// SQL on its meta table, as a newer alkstore would have left it.
    fn set_schema_version(&self, version: i64) -> impl Future<Output = Result<()>> + Send;

    /// Open an engine where no store is yet: a place beside the harness's
    /// (another file in its directory, another schema) that its teardown
    /// removes. `create: false` opens it existing-only.
    fn open_absent(&self, create: bool) -> impl Future<Output = Result<Self::Engine>> + Send;

    /// Whether anything exists at [`Harness::open_absent`]'s place (the
    /// file, the schema).
    fn absent_created(&self) -> impl Future<Output = bool> + Send;

    /// Drop whatever the harness created. Runs after every row, whether it
    /// passed or panicked.
    fn teardown(self) -> impl Future<Output = ()> + Send;
}

/// A transaction a harness keeps open (see [`Harness::publish_held`] and
/// [`Harness::hold_foreign_write`]) until [`HeldPublish::finish`].
#[derive(Debug)]
pub struct HeldPublish {
    /// The offsets the open transaction's publish reported (none for a
    /// transaction that publishes nothing).
    pub offsets: Vec<i64>,
    end: tokio::sync::oneshot::Sender<bool>,
    done: tokio::task::JoinHandle<Result<()>>,
}

impl HeldPublish {
    /// A held transaction: `offsets` published, `end` receives whether to
    /// commit, `done` finishes once it has.
    pub fn new(
        offsets: Vec<i64>,
        end: tokio::sync::oneshot::Sender<bool>,
        done: tokio::task::JoinHandle<Result<()>>,
    ) -> Self {
        HeldPublish { offsets, end, done }
    }

    /// Commit (or roll back) and wait until that is done.
    pub async fn finish(self, commit: bool) -> Result<()> {
        let _ = self.end.send(commit);
        self.done
            .await
            .map_err(|e| alkstore_core::Error::database("held publish", e.to_string()))?
    }
}

/// One isolated store under test for the `runtime` rows: the
/// [`alkstore`] facade over the engine, on its real clock.
///
/// The worker runtime sleeps, heartbeats and times handlers out on real
/// time, and its rows wait for that time to pass instead of moving a
/// [`ManualClock`]; so the engine behind [`RuntimeHarness::store`] reads the
/// clock it reads in production (the system clock for SQLite, the database
/// server's for PostgreSQL).
pub trait RuntimeHarness: Send + Sync + Sized + 'static {
    /// A store over a fresh engine of the kind under test, opened without a
    /// clock of its own: `Store::from_engine(AnyEngine::Sqlite(engine))`.
    fn store(&self) -> &alkstore::Store;

    /// Send a notification with the engine's `within(..)` and `notify` inside a
    /// transaction of the application's own connection, then commit it or
    /// roll it back.
    fn notify_in_transaction(
        &self,
        channel: &str,
        payload: &str,
        commit: bool,
    ) -> impl Future<Output = Result<()>> + Send;

    /// As [`Harness::publish_held`]: on another connection, publish `events`
    /// in a transaction kept open until the returned handle ends it.
    fn publish_held(
        &self,
        events: Vec<NewEvent>,
    ) -> impl Future<Output = Result<HeldPublish>> + Send;

    /// The application's own table, in the store's database, that the
    /// transactional handlers of the `runtime` rows write to (see
    /// [`Business`]). A handle rather than methods here, because a
    /// worker's handlers outlive any borrow of the harness.
    fn business(&self) -> std::sync::Arc<dyn Business>;

    /// Drop whatever the harness created. Runs after every row, whether it
    /// passed or panicked.
    fn teardown(self) -> impl Future<Output = ()> + Send;
}

/// A future of a [`Business`] table's, borrowing it (and the transaction).
pub type BusinessFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// The application's own table (`key TEXT, n BIGINT`, no unique key, so
/// a duplicate would show) that transactional handlers write to with the
/// application's own SQL, on the native handle of the transaction they
/// are given ([`alkstore::Tx::sqlite`], [`alkstore::Tx::postgres`]).
pub trait Business: Send + Sync + 'static {
    /// Insert the row `(key, n)` inside `tx`: it commits or rolls back with
    /// everything else in `tx`.
    fn insert<'t>(
        &'t self,
        tx: &'t mut alkstore::Tx,
        key: &'t str,
        n: i64,
    ) -> BusinessFuture<'t, ()>;

    /// Every committed row, `(key, n)`, in the order they were inserted.
    fn rows(&self) -> BusinessFuture<'_, Vec<(String, i64)>>;
}

/// Expand to one `#[tokio::test]` per contract row for the harness factories
/// `$factory` (an absolute path to `async fn(&'static str) -> impl Harness`)
/// and `$runtime` (the same, `-> impl RuntimeHarness`, for the `runtime`
/// rows); each factory's argument is the test's unique name.
#[macro_export]
macro_rules! contract_suite {
    ($factory:path, runtime = $runtime:path $(,)?) => {
        $crate::__areas!($crate::__contract_tests, [$factory, $runtime]);
    };
}

/// Every area: one line each. Calls `$then! { @area $args <area> { … } }`
/// per area, and inside it `$then! { @rows $args <area>::<sub> [rows…] }`
/// per sub-area.
#[doc(hidden)]
#[macro_export]
macro_rules! __areas {
    ($then:path, $args:tt) => {
        $crate::__queues!($then, $args);
        $crate::__channels!($then, $args);
        $crate::__streams!($then, $args);
        $crate::__groups!($then, $args);
        $crate::__locks!($then, $args);
        $crate::__open!($then, $args);
        $crate::__processes!($then, $args);
        $crate::__rates!($then, $args);
        $crate::__results!($then, $args);
        $crate::__schedules!($then, $args);
        $crate::__tx!($then, $args);
        $crate::__runtime!($then, $args);
    };
}

/// What [`contract_suite!`] makes of the rows: a module per area, a test per
/// row. `runtime` rows run on the runtime factory's harness, every other
/// area's on the engine factory's.
#[doc(hidden)]
#[macro_export]
macro_rules! __contract_tests {
    (@area [$factory:path, $runtime:path] $area:ident { $($body:tt)* }) => {
        mod $area {
            $($body)*
        }
    };
    (@rows [$factory:path, $runtime:path] runtime :: $sub:ident [$($name:ident),* $(,)?]) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                $crate::__run_row(
                    $runtime(concat!("runtime_", stringify!($name))).await,
                    |h| ::std::boxed::Box::pin($crate::runtime::$sub::$name(h)),
                    $crate::RuntimeHarness::teardown,
                )
                .await;
            }
        )*
    };
    (@rows [$factory:path, $runtime:path] $area:ident :: $sub:ident [$($name:ident),* $(,)?]) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                $crate::__run_row(
                    $factory(concat!(stringify!($area), "_", stringify!($name))).await,
                    |h| ::std::boxed::Box::pin($crate::$area::$sub::$name(h)),
                    $crate::Harness::teardown,
                )
                .await;
            }
        )*
    };
    (@places [$factory:path, $runtime:path] $area:ident :: $sub:ident [$($name:ident),* $(,)?]) => {
        $(
            mod $name {
                $crate::__contract_tests! { @place [$factory] $area $sub $name autocommit Autocommit }
                $crate::__contract_tests! { @place [$factory] $area $sub $name engine_tx EngineTx }
                $crate::__contract_tests! { @place [$factory] $area $sub $name app_tx AppTx }
            }
        )*
    };
    (@place [$factory:path] $area:ident $sub:ident $name:ident $test:ident $at:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            $crate::__run_row(
                $factory(concat!(stringify!($area), "_", stringify!($name))).await,
                |h| ::std::boxed::Box::pin($crate::$area::$sub::$name(h, $crate::Where::$at)),
                $crate::Harness::teardown,
            )
            .await;
        }
    };
}

/// A row's future, borrowing its harness.
#[doc(hidden)]
pub type RowFuture<'h> = Pin<Box<dyn Future<Output = ()> + 'h>>;

/// Run `row` on `harness`, then `teardown` the harness whether the row
/// returned or panicked; a panic is then resumed, so the test still fails
/// with the row's own message.
#[doc(hidden)]
pub async fn __run_row<H, T>(
    harness: H,
    row: impl for<'h> FnOnce(&'h H) -> RowFuture<'h>,
    teardown: impl FnOnce(H) -> T,
) where
    T: Future<Output = ()>,
{
    let outcome = {
        let mut running = row(&harness);
        std::future::poll_fn(|cx| {
            match panic::catch_unwind(AssertUnwindSafe(|| running.as_mut().poll(cx))) {
                Ok(Poll::Pending) => Poll::Pending,
                Ok(Poll::Ready(())) => Poll::Ready(Ok(())),
                Err(payload) => Poll::Ready(Err(payload)),
            }
        })
        .await
    };
    teardown(harness).await;
    if let Err(payload) = outcome {
        panic::resume_unwind(payload);
    }
}

#[cfg(test)]
mod tests;
