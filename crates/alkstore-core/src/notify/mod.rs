//! Notify/listen: ephemeral messages on named channels.
//!
//! A notification reaches the listeners that are listening when it is
//! committed, at most once each; nothing is kept for later listeners, and a
//! listener that falls far behind may miss some (use a stream for
//! messages that must not be lost). Sent inside the caller's own
//! transaction (the engines' `within(..)` and `notify`), it is delivered only if that
//! transaction commits.
//!
//! PostgreSQL delivers through `LISTEN`/`NOTIFY` (one channel per schema;
//! the message names its alkstore channel); like `NOTIFY`, identical
//! notifications (same channel and payload) sent in one transaction arrive
//! once there, while SQLite delivers each (put a sequence number in the
//! payload where the count matters). SQLite keeps recent
//! notifications in a table (pruned after a minute) that listeners read
//! when the wake machinery says something was committed.

mod driver;
mod engine;

pub use driver::NotifyDriver;
pub use engine::NotifyEngine;

use crate::validate::validate_text;
use crate::{Error, Limits, Result, Validate};

/// The longest payload: PostgreSQL's `NOTIFY` takes under 8000 bytes, with
/// the channel's name beside it.
pub const MAX_NOTIFY_PAYLOAD: usize = 7_000;

/// How long SQLite keeps a notification for listeners that are catching up
/// (milliseconds).
pub const NOTIFY_KEEP_MS: i64 = 60_000;

/// One notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// Its channel.
    pub channel: String,
    /// Its payload.
    pub payload: String,
    /// Its place in the store's sequence where the engine keeps one
    /// (SQLite); 0 where it does not (PostgreSQL).
    pub id: i64,
}

/// Parameters of `notify`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotifyParams {
    /// The channel (a name: non-empty, at most 200 bytes, no NUL; see
    /// [`validate_text`]).
    pub channel: String,
    /// The payload (text, at most [`MAX_NOTIFY_PAYLOAD`] bytes).
    pub payload: String,
}

impl NotifyParams {
    /// `payload` on `channel`.
    pub fn new(channel: impl Into<String>, payload: impl Into<String>) -> Self {
        NotifyParams {
            channel: channel.into(),
            payload: payload.into(),
        }
    }
}

impl Validate for NotifyParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_notify(&self.channel, &self.payload)
    }
}

/// Reject a bad channel name or payload (shared with the engines'
/// in-transaction `notify` on `within(..)`).
pub fn validate_notify(channel: &str, payload: &str) -> Result<()> {
    validate_text("channel", channel)?;
    if payload.len() > MAX_NOTIFY_PAYLOAD {
        return Err(Error::invalid(
            "notify payload",
            format!("{} bytes is over {MAX_NOTIFY_PAYLOAD}", payload.len()),
        ));
    }
    if payload.contains('\0') {
        return Err(Error::invalid(
            "notify payload",
            "must not contain a NUL byte",
        ));
    }
    Ok(())
}

/// Parameters of `notify_poll`: a channel's kept notifications after an id.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotifyPollParams {
    /// The channel.
    pub channel: String,
    /// Only notifications after this id.
    pub after_id: i64,
    /// At most this many (1..=the store's page limit).
    pub limit: u32,
}

impl NotifyPollParams {
    /// Up to `limit` notifications of `channel` after id `after_id`.
    pub fn new(channel: impl Into<String>, after_id: i64, limit: u32) -> Self {
        NotifyPollParams {
            channel: channel.into(),
            after_id,
            limit,
        }
    }
}

impl Validate for NotifyPollParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        validate_text("channel", &self.channel)?;
        limits.check_page("limit", self.limit)
    }
}

/// PostgreSQL's encoding of a notification in its schema's channel:
/// `{channel length}:{channel}{payload}`.
pub fn encode_message(channel: &str, payload: &str) -> String {
    format!("{}:{channel}{payload}", channel.len())
}

/// The inverse of [`encode_message`]; `None` for text it did not make.
///
/// ```
/// use alkstore_core::notify::{decode_message, encode_message};
/// let m = encode_message("orders:eu", "42:shipped");
/// assert_eq!(decode_message(&m), Some(("orders:eu", "42:shipped")));
/// assert_eq!(decode_message("9:x"), None);
/// ```
pub fn decode_message(text: &str) -> Option<(&str, &str)> {
    let (len, rest) = text.split_once(':')?;
    let len: usize = len.parse().ok()?;
    if !rest.is_char_boundary(len) || len > rest.len() {
        return None;
    }
    Some(rest.split_at(len))
}
