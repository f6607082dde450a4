//! Event streams through the facade: a [`Stream`] handle to publish, read
//! and inspect one stream, and a [`Subscriber`] that replays from a saved
//! offset and then follows the stream live.

pub(crate) mod batch;
pub(crate) mod ctx;
mod options;
mod subscriber;

use crate::runs::Runs;
use alkstore_core::Writes as _;
use alkstore_core::{Result, StreamEngine};
use serde::Serialize;

use crate::Store;

pub use alkstore_core::stream::{
    validate_key, ConsumerOffset, Event, NewEvent, StreamInfo, StreamOffsetCommitParams,
    StreamOffsetGetParams, StreamReadParams, StreamRetentionParams, StreamStats, StreamTrimParams,
};
pub use ctx::EventCtx;
pub use options::{OnError, StartAt, SubscriberOpts};
pub(crate) use subscriber::FollowUps;
pub use subscriber::{Subscriber, SubscriberReport};

/// A handle to one stream.
///
/// ```no_run
/// # async fn demo() -> alkstore::Result<()> {
/// let store = alkstore::Store::open("sqlite://app.db").await?;
/// let orders = store.stream("orders");
/// let offset = orders.publish(Some("customer-42"), &serde_json::json!({"id": 7})).await?;
/// let events = orders.read(0, 100).await?;
/// assert_eq!(events.last().map(|e| e.offset), Some(offset));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Stream<R: Runs = Store> {
    store: R,
    name: String,
}

/// Writes run where the handle was made (see [`Runs`]): `store.stream(..)`
/// commits each on its own, `tx.stream(..)` inside the transaction.
impl<R: Runs> Stream<R> {
    pub(crate) fn new(store: R, name: String) -> Stream<R> {
        Stream { store, name }
    }

    /// The stream's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Append one event, its payload `value` serialized as JSON, under
    /// `key` (events of one key stay in order for a consumer group's
    /// bucket); returns its offset.
    pub async fn publish<T: Serialize + ?Sized>(
        &self,
        key: Option<&str>,
        value: &T,
    ) -> Result<i64> {
        self.publish_raw(key, crate::queue::encode(value)?).await
    }

    /// Append one event of raw bytes; returns its offset.
    pub async fn publish_raw(&self, key: Option<&str>, payload: Vec<u8>) -> Result<i64> {
        let mut event = NewEvent::new(self.name.clone(), payload);
        event.key = key.map(str::to_string);
        let offsets = self.store.place().stream_publish(event).await?;
        offsets.first().copied().ok_or_else(|| {
            alkstore_core::Error::database("stream_publish", "the engine returned no offset")
        })
    }

    /// Append events `(key, value)`, each serialized as JSON, all or none;
    /// returns their offsets.
    pub async fn publish_batch<T: Serialize>(
        &self,
        events: impl IntoIterator<Item = (Option<String>, T)>,
    ) -> Result<Vec<i64>> {
        let events = events
            .into_iter()
            .map(|(key, value)| Ok((key, crate::queue::encode(&value)?)))
            .collect::<Result<Vec<_>>>()?;
        self.publish_batch_raw(events).await
    }

    /// Append events `(key, bytes)` all or none; returns their offsets.
    pub async fn publish_batch_raw(
        &self,
        events: impl IntoIterator<Item = (Option<String>, Vec<u8>)>,
    ) -> Result<Vec<i64>> {
        let events: Vec<NewEvent> = events
            .into_iter()
            .map(|(key, payload)| NewEvent {
                stream: self.name.clone(),
                key,
                payload,
            })
            .collect();
        self.store.place().stream_publish(events).await
    }

    /// Save `consumer`'s offset (monotone: a lower one is ignored); returns
    /// the saved offset.
    pub async fn commit(&self, consumer: &str, offset: i64) -> Result<i64> {
        self.store
            .place()
            .stream_offset_commit(StreamOffsetCommitParams::new(
                self.name.clone(),
                consumer,
                offset,
            ))
            .await
    }

