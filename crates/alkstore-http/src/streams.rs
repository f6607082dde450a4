//! Event streams over HTTP: publish, read (long-poll), consumer offsets,
//! and the streams' heads and lag.

use alkstore_core::stream::{Event, NewEvent, StreamOffsetCommitParams};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::payload::{decode, encode};
use crate::queues::{batch_limit, check_batch};
use crate::AppState;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_streams))
        .routes(routes!(stream_info))
        .routes(routes!(publish, read))
        .routes(routes!(offset_get, offset_commit))
}

/// One event to publish.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishEvent {
    /// Orders and partitions: a consumer group hands all events of one key
    /// to one member, in order.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub key: Option<String>,
    /// Any JSON value.
    pub payload: serde_json::Value,
}

/// Events to append, all or none.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishRequest {
    /// 1 to 1,000 events.
    #[schema(min_items = 1, max_items = 1000)]
    #[serde(deserialize_with = "crate::extract::objects")]
    pub events: Vec<PublishEvent>,
}

impl PublishRequest {
    /// The events to append to `stream`: 1 to 1,000.
    pub(crate) fn into_events(self, stream: &str) -> ApiResult<Vec<NewEvent>> {
        check_batch("events", self.events.len())?;
        self.events
            .into_iter()
            .map(|e| {
                let mut ev = NewEvent::new(stream, encode(&e.payload)?);
                ev.key = e.key;
                Ok(ev)
            })
            .collect()
    }
}

/// The published events' offsets, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub struct Published {
    /// One per event.
    pub offsets: Vec<i64>,
}

/// A stored event.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventView {
    /// Its offset (grows with every event of the store).
    pub offset: i64,
    /// Its key.
    pub key: Option<String>,
    /// The payload (null when not JSON; see `payload_base64`).
    pub payload: serde_json::Value,
    /// The payload's bytes in base64, when they are not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    /// When it was published (unix seconds).
    pub created_at: i64,
}

impl From<Event> for EventView {
    fn from(e: Event) -> Self {
        let (payload, payload_base64) = decode(&e.payload);
        EventView {
            offset: e.offset,
            key: e.key,
            payload,
            payload_base64,
            created_at: e.created_at,
        }
    }
}

/// Events after an offset.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventPage {
    /// In offset order; newest first for a read with `before`.
    pub events: Vec<EventView>,
    /// Pass as `after` to read on (the highest offset read, or `after`
    /// again when none came).
    pub next_after: i64,
    /// For a read with `before`: pass as the next `before` to page further
    /// back (the lowest offset read); absent once the page came back short,
    /// at the start of the stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_before: Option<i64>,
}

/// Which events to read.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ReadQuery {
    /// Read after this offset (default 0: from the start).
    pub after: Option<i64>,
    /// 1 to 1,000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// Wait up to this many ms (0 to 30,000, default 0) for the first event.
    #[param(maximum = 30000)]
    pub wait_ms: Option<u64>,
    /// Read backwards: the events before this offset, newest first (to page
    /// back from the head, pass a number above it, such as
    /// 9223372036854775807). Does not wait.
    pub before: Option<i64>,
}

/// A consumer's saved offset.
#[derive(Debug, Serialize, ToSchema)]
pub struct OffsetView {
    /// The last offset it handled (null: it never committed).
    pub offset: Option<i64>,
}

/// An offset to save.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitRequest {
    /// The last offset handled. A commit below the saved one is ignored
    /// (offsets never move back); one past the head is refused.
    pub offset: i64,
    /// The offset the caller last read as saved (0 when none was): when
    /// given, the commit is a compare-and-set and moves the offset only
    /// from exactly this one; else it fails with 409 `not_held` and
    /// nothing is written (another instance of the consumer moved it).
    #[serde(default)]
    pub expected: Option<i64>,
}

impl CommitRequest {
    /// The commit `consumer` of `stream` asks for.
    pub(crate) fn params(&self, stream: String, consumer: String) -> StreamOffsetCommitParams {
        let p = StreamOffsetCommitParams::new(stream, consumer, self.offset);
        match self.expected {
            Some(expected) => p.expecting(expected),
            None => p,
        }
    }
}

