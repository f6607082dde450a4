//! Contract rows for rate limits, one file per sub-area.
//!
//! Each file ends with the macro that lists its rows (see the crate docs);
//! `__rates!` below names every file's macro.

pub mod windows;

/// The rate-limit area: every sub-area's row list, inside `mod rates`.
#[doc(hidden)]
#[macro_export]
macro_rules! __rates {
    ($then:path, $args:tt) => {
        $then! { @area $args rates {
            $crate::__rates_windows!($then, $args);
        } }
    };
}
