//! Contract rows for the process registry, one file per sub-area.
//!
//! Each file ends with the macro that lists its rows (see the crate docs);
//! `__processes!` below names every file's macro.

pub mod registry;

/// The process area: every sub-area's row list, inside `mod processes`.
#[doc(hidden)]
#[macro_export]
macro_rules! __processes {
    ($then:path, $args:tt) => {
        $then! { @area $args processes {
            $crate::__processes_registry!($then, $args);
        } }
    };
}
