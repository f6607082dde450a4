//! Contract rows for notification channels, one file per sub-area.
//!
//! Each file ends with the macro that lists its rows (see the crate docs);
//! `__channels!` below names every file's macro.

pub mod send;

/// The channel area: every sub-area's row list, inside `mod channels`.
#[doc(hidden)]
#[macro_export]
macro_rules! __channels {
    ($then:path, $args:tt) => {
        $then! { @area $args channels {
            $crate::__channels_send!($then, $args);
        } }
    };
}