/// A consumer and how far behind it is.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConsumerView {
    /// Its name.
    pub consumer: String,
    /// Its saved offset.
    pub offset: i64,
    /// Events after it.
    pub lag: u64,
    /// When it last committed (unix seconds).
    pub updated_at: i64,
}

/// A stream: its head, size and consumers.
#[derive(Debug, Serialize, ToSchema)]
pub struct StreamView {
    /// Its name.
    pub stream: String,
    /// The last offset (null when empty).
    pub head: Option<i64>,
    /// Events stored.
    pub events: u64,
    /// Every consumer with a saved offset, by name.
    pub consumers: Vec<ConsumerView>,
}

/// Every stream.
#[derive(Debug, Serialize, ToSchema)]
pub struct StreamList {
    /// By name.
    pub streams: Vec<StreamView>,
}

async fn view(
    app: &AppState,
    stream: String,
    head: Option<i64>,
    events: u64,
) -> ApiResult<StreamView> {
    let consumers = app
        .store
        .stream(stream.as_str())
        .offsets()
        .await?
        .into_iter()
        .map(|c| ConsumerView {
            consumer: c.consumer,
            offset: c.offset,
            lag: c.lag,
            updated_at: c.updated_at,
        })
        .collect();
    Ok(StreamView {
        stream,
        head,
        events,
        consumers,
    })
}

/// List every stream.
///
/// Every stream with its head offset, event count and consumers' offsets and
/// lag.
#[utoipa::path(get, path = "/api/v1/streams", tag = "streams",
    responses((status = 200, description = "Every stream with its head and consumers", body = StreamList)))]
async fn list_streams(State(app): State<AppState>) -> ApiResult<Json<StreamList>> {
    let mut streams = Vec::new();
    for s in app.store.streams().await? {
        streams.push(view(&app, s.stream, s.head, s.events).await?);
    }
    Ok(Json(StreamList { streams }))
}

/// Get a stream.
///
/// The stream's head offset, event count and consumers; 404 when nothing was
/// ever published to it.
#[utoipa::path(get, path = "/api/v1/streams/{stream}", tag = "streams",
    params(("stream" = String, Path, description = "Stream name")),
    responses((status = 200, description = "The stream", body = StreamView),
        (status = 404, description = "No such stream", body = ErrorBody)))]
async fn stream_info(
    State(app): State<AppState>,
    ApiPath(stream): ApiPath<String>,
) -> ApiResult<Json<StreamView>> {
    let Some(s) = app
        .store
        .streams()
        .await?
        .into_iter()
        .find(|s| s.stream == stream)
    else {
        return Err(ApiError::not_found(
            "stream",
            format!("no stream {stream:?}: nothing was published to it"),
        ));
    };
    Ok(Json(view(&app, s.stream, s.head, s.events).await?))
}

/// Publish events.
///
/// Append 1 to 1,000 events to the stream in one transaction; their offsets
/// come back in request order. Offsets grow across the whole store.
#[utoipa::path(post, path = "/api/v1/streams/{stream}/events", tag = "streams",
    params(("stream" = String, Path, description = "Stream name")),
    request_body = PublishRequest,
    responses((status = 201, description = "Appended, all in one transaction", body = Published),
        (status = 400, description = "Bad input; nothing written", body = ErrorBody),
        (status = 413, description = "Payload too large; nothing written", body = ErrorBody)))]
async fn publish(
    State(app): State<AppState>,
    ApiPath(stream): ApiPath<String>,
    ApiJson(req): ApiJson<PublishRequest>,
) -> ApiResult<(StatusCode, Json<Published>)> {
    let events = req.into_events(&stream)?;
    let events = events.into_iter().map(|e| (e.key, e.payload));
    let offsets = app.store.stream(stream).publish_batch_raw(events).await?;
    Ok((StatusCode::CREATED, Json(Published { offsets })))
}

