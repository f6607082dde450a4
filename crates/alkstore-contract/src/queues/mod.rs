//! Contract rows for job queues, one file per sub-area.
//!
//! Each file ends with the macro that lists its rows (see the crate docs);
//! `__queues!` below names every file's macro. Helpers shared by the rows
//! live in `support.rs`.

pub(crate) mod support;

pub mod ack;
pub mod admin;
pub mod cancel;
pub mod claim;
pub mod concurrency;
pub mod dead;
pub mod enqueue;
pub mod expiry;
pub mod handoff;
pub mod lifecycle;
pub mod model;
pub mod outbox;
pub mod pause;
pub mod release;
pub mod retry;
pub mod stress;
pub mod tags;
pub mod throughput;
pub mod validation;
pub mod wake;

/// The queue area: every sub-area's row list, inside `mod queues`.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues {
    ($then:path, $args:tt) => {
        $then! { @area $args queues {
            $crate::__queues_ack!($then, $args);
            $crate::__queues_admin!($then, $args);
            $crate::__queues_cancel!($then, $args);
            $crate::__queues_claim!($then, $args);
            $crate::__queues_concurrency!($then, $args);
            $crate::__queues_dead!($then, $args);
            $crate::__queues_enqueue!($then, $args);
            $crate::__queues_expiry!($then, $args);
            $crate::__queues_handoff!($then, $args);
            $crate::__queues_lifecycle!($then, $args);
            $crate::__queues_model!($then, $args);
            $crate::__queues_outbox!($then, $args);
            $crate::__queues_pause!($then, $args);
            $crate::__queues_release!($then, $args);
            $crate::__queues_retry!($then, $args);
            $crate::__queues_stress!($then, $args);
            $crate::__queues_tags!($then, $args);
            $crate::__queues_throughput!($then, $args);
            $crate::__queues_validation!($then, $args);
            $crate::__queues_wake!($then, $args);
        } }
    };
}
