//! alkstore over HTTP: the JSON API any language can use (enqueue, claim
//! with long-poll, settle; publish, read, commit offsets; groups, schedules,
//! locks; a list of writes run all or none in one transaction), its OpenAPI
//! document, Prometheus `/metrics`, and the dashboard. `alk serve` runs it.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = alkstore::Store::open("sqlite://app.db").await?;
//! let app = alkstore_http::router(store, alkstore_http::ServeOptions::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7878").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! Every route but `/healthz` sits behind the guard (`src/guard.rs`): with a
//! token set, each request must carry it; without one, only loopback host
//! names are answered. Changes requested by another site's page are refused.

pub mod atomic;
pub mod channels;
mod dashboard;
mod document;
mod error;
mod extract;
pub mod groups;
mod guard;
pub mod jobs;
pub mod locks;
pub mod members;
mod metrics_route;
mod payload;
pub mod processes;
pub mod queues;
pub mod rates;
pub mod results;
pub mod schedules;
pub mod store_info;
pub mod streams;

use std::net::SocketAddr;

use alkstore::Store;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::Router;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

pub use error::{ApiError, ErrorBody, ErrorDetail};

/// How `alk serve` serves.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The bearer token every request must carry (`None`: no token, and
    /// only loopback addresses may be bound).
    pub token: Option<String>,
    /// The largest request body accepted (default 1 MiB).
    pub max_body_bytes: usize,
    /// The longest a claim or read may wait (`wait_ms`; default and most
    /// 30,000 ms): lower it behind a proxy that cuts idle requests sooner.
    pub max_wait_ms: u64,
    /// Where `/metrics` renders from (`None`: no Prometheus recorder is
    /// installed and `/metrics` answers 404).
    pub prometheus: Option<metrics_exporter_prometheus::PrometheusHandle>,
    /// The store's URL, shown (password masked) in the dashboard's header
    /// and `GET /api/v1/store` (`None`: the engine and schema only).
    pub store_url: Option<String>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            token: None,
            max_body_bytes: 1 << 20,
            max_wait_ms: queues::MAX_WAIT_MS,
            prometheus: None,
            store_url: None,
        }
    }
}

/// Why the server will not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A non-loopback address without a token would let anyone on the
    /// network run and delete jobs.
    #[error("refusing to listen on {addr} without --token: only 127.0.0.1, ::1 or localhost may be bound without one")]
    NeedsToken {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// A token too short to resist guessing.
    #[error("the token must be at least 16 characters")]
    WeakToken,
}

/// Check that `addr` may be bound with `token`: any address with a token of
/// 16 characters or more; only a loopback address without one.
///
/// ```
/// use alkstore_http::check_bind;
/// assert!(check_bind("127.0.0.1:7878".parse().unwrap(), None).is_ok());
/// assert!(check_bind("0.0.0.0:7878".parse().unwrap(), None).is_err());
/// assert!(check_bind("0.0.0.0:7878".parse().unwrap(), Some("0123456789abcdef")).is_ok());
/// ```
pub fn check_bind(addr: SocketAddr, token: Option<&str>) -> Result<(), ServeError> {
    match token {
        Some(t) if t.chars().count() < 16 => Err(ServeError::WeakToken),
        Some(_) => Ok(()),
        None if addr.ip().is_loopback() => Ok(()),
        None => Err(ServeError::NeedsToken { addr }),
    }
}

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) store: Store,
    pub(crate) token: Option<std::sync::Arc<str>>,
    pub(crate) prometheus: Option<metrics_exporter_prometheus::PrometheusHandle>,
    pub(crate) max_wait_ms: u64,
    pub(crate) store_url: Option<std::sync::Arc<str>>,
}

impl AppState {
    /// A request's `wait_ms` (default 0), checked against the server's cap.
    pub(crate) fn wait(&self, wait_ms: Option<u64>) -> Result<std::time::Duration, ApiError> {
        let wait_ms = wait_ms.unwrap_or(0);
        if wait_ms > self.max_wait_ms {
            return Err(ApiError::invalid(
                "wait_ms",
                format!("must be 0 to {}", self.max_wait_ms),
            ));
        }
        Ok(std::time::Duration::from_millis(wait_ms))
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "alkstore",
        description = "Durable job queues, event streams with consumer groups, schedules and locks, in SQLite or PostgreSQL. Times are unix seconds unless a field says otherwise. Errors are `{\"error\": {\"code\", \"field\", \"message\"}}`.",
        license(name = "MIT OR Apache-2.0")
    ),
    modifiers(&BearerAuth),
    security(("bearer" = []))
)]
struct ApiDoc;

/// Declares the bearer token scheme (required when the server has a token).
struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

fn api_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(queues::routes())
        .merge(streams::routes())
        .merge(groups::routes())
        .merge(members::routes())
        .merge(schedules::routes())
        .merge(locks::routes())
        .merge(atomic::routes())
        .merge(results::routes())
        .merge(jobs::routes())
        .merge(processes::routes())
        .merge(store_info::routes())
        .merge(rates::routes())
        .merge(channels::routes())
}

/// The OpenAPI document of every API route, generated from the routes
/// themselves (so it cannot drift from them), as JSON.
pub fn openapi() -> serde_json::Value {
    document::complete(&openapi_raw(), queues::MAX_WAIT_MS)
}

/// The document as the routes declare it, before the shared errors and
/// limits are added.
pub(crate) fn openapi_raw() -> utoipa::openapi::OpenApi {
    api_routes().split_for_parts().1
}

/// The OpenAPI document as pretty JSON, as kept in the repository
/// (`crates/alkstore-http/openapi.json`).
pub fn openapi_json() -> String {
    serde_json::to_string_pretty(&openapi()).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The whole server: the API, `/openapi.json`, `/metrics`, `/healthz`.
pub fn router(store: Store, opts: ServeOptions) -> Router {
    let state = AppState {
        store,
        token: opts.token.map(std::sync::Arc::from),
        prometheus: opts.prometheus,
        max_wait_ms: opts.max_wait_ms.min(queues::MAX_WAIT_MS),
        store_url: opts.store_url.map(std::sync::Arc::from),
    };
    let (api, doc) = api_routes().split_for_parts();
    let doc_json = serde_json::to_string_pretty(&document::complete(&doc, state.max_wait_ms))
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    let guarded = api
        .route(
            "/openapi.json",
            get(move || async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    doc_json,
                )
            }),
        )
        .route("/metrics", get(metrics_route::metrics))
        .merge(dashboard::routes())
        // Behind the guard like the routes: a caller without the token
        // learns nothing of which methods a route takes.
        .method_not_allowed_fallback(|| async {
            error::ApiError::new(
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                Some("method"),
                "this route does not take that method; the API is described at /openapi.json",
            )
        })
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::guard,
        ))
        .layer(DefaultBodyLimit::max(opts.max_body_bytes));
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .merge(guarded)
        .fallback(|| async {
            error::ApiError::not_found(
                "path",
                "no such route; the API is described at /openapi.json",
            )
        })
        .with_state(state)
}
