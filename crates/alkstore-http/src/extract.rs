//! axum's extractors, with their rejections in the API's error shape.

use axum::extract::{FromRequest, FromRequestParts};

use crate::error::ApiError;

/// A JSON request body; a malformed one is a 400 naming the field.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub(crate) struct ApiJson<T>(pub T);

/// Path parameters; a malformed one is a 400.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub(crate) struct ApiPath<T>(pub T);

/// Query parameters; a malformed one is a 400 naming the parameter.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub(crate) struct ApiQuery<T>(pub T);
