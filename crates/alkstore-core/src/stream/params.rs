//! The parameters of stream engine calls, each validating itself against
//! the store's [`Limits`].

use std::time::Duration;

use crate::validate::validate_duration;
use crate::{Error, Limits, Result, Validate};

use super::types::NewEvent;
use super::{validate_consumer, validate_stream_name};

/// Parameters of `stream_publish`: events appended all or none.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamPublishParams {
    /// The events, in the order their offsets grow.
    pub events: Vec<NewEvent>,
}

impl StreamPublishParams {
    /// Publish `events`, all or none.
    pub fn new(events: Vec<NewEvent>) -> Self {
        StreamPublishParams { events }
    }
}

impl From<Vec<NewEvent>> for StreamPublishParams {
    fn from(events: Vec<NewEvent>) -> Self {
        StreamPublishParams { events }
    }
}

impl From<NewEvent> for StreamPublishParams {
    fn from(event: NewEvent) -> Self {
        StreamPublishParams {
            events: vec![event],
        }
    }
}

impl Validate for StreamPublishParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        if self.events.len() > limits.max_page as usize {
            return Err(Error::invalid(
                "publish batch",
                format!(
                    "{} events is more than {} in one call",
                    self.events.len(),
                    limits.max_page
                ),
            ));
        }
        self.events.iter().try_for_each(|e| e.validate(limits))
    }
}

/// Parameters of `stream_read`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamReadParams {
    /// The stream.
    pub stream: String,
    /// Only events after this offset (0: from the start).
    pub after: i64,
    /// Most events to return (1..=`Limits::max_page`).
    pub limit: u32,
    /// Read backwards: only events before this offset, newest first (an
    /// operator paging back from the head; `after` still bounds the read
    /// from below). `None`, the default, reads forwards, oldest first.
    pub before: Option<i64>,
}

impl StreamReadParams {
    /// Up to `limit` events of `stream` after offset `after`.
    pub fn new(stream: impl Into<String>, after: i64, limit: u32) -> Self {
        StreamReadParams {
            stream: stream.into(),
            after,
            limit,
            before: None,
        }
    }

    /// Read backwards from `offset`: the `limit` newest events before it,
    /// newest first. `i64::MAX` reads the stream's newest events.
    ///
    /// ```
    /// use alkstore_core::stream::StreamReadParams;
    /// let newest = StreamReadParams::new("orders", 0, 20).before(i64::MAX);
    /// assert_eq!(newest.before, Some(i64::MAX));
    /// ```
    #[must_use]
    pub fn before(mut self, offset: i64) -> Self {
        self.before = Some(offset);
        self
    }
}

impl Validate for StreamReadParams {
    fn validate_params(&self, limits: &Limits) -> Result<()> {
        validate_stream_name(&self.stream)?;
        limits.check_page("read limit", self.limit)
    }
}

/// Parameters of `stream_offset_get`: whose offset.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamOffsetGetParams {
    /// The stream.
    pub stream: String,
    /// The consumer.
    pub consumer: String,
}

impl StreamOffsetGetParams {
    /// The offset `consumer` saved on `stream`.
    pub fn new(stream: impl Into<String>, consumer: impl Into<String>) -> Self {
        StreamOffsetGetParams {
            stream: stream.into(),
            consumer: consumer.into(),
        }
    }
}

impl Validate for StreamOffsetGetParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_stream_name(&self.stream)?;
        validate_consumer(&self.consumer)
    }
}

/// Parameters of `stream_offset_commit`.
///
/// Without an expectation the saved offset only moves forward: a lower or
/// equal offset changes nothing and the call returns the one saved. With
/// one ([`StreamOffsetCommitParams::expecting`]) the call is a
/// compare-and-set, the fence a consumer's competing instances need for
/// exactly-once effects: it saves `offset` only if the saved offset is
/// exactly the expected one, and otherwise writes nothing and fails with
/// [`Error::NotHeld`] (another instance moved it first).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamOffsetCommitParams {
    /// The stream.
    pub stream: String,
    /// The consumer.
    pub consumer: String,
    /// The last offset the consumer has handled (0: nothing yet).
    pub offset: i64,
    /// The offset the caller last read as saved (no saved offset counts
    /// as 0): when set, the commit moves the offset only from exactly this
    /// one, else fails with [`Error::NotHeld`] and writes nothing. Inside a
    /// transaction the offset then stays as checked until it ends
    /// (PostgreSQL: the consumer's row stays locked, so a concurrent
    /// commit waits for it and then fails; SQLite: the write lock).
    pub expected: Option<i64>,
}

