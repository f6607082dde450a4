//! The alkstore contract suite: every behaviour an engine promises, written
//! once and run against each engine.
//!
//! An engine's `tests/contract.rs` provides a factory that builds a fresh,
//! isolated [`Harness`] (its own file, schema or database, and a
//! `ManualClock`), then calls
//! [`contract_suite!`] once. The macro expands to one named `#[tokio::test]`
//! per contract row, grouped in modules by area (`queues`, …). Each test
//! tears its harness down even when the row panics, then fails with the
//! row's panic.
//!
//! ```ignore
//! async fn harness(name: &'static str) -> MyHarness { /* fresh store */ }
//! alkstore_contract::contract_suite!(crate::harness);
//! ```
//!
//! # Layout and registration
//!
//! Rows live in `src/<area>/<sub_area>.rs`: `src/queues/claim.rs` holds the
//! claim rows, `src/queues/support.rs` the helpers they share. A row is a
//! `pub async fn name<H: Harness>(h: &H)`, and is declared where it is
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
//!   below.
//!
//! Test names are `<area>::<row>` (the sub-area is not part of the name), so
//! row names must be unique within an area.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::Poll;

use alkstore_core::{ManualClock, NewJob, QueueAdmin, QueueEngine, Result};

pub mod queues;

/// One isolated store under test.
pub trait Harness: Send + Sync + Sized + 'static {
    /// The engine under test.
    type Engine: QueueEngine + QueueAdmin + Clone;

    /// The engine, opened with [`Harness::clock`] as its clock.
    fn engine(&self) -> &Self::Engine;

    /// The clock the engine reads; tests move it instead of sleeping.
    fn clock(&self) -> &ManualClock;

    /// On the engine's own driver, open a transaction, write a business row,
    /// enqueue `job` inside the same transaction, then commit or roll back.
    fn outbox_enqueue(&self, job: NewJob, commit: bool) -> impl Future<Output = Result<()>> + Send;

    /// Whether the engine relays another connection's commits as hints that
    /// name their queue (PostgreSQL's NOTIFY), announcing its listener with
    /// one [`Wake::All`](alkstore_core::Wake::All) when it is ready, rather
    /// than as bare "something changed" hints (SQLite's `data_version`).
    fn foreign_hints_name_queue(&self) -> bool {
        false
    }

    /// Drop whatever the harness created. Runs after every row, whether it
    /// passed or panicked.
    fn teardown(self) -> impl Future<Output = ()> + Send;
}

/// Expand to one `#[tokio::test]` per contract row for the harness factory
/// `$factory` (an absolute path to `async fn(&'static str) -> impl Harness`;
/// the argument is the test's unique name).
#[macro_export]
macro_rules! contract_suite {
    ($factory:path) => {
        $crate::__areas!($crate::__contract_tests, [$factory]);
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
    };
}

/// What [`contract_suite!`] makes of the rows: a module per area, a test per
/// row.
#[doc(hidden)]
#[macro_export]
macro_rules! __contract_tests {
    (@area [$factory:path] $area:ident { $($body:tt)* }) => {
        mod $area {
            $($body)*
        }
    };
    (@rows [$factory:path] $area:ident :: $sub:ident [$($name:ident),* $(,)?]) => {
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
