//! Contract rows for job results, one file per sub-area.
//!
//! Each file ends with the macro that lists its rows (see the crate docs);
//! `__results!` below names every file's macro.

pub mod saved;

/// The job-result area: every sub-area's row list, inside `mod results`.
#[doc(hidden)]
#[macro_export]
macro_rules! __results {
    ($then:path, $args:tt) => {
        $then! { @area $args results {
            $crate::__results_saved!($then, $args);
        } }
    };
}
