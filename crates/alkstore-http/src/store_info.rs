//! Which store this server shows: its engine, where it is (the URL with
//! its password masked) and its schema, for the dashboard's header and for
//! operators who run several.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::ApiResult;
use crate::AppState;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(store_info))
}

/// The store this server serves.
#[derive(Debug, Serialize, ToSchema)]
pub struct StoreInfo {
    /// `sqlite` or `postgres`.
    pub engine: String,
    /// Where it is: the store URL with any password masked, or the
    /// SQLite file's path.
    pub location: String,
    /// The PostgreSQL schema (null on SQLite).
    pub schema: Option<String>,
    /// The alkstore version serving it.
    pub version: String,
}

/// Describe the store.
///
/// The engine, where the store is (its URL, password masked) and its
/// schema: which store the dashboard shows.
#[utoipa::path(get, path = "/api/v1/store", tag = "store",
    responses((status = 200, description = "The store this server serves", body = StoreInfo)))]
async fn store_info(State(app): State<AppState>) -> ApiResult<Json<StoreInfo>> {
    let store = &app.store;
    let (engine, location, schema) = if let Some(pg) = store.postgres() {
        let location = app
            .store_url
            .as_deref()
            .map_or_else(|| "postgres".to_string(), alkstore::url::mask_password);
        ("postgres", location, Some(pg.schema().to_string()))
    } else if let Some(sqlite) = store.sqlite() {
        ("sqlite", sqlite.path().display().to_string(), None)
    } else {
        ("unknown", String::new(), None)
    };
    Ok(Json(StoreInfo {
        engine: engine.to_string(),
        location,
        schema,
        version: env!("CARGO_PKG_VERSION").to_string(),
    }))
}
