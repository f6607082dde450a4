//! Contract rows for consumer groups, one file per sub-area.
//!
//! Each file ends with the macro that lists its rows (see the crate docs);
//! `__groups!` below names every file's macro. Helpers shared by the rows
//! live in `support.rs`.

pub(crate) mod support;

pub mod checkpoints;
pub mod leases;
pub mod model;
pub mod read;
pub mod validation;

/// The group area: every sub-area's row list, inside `mod groups`.
#[doc(hidden)]
#[macro_export]
macro_rules! __groups {
    ($then:path, $args:tt) => {
        $then! { @area $args groups {
            $crate::__groups_checkpoints!($then, $args);
            $crate::__groups_leases!($then, $args);
            $crate::__groups_model!($then, $args);
            $crate::__groups_read!($then, $args);
            $crate::__groups_validation!($then, $args);
        } }
    };
}
