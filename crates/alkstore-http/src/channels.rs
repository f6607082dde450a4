//! Notify and listen over HTTP: send a notification to a channel, or
//! follow one as server-sent events. Fire and forget, like PostgreSQL's
//! NOTIFY: a listener gets what is sent while it listens.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Json;
use futures_util::Stream;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath};
use crate::queues::Done;
use crate::AppState;

/// How often an idle event stream carries a comment, so proxies and
/// clients see it alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(notify_channel))
        .routes(routes!(listen_channel))
}

/// A notification to send.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelNotifyRequest {
    /// Text, at most 7,000 bytes, no NUL.
    #[serde(default)]
    #[schema(max_length = 7000, pattern = "^[^\\u0000]*$")]
    pub payload: String,
}

/// Notify a channel.
///
/// Send `payload` to everyone listening on the channel now (in this
/// process or another, over HTTP or in Rust).
#[utoipa::path(post, path = "/api/v1/channels/{channel}/notify", tag = "channels",
    params(("channel" = String, Path, description = "Channel name")),
    request_body = ChannelNotifyRequest,
    responses((status = 200, description = "Sent", body = Done),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn notify_channel(
    State(app): State<AppState>,
    ApiPath(channel): ApiPath<String>,
    ApiJson(req): ApiJson<ChannelNotifyRequest>,
) -> ApiResult<Json<Done>> {
    app.store.channel(channel).notify(req.payload).await?;
    Ok(Json(Done { done: true }))
}

/// Listen on a channel.
///
/// Server-sent events: one `notification` event per notification sent on
/// the channel while the response is open (its data is the payload text;
/// on PostgreSQL, where delivery is asynchronous, one sent just before the
/// listen began may still arrive), and a comment every 15 s. Should listening fail midway (the store out
/// of reach), an `error` event says why and the stream ends: connect
/// again. On PostgreSQL behind a transaction pooler, listening needs the
/// store URL's `listen_url` (503 without it).
#[utoipa::path(get, path = "/api/v1/channels/{channel}/listen", tag = "channels",
    params(("channel" = String, Path, description = "Channel name")),
    responses((status = 200, description = "Server-sent events, one per notification", content_type = "text/event-stream", body = String),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 503, description = "Cannot listen on this store now", body = ErrorBody)))]
async fn listen_channel(
    State(app): State<AppState>,
    ApiPath(channel): ApiPath<String>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    // Listening starts before the answer, so a notification sent once the
    // client has the response's headers is never missed.
    let listener = app.store.channel(channel).listen().await?;
    let events = futures_util::stream::unfold(Some(listener), |listener| async move {
        let mut listener = listener?;
        match listener.recv().await {
            Ok(n) => {
                let mut event = Event::default().event("notification").data(n.payload);
                if n.id > 0 {
                    event = event.id(n.id.to_string());
                }
                Some((Ok(event), Some(listener)))
            }
            Err(e) => Some((
                Ok(Event::default().event("error").data(e.to_string())),
                None,
            )),
        }
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}