/// Read events.
///
/// Events of the stream after offset `after`, up to `limit`, waiting up to
/// `wait_ms` for the first. Pass `next_after` as the next read's `after`.
/// With `before`, the events before that offset instead, newest first:
/// pass `next_before` as the next read's `before` to page back.
#[utoipa::path(get, path = "/api/v1/streams/{stream}/events", tag = "streams",
    params(("stream" = String, Path, description = "Stream name"), ReadQuery),
    responses((status = 200, description = "Events after the offset (maybe none)", body = EventPage),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn read(
    State(app): State<AppState>,
    ApiPath(stream): ApiPath<String>,
    ApiQuery(q): ApiQuery<ReadQuery>,
) -> ApiResult<Json<EventPage>> {
    let after = q.after.unwrap_or(0);
    let limit = batch_limit(q.limit, 100)?;
    let handle = app.store.stream(stream);
    if let Some(before) = q.before {
        if q.wait_ms.is_some_and(|w| w > 0) {
            return Err(ApiError::invalid(
                "wait_ms",
                "a read with `before` does not wait: it pages back over events already there",
            ));
        }
        let events = handle.read_back(after, before, limit).await?;
        let full = events.len() >= limit as usize;
        return Ok(Json(EventPage {
            next_after: events.first().map_or(after, |e| e.offset),
            next_before: events.last().map(|e| e.offset).filter(|_| full),
            events: events.into_iter().map(EventView::from).collect(),
        }));
    }
    let wait = app.wait(q.wait_ms)?;
    let events = handle.read_waiting(after, limit, wait).await?;
    let next_after = events.last().map_or(after, |e| e.offset);
    Ok(Json(EventPage {
        events: events.into_iter().map(EventView::from).collect(),
        next_after,
        next_before: None,
    }))
}

/// Get a consumer's offset.
///
/// The last offset the consumer committed on the stream (null: none yet).
#[utoipa::path(get, path = "/api/v1/streams/{stream}/consumers/{consumer}", tag = "streams",
    params(("stream" = String, Path, description = "Stream name"),
        ("consumer" = String, Path, description = "Consumer name")),
    responses((status = 200, description = "Its saved offset", body = OffsetView),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn offset_get(
    State(app): State<AppState>,
    ApiPath((stream, consumer)): ApiPath<(String, String)>,
) -> ApiResult<Json<OffsetView>> {
    let offset = app.store.stream(stream).offset(&consumer).await?;
    Ok(Json(OffsetView { offset }))
}

/// Commit a consumer's offset.
///
/// Save how far the consumer has read. Offsets only move forward and never
/// past the stream's head; the offset saved after the call comes back.
/// With `expected`, the offset moves only from exactly that one (409
/// `not_held` otherwise, nothing written).
#[utoipa::path(put, path = "/api/v1/streams/{stream}/consumers/{consumer}", tag = "streams",
    params(("stream" = String, Path, description = "Stream name"),
        ("consumer" = String, Path, description = "Consumer name")),
    request_body = CommitRequest,
    responses((status = 200, description = "The offset saved after the call", body = OffsetView),
        (status = 400, description = "Bad input (past the head); nothing written", body = ErrorBody),
        (status = 409, description = "The saved offset is not `expected`; nothing written", body = ErrorBody)))]
async fn offset_commit(
    State(app): State<AppState>,
    ApiPath((stream, consumer)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<CommitRequest>,
) -> ApiResult<Json<OffsetView>> {
    let handle = app.store.stream(stream);
    let saved = match req.expected {
        Some(expected) => {
            handle
                .commit_expecting(&consumer, req.offset, expected)
                .await
        }
        None => handle.commit(&consumer, req.offset).await,
    }
    .map_err(|e| {
        let moved = e.kind() == alkstore::ErrorKind::NotHeld;
        let err = ApiError::from(e);
        if moved {
            err.with_field("expected")
        } else {
            err
        }
    })?;
    Ok(Json(OffsetView {
        offset: Some(saved),
    }))
}
