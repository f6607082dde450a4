//! Contract rows for schedules, one file per sub-area.
//!
//! Each file ends with the macro that lists its rows (see the crate docs);
//! `__schedules!` below names every file's macro.

pub mod firing;
pub mod model;
pub mod registry;

/// The schedule area: every sub-area's row list, inside `mod schedules`.
#[doc(hidden)]
#[macro_export]
macro_rules! __schedules {
    ($then:path, $args:tt) => {
        $then! { @area $args schedules {
            $crate::__schedules_firing!($then, $args);
            $crate::__schedules_model!($then, $args);
            $crate::__schedules_registry!($then, $args);
        } }
    };
}
