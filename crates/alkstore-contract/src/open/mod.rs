//! Contract rows for opening a store, one file per sub-area: what a
//! reopen keeps, what a store from a newer alkstore does, and what an
//! existing-only open (read-only tools) may create.
//!
//! Each file ends with the macro that lists its rows (see the crate docs);
//! `__open!` below names every file's macro.

pub mod reopen;

/// The open area: every sub-area's row list, inside `mod open`.
#[doc(hidden)]
#[macro_export]
macro_rules! __open {
    ($then:path, $args:tt) => {
        $then! { @area $args open {
            $crate::__open_reopen!($then, $args);
        } }
    };
}