    /// Save `consumer`'s offset only if the saved one is still `expected`:
    /// two readers of one consumer name cannot
    /// both move it from the same place. One that finds it moved is
    /// [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld), and nothing is
    /// written.
    pub async fn commit_expecting(
        &self,
        consumer: &str,
        offset: i64,
        expected: i64,
    ) -> Result<i64> {
        let params =
            StreamOffsetCommitParams::new(self.name.clone(), consumer, offset).expecting(expected);
        self.store.place().stream_offset_commit(params).await
    }
}

impl Stream {
    /// Up to `limit` events after offset `after`, waiting up to `wait` for
    /// the first (a long poll: woken by publishes of this process and
    /// commits of others).
    pub async fn read_waiting(
        &self,
        after: i64,
        limit: u32,
        wait: std::time::Duration,
    ) -> Result<Vec<Event>> {
        let params = StreamReadParams::new(self.name.clone(), after, limit);
        let engine = self.store.engine();
        crate::wait::poll(
            &self.store,
            wait,
            |w| w.concerns_stream(&self.name),
            || engine.stream_read(params.clone()),
        )
        .await
    }

    /// Up to `limit` events before offset `before` (and after `after`),
    /// newest first: paging back over a stream.
    pub async fn read_back(&self, after: i64, before: i64, limit: u32) -> Result<Vec<Event>> {
        let params = StreamReadParams::new(self.name.clone(), after, limit).before(before);
        self.store.engine().stream_read(params).await
    }

    /// Up to `limit` events after `after`, in offset order (gap-safe).
    pub async fn read(&self, after: i64, limit: u32) -> Result<Vec<Event>> {
        self.store
            .engine()
            .stream_read(StreamReadParams::new(self.name.clone(), after, limit))
            .await
    }

    /// `consumer`'s saved offset (`None`: it never committed one).
    pub async fn offset(&self, consumer: &str) -> Result<Option<i64>> {
        self.store
            .engine()
            .stream_offset_get(StreamOffsetGetParams::new(self.name.as_str(), consumer))
            .await
    }

    /// Every consumer's offset and lag.
    pub async fn offsets(&self) -> Result<Vec<ConsumerOffset>> {
        self.store.engine().stream_offsets(self.name.as_str()).await
    }

    /// Head, count, consumers' lag and the open-transaction hold-back.
    pub async fn stats(&self) -> Result<StreamStats> {
        self.store.engine().stream_stats(self.name.as_str()).await
    }

    /// Delete the events below `before` and those published longer ago
    /// than `older_than` (at least one of the two given), in one call;
    /// returns how many.
    pub async fn trim(
        &self,
        before: Option<i64>,
        older_than: Option<std::time::Duration>,
    ) -> Result<u64> {
        let mut params = StreamTrimParams::before(self.name.clone(), 0);
        params.before = before;
        params.older_than = older_than;
        self.store.engine().stream_trim(params).await
    }

    /// Delete events below `offset`; returns how many.
    pub async fn trim_before(&self, offset: i64) -> Result<u64> {
        self.trim(Some(offset), None).await
    }

    /// Delete events published longer ago than `age` (at least 1 s, as
    /// [`retain`](Stream::retain)); returns how many.
    pub async fn trim_older_than(&self, age: std::time::Duration) -> Result<u64> {
        self.trim(None, Some(age)).await
    }

    /// Keep events at most `max_age` (at least 1 s; maintenance sweeps
    /// trim the rest); `None` keeps them until trimmed by hand.
    pub async fn retain(&self, max_age: Option<std::time::Duration>) -> Result<()> {
        self.store
            .engine()
            .stream_retention_set(StreamRetentionParams::new(self.name.clone(), max_age))
            .await
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }
}

/// Decoding a read event's payload (a runtime's handler gets it decoded:
/// [`EventCtx::payload`]).
pub trait EventExt {
    /// The payload, decoded from JSON.
    fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T>;
}

impl EventExt for Event {
    fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        crate::queue::decode(&self.payload)
    }
}
