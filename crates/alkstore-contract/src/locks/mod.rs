//! Contract rows for locks, one file per sub-area.
//!
//! Each file ends with the macro that lists its rows (see the crate docs);
//! `__locks!` below names every file's macro.

pub mod fencing;
pub mod model;
pub mod validation;

/// The lock area: every sub-area's row list, inside `mod locks`.
#[doc(hidden)]
#[macro_export]
macro_rules! __locks {
    ($then:path, $args:tt) => {
        $then! { @area $args locks {
            $crate::__locks_fencing!($then, $args);
            $crate::__locks_model!($then, $args);
            $crate::__locks_validation!($then, $args);
        } }
    };
}
