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

/// A list of JSON objects, each read as a `T`: serde would also read a
/// struct from an array (`[key, payload]`), which the document does not
/// allow.
pub(crate) fn objects<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::de::Error as _;
    use serde::Deserialize as _;
    let items = Vec::<serde_json::Value>::deserialize(d)?;
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            if !v.is_object() {
                return Err(D::Error::custom(format!("item {i} must be an object")));
            }
            serde_json::from_value(v).map_err(D::Error::custom)
        })
        .collect()
}
