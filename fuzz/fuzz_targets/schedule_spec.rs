//! Fuzz the schedule-spec parser and its boundary arithmetic: any text and
//! zone either parse or give an error (never a panic or a hang), and a
//! parsed spec's boundaries strictly advance.
//!
//! Run bounded (outside CI; needs cargo-fuzz, which builds with nightly
//! flags — `RUSTC_BOOTSTRAP=1` lets the stable toolchain do it):
//!
//! ```sh
//! cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run schedule_spec -- -max_total_time=60
//! ```

#![no_main]

use alkstore_core::schedule::Spec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (&str, Option<&str>, i64)| {
    let (text, tz, after) = input;
    // Keep the start within what the store accepts as a time.
    let after = after.rem_euclid(1 << 42);
    if let Ok(spec) = Spec::parse(text, tz) {
        if let Some(first) = spec.next_after(after) {
            assert!(first > after, "{text:?}: {first} <= {after}");
            if let Some(second) = spec.next_after(first) {
                assert!(second > first, "{text:?}: {second} <= {first}");
            }
        }
    }
});
