//! Contract rows for the application's own transaction
//! ([`Transaction`](alkstore_core::Transaction)), one file per primitive,
//! plus input validation.
//!
//! For every call: a commit makes its write visible together with the
//! application's own row (and wakes this process's waiters), a rollback or
//! a drop leaves nothing, the application's row included; a claim, lease
//! or lock that is no longer the caller's refuses the call and the whole
//! transaction rolls back; refused input spoils nothing.
//!
//! Each file ends with the macro that lists its rows (see the crate docs);
//! `__tx!` below names every file's macro.

pub mod groups;
pub mod locks;
pub mod notify;
pub mod queues;
pub mod schedules;
pub mod streams;
pub(crate) mod support;
pub mod validation;

/// The transaction area: every sub-area's row list, inside `mod tx`.
#[doc(hidden)]
#[macro_export]
macro_rules! __tx {
    ($then:path, $args:tt) => {
        $then! { @area $args tx {
            $crate::__tx_queues!($then, $args);
            $crate::__tx_streams!($then, $args);
            $crate::__tx_notify!($then, $args);
            $crate::__tx_schedules!($then, $args);
            $crate::__tx_groups!($then, $args);
            $crate::__tx_locks!($then, $args);
            $crate::__tx_validation!($then, $args);
        } }
    };
}
