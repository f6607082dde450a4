//! Event streams: durable, append-only logs read in offset order, with
//! consumer offsets. The value shapes, the call parameters, the driver
//! trait engines implement ([`StreamDriver`]) and the trait callers use
//! ([`StreamEngine`]).
//!
//! An event's **offset** is a positive `i64` the engine assigns when the
//! event is published. Offsets are unique in a store and never reused, and
//! a reader never sees an offset lower than one it has already seen: reads
//! return only events no still-open transaction can precede. On SQLite
//! offsets count 1, 2, 3, …; on PostgreSQL they are derived from the
//! publishing transaction (see `alkstore-postgres`), so they are sparse
//! and large. Treat them as opaque, increasing positions.

mod driver;
mod engine;
mod params;
mod types;

pub use driver::StreamDriver;
pub use engine::StreamEngine;
pub use params::*;
pub use types::*;

use crate::validate::validate_text;
use crate::Result;

/// Reject empty, oversized or NUL-containing stream names.
pub fn validate_stream_name(stream: &str) -> Result<()> {
    validate_text("stream name", stream)
}

/// The error for a consumer commit beyond a stream's head (engines decide
/// the head; the wording is one).
pub fn beyond_head(offset: i64, stream: &str, head: i64) -> crate::Error {
    crate::Error::invalid(
        "offset",
        format!("{offset} is beyond the head of stream {stream:?} ({head}); nothing was saved"),
    )
}

/// The error for a consumer commit that expected the saved offset to be
/// `expected` and found it at `saved` (`None`: nothing saved, which counts
/// as 0): another instance of the consumer moved it first.
pub fn offset_moved(
    stream: &str,
    consumer: &str,
    expected: i64,
    saved: Option<i64>,
) -> crate::Error {
    crate::Error::NotHeld {
        what: format!(
            "offset {expected} of consumer {consumer:?} on stream {stream:?} (it is at {}; \
             nothing was saved)",
            saved.unwrap_or(0)
        ),
    }
}

/// The error for a trim before an offset past a stream's head + 1.
pub fn trim_past_head(before: i64, stream: &str, head: i64) -> crate::Error {
    crate::Error::invalid(
        "trim offset",
        format!("{before} is past the head of stream {stream:?} ({head}); nothing was deleted"),
    )
}

/// Reject an event key that cannot be published: empty, oversized or
/// NUL-containing (also what `alk groups bucket` refuses).
pub fn validate_key(key: &str) -> Result<()> {
    validate_text("event key", key)
}

/// Reject empty, oversized or NUL-containing consumer names.
pub fn validate_consumer(consumer: &str) -> Result<()> {
    validate_text("consumer name", consumer)
}
