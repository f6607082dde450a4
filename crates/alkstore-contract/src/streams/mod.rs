//! Contract rows for event streams, one file per sub-area.
//!
//! Each file ends with the macro that lists its rows (see the crate docs);
//! `__streams!` below names every file's macro. Helpers shared by the rows
//! live in `support.rs`.

pub(crate) mod support;

/// Wait until nothing of a stream is held back (for engine tests too).
pub use support::settle;

pub mod gaps;
pub mod model;
pub mod offsets;
pub mod publish;
pub mod stats;
pub mod trim;
pub mod validation;
pub mod wake;

/// The stream area: every sub-area's row list, inside `mod streams`.
#[doc(hidden)]
#[macro_export]
macro_rules! __streams {
    ($then:path, $args:tt) => {
        $then! { @area $args streams {
            $crate::__streams_gaps!($then, $args);
            $crate::__streams_model!($then, $args);
            $crate::__streams_offsets!($then, $args);
            $crate::__streams_publish!($then, $args);
            $crate::__streams_stats!($then, $args);
            $crate::__streams_trim!($then, $args);
            $crate::__streams_validation!($then, $args);
            $crate::__streams_wake!($then, $args);
        } }
    };
}
