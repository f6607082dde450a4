//! The value shapes of streams.

use crate::{Error, Limits, Result};

use super::{validate_key, validate_stream_name};

/// An event to publish.
///
/// ```
/// use alkstore_core::stream::NewEvent;
/// let e = NewEvent::new("orders", br#"{"id":7}"#.to_vec()).key("customer-42");
/// assert_eq!(e.key.as_deref(), Some("customer-42"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// The stream it is appended to.
    pub stream: String,
    /// Kept with the event (consumer groups hash it to pick a bucket).
    pub key: Option<String>,
    /// Opaque bytes.
    pub payload: Vec<u8>,
}

impl NewEvent {
    /// An event without a key.
    pub fn new(stream: impl Into<String>, payload: impl Into<Vec<u8>>) -> Self {
        NewEvent {
            stream: stream.into(),
            key: None,
            payload: payload.into(),
        }
    }

    /// With this key.
    #[must_use]
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Validate against the contract and `limits`.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        validate_stream_name(&self.stream)?;
        if let Some(k) = &self.key {
            validate_key(k)?;
        }
        if self.payload.len() > limits.max_payload_bytes {
            return Err(Error::PayloadTooLarge {
                size: self.payload.len(),
                limit: limits.max_payload_bytes,
            });
        }
        Ok(())
    }

    /// The distinct stream names of a batch, in first-seen order.
    pub fn distinct_streams(events: &[NewEvent]) -> Vec<String> {
        let mut streams: Vec<String> = Vec::new();
        for e in events {
            if !streams.contains(&e.stream) {
                streams.push(e.stream.clone());
            }
        }
        streams
    }
}

/// A published event, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its position (see the [module docs](super)).
    pub offset: i64,
    /// The stream (shared by every event of one read).
    pub stream: std::sync::Arc<str>,
    /// The key it was published with.
    pub key: Option<String>,
    /// Opaque bytes.
    pub payload: Vec<u8>,
    /// When it was published (unix seconds, the engine's clock).
    pub created_at: i64,
}

/// One consumer's saved offset and how far behind the head it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerOffset {
    /// The consumer.
    pub consumer: String,
    /// The last offset it committed (it has handled everything up to here).
    pub offset: i64,
    /// Readable events after its offset.
    pub lag: u64,
    /// When it last moved (unix seconds).
    pub updated_at: i64,
}

/// Counts for one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// The stream.
    pub stream: String,
    /// Highest readable offset (`None`: no events).
    pub head: Option<i64>,
    /// Lowest stored offset (`None`: no events).
    pub first: Option<i64>,
    /// Readable events stored.
    pub events: u64,
    /// Committed events readers cannot see yet because an older
    /// transaction is still open (always 0 on SQLite): a long-open
    /// transaction shows here instead of as silent lag.
    pub held_back: u64,
    /// Age in seconds of the oldest open transaction holding readers back
    /// (`None` when nothing is held back).
    pub held_back_by_s: Option<i64>,
    /// Every consumer with a saved offset.
    pub consumers: Vec<ConsumerOffset>,
    /// Events older than this many seconds are trimmed by maintenance
    /// (`None`: kept until trimmed by hand).
    pub max_age_s: Option<i64>,
}

/// One stream in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    /// The stream.
    pub stream: String,
    /// Highest stored offset (`None`: no events left).
    pub head: Option<i64>,
    /// Events stored.
    pub events: u64,
}
