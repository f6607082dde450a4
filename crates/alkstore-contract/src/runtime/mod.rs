//! Contract rows for the worker runtime: the [`alkstore`] facade's
//! [`Worker`](alkstore::Worker) driving each engine, one file per sub-area.
//!
//! These rows take a [`RuntimeHarness`](crate::RuntimeHarness), whose store
//! reads the real clock: they wait for real time to pass (retries with no
//! backoff, heartbeats, handler timeouts) rather than move a clock. Each
//! file ends with the macro that lists its rows (see the crate docs);
//! `__runtime!` below names every file's macro. Helpers shared by the rows
//! live in `support.rs`.

mod support;

pub mod concurrency;
pub mod failures;
pub mod groups;
pub mod handlers;
pub mod handles;
pub mod handoff;
pub mod heartbeats;
pub mod listeners;
pub mod locks;
pub mod registry;
pub mod remote;
pub mod results;
pub mod schedules;
pub mod shutdown;
pub mod snooze_cancel;
pub mod subscribers;
pub mod transactions;

/// The runtime area: every sub-area's row list, inside `mod runtime`.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime {
    ($then:path, $args:tt) => {
        $then! { @area $args runtime {
            $crate::__runtime_concurrency!($then, $args);
            $crate::__runtime_failures!($then, $args);
            $crate::__runtime_groups!($then, $args);
            $crate::__runtime_handoff!($then, $args);
            $crate::__runtime_handlers!($then, $args);
            $crate::__runtime_handles!($then, $args);
            $crate::__runtime_heartbeats!($then, $args);
            $crate::__runtime_listeners!($then, $args);
            $crate::__runtime_locks!($then, $args);
            $crate::__runtime_registry!($then, $args);
            $crate::__runtime_remote!($then, $args);
            $crate::__runtime_results!($then, $args);
            $crate::__runtime_schedules!($then, $args);
            $crate::__runtime_shutdown!($then, $args);
            $crate::__runtime_snooze_cancel!($then, $args);
            $crate::__runtime_subscribers!($then, $args);
            $crate::__runtime_transactions!($then, $args);
        } }
    };
}