impl StreamOffsetCommitParams {
    /// `consumer` has handled `stream` up to `offset`.
    pub fn new(stream: impl Into<String>, consumer: impl Into<String>, offset: i64) -> Self {
        StreamOffsetCommitParams {
            stream: stream.into(),
            consumer: consumer.into(),
            offset,
            expected: None,
        }
    }

    /// Save the offset only if the saved one is exactly `previous` (no
    /// saved offset counts as 0); else [`Error::NotHeld`] and nothing is
    /// written. See [`StreamOffsetCommitParams::expected`].
    #[must_use]
    pub fn expecting(mut self, previous: i64) -> Self {
        self.expected = Some(previous);
        self
    }
}

impl Validate for StreamOffsetCommitParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_stream_name(&self.stream)?;
        validate_consumer(&self.consumer)?;
        if self.offset < 0 {
            return Err(Error::invalid("offset", "must not be negative"));
        }
        if let Some(expected) = self.expected {
            if expected < 0 {
                return Err(Error::invalid("expected offset", "must not be negative"));
            }
            if expected > self.offset {
                return Err(Error::invalid(
                    "expected offset",
                    format!(
                        "{expected} is past the offset to save ({}): an offset only moves forward",
                        self.offset
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Parameters of `stream_offsets`: the stream whose consumers to list.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamOffsetsParams {
    /// The stream.
    pub stream: String,
}

impl<S: Into<String>> From<S> for StreamOffsetsParams {
    fn from(stream: S) -> Self {
        StreamOffsetsParams {
            stream: stream.into(),
        }
    }
}

impl Validate for StreamOffsetsParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_stream_name(&self.stream)
    }
}

/// Parameters of `stream_stats`.
pub type StreamStatsParams = StreamOffsetsParams;

/// Parameters of `stream_trim`: delete events before an offset, older than
/// an age, or both (an event matching either goes).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamTrimParams {
    /// The stream.
    pub stream: String,
    /// Delete events with an offset below this (at most the head + 1).
    pub before: Option<i64>,
    /// Delete events published longer ago than this (at least 1 s, as
    /// [`StreamRetentionParams::max_age`]).
    pub older_than: Option<Duration>,
}

impl StreamTrimParams {
    /// Delete the events of `stream` below offset `before`.
    pub fn before(stream: impl Into<String>, before: i64) -> Self {
        StreamTrimParams {
            stream: stream.into(),
            before: Some(before),
            older_than: None,
        }
    }

    /// Delete the events of `stream` published longer ago than `age`.
    pub fn older_than(stream: impl Into<String>, age: Duration) -> Self {
        StreamTrimParams {
            stream: stream.into(),
            before: None,
            older_than: Some(age),
        }
    }

    /// Also delete the events published longer ago than `age`.
    #[must_use]
    pub fn and_older_than(mut self, age: Duration) -> Self {
        self.older_than = Some(age);
        self
    }
}

impl Validate for StreamTrimParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_stream_name(&self.stream)?;
        validate_duration("trim age", self.older_than)?;
        // As a retention's max age: under a second would delete every
        // event (trim before the head + 1 says that on purpose).
        if self.older_than.is_some_and(|d| d.as_secs() == 0) {
            return Err(Error::invalid("trim age", "must be at least 1 s"));
        }
        if self.before.is_none() && self.older_than.is_none() {
            return Err(Error::invalid(
                "trim",
                "give an offset to trim before, an age, or both",
            ));
        }
        if self.before.is_some_and(|b| b < 0) {
            return Err(Error::invalid("trim offset", "must not be negative"));
        }
        Ok(())
    }
}

/// Parameters of `stream_retention_set`: how long maintenance keeps a
/// stream's events.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamRetentionParams {
    /// The stream.
    pub stream: String,
    /// Keep events this long (`None`: keep them until trimmed by hand).
    pub max_age: Option<Duration>,
}

impl StreamRetentionParams {
    /// Keep the events of `stream` for `max_age` (`None`: until trimmed
    /// by hand).
    pub fn new(stream: impl Into<String>, max_age: Option<Duration>) -> Self {
        StreamRetentionParams {
            stream: stream.into(),
            max_age,
        }
    }
}

impl Validate for StreamRetentionParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_stream_name(&self.stream)?;
        validate_duration("stream max age", self.max_age)?;
        if self.max_age.is_some_and(|d| d.as_secs() == 0) {
            return Err(Error::invalid("stream max age", "must be at least 1 s"));
        }
        Ok(())
    }
}
