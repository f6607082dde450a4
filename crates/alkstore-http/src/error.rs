//! Every failure the API reports: one JSON shape, `{"error": {"code",
//! "field", "message"}}`, with the HTTP status its cause deserves.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

/// An API error: its status and the JSON body that explains it.
#[derive(Debug, thiserror::Error)]
#[error("{status}: {body:?}")]
pub struct ApiError {
    status: StatusCode,
    body: ErrorBody,
}

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong, for programs (`code`, `field`) and for people
/// (`message`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable snake_case name: `invalid_input`, `payload_too_large`,
    /// `not_found`, `unauthorized`, `forbidden`, `busy`, `conflict`,
    /// `not_held` (a claim, lease or lock is no longer the caller's),
    /// `group_mismatch` (409: a consumer group exists with another stream
    /// or bucket count), `method_not_allowed`, `rolled_back`,
    /// `storage_full` (507: the database's disk is full), `unavailable`,
    /// `internal`.
    pub code: String,
    /// The request field at fault, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// A sentence saying what is wrong.
    pub message: String,
    /// For an atomic request (`POST /api/v1/atomic`): the index in `ops`
    /// of the op that failed (from 0). Nothing of the request was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_index: Option<usize>,
    /// For an atomic request: the failing op's kind (its `op` tag, when it
    /// had a known one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
}

impl ApiError {
    /// An error with this status, code, field and message.
    pub fn new(
        status: StatusCode,
        code: &str,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError {
            status,
            body: ErrorBody {
                error: ErrorDetail {
                    code: code.to_string(),
                    field: field.map(str::to_string),
                    message: message.into(),
                    op_index: None,
                    op: None,
                },
            },
        }
    }

    /// 400: `field` is wrong, and why.
    pub fn invalid(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            Some(field),
            message,
        )
    }

    /// 404: no such thing.
    pub fn not_found(what: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", Some(what), message)
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// This error as the failure of op `index` (of kind `op`, when known)
    /// of an atomic request: the field becomes `ops[index].field`, and the
    /// message says which op.
    pub(crate) fn in_op(mut self, index: usize, op: Option<&str>) -> ApiError {
        let e = &mut self.body.error;
        e.field = Some(match e.field.take() {
            Some(f) => format!("ops[{index}].{f}"),
            None => format!("ops[{index}]"),
        });
        e.message = match op {
            Some(op) => format!("op {index} ({op}): {}", e.message),
            None => format!("op {index}: {}", e.message),
        };
        e.op_index = Some(index);
        e.op = op.map(str::to_string);
        self
    }

    /// The error's code (`invalid_input`, `not_held`, …).
    pub(crate) fn code(&self) -> &str {
        &self.body.error.code
    }

    /// The field at fault, if one is named.
    #[cfg(test)]
    pub(crate) fn field(&self) -> Option<&str> {
        self.body.error.field.as_deref()
    }

    /// Name `field` as the one at fault.
    pub(crate) fn with_field(mut self, field: &str) -> ApiError {
        self.body.error.field = Some(field.to_string());
        self
    }

    /// The same error, its field named inside `parent` (`matching.state`).
    pub(crate) fn under(mut self, parent: &str) -> ApiError {
        let field = match self.body.error.field.take() {
            Some(f) => format!("{parent}.{f}"),
            None => parent.to_string(),
        };
        self.body.error.field = Some(field);
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

impl From<alkstore::Error> for ApiError {
    fn from(e: alkstore::Error) -> ApiError {
        use alkstore::ErrorKind as K;
        let message = e.to_string();
        let kind = e.kind();
        let (status, field) = match &e {
            alkstore::Error::InvalidInput { what, .. } => {
                (StatusCode::BAD_REQUEST, Some(request_field(what)))
            }
            _ => match kind {
                K::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, Some("payload")),
                K::NotFound => (StatusCode::NOT_FOUND, None),
                K::NotHeld => (StatusCode::CONFLICT, Some("token")),
                K::RolledBack => (StatusCode::CONFLICT, None),
                K::Busy | K::Conflict => (StatusCode::SERVICE_UNAVAILABLE, None),
                K::GroupMismatch => (StatusCode::CONFLICT, None),
                K::Closed | K::Connect => (StatusCode::SERVICE_UNAVAILABLE, None),
                K::StorageFull => (StatusCode::INSUFFICIENT_STORAGE, None),
                _ => (StatusCode::INTERNAL_SERVER_ERROR, None),
            },
        };
        if status.is_server_error() {
            tracing::warn!(error = %message, "request failed");
        }
        ApiError::new(status, kind.as_str(), field, message)
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> ApiError {
        let status = r.status();
        let text = r.body_text();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            return ApiError::new(status, "payload_too_large", Some("body"), text);
        }
        // The message names the field: as a path before the error ("jobs[0].
        // priority: invalid type ..."), or in backticks ("missing field
        // `worker`", "unknown field `colour`").
        if status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
            return ApiError::new(status, "invalid_input", Some("content-type"), text);
        }
        let field = json_field(&text).unwrap_or("body").to_string();
        let status = StatusCode::BAD_REQUEST;
        ApiError::new(status, "invalid_input", Some(&field), text)
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> ApiError {
        ApiError::invalid("path", r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> ApiError {
        let text = r.body_text();
        // "Failed to deserialize query string: window_s: invalid digit …":
        // the parameter's name leads the detail, as a JSON body's path does.
        let detail = text.split_once("query string: ").map_or(&*text, |(_, d)| d);
        let field = json_field(detail).unwrap_or("query").to_string();
        ApiError::invalid(&field, text)
    }
}

/// The request field for what the store's validation calls an input (it
/// names inputs in words, the API in its fields' names).
fn request_field(what: &str) -> &str {
    match what {
        "queue name" => "queue",
        "worker id" => "worker",
        "unique key" => "unique_key",
        "tag" => "tags",
        "max attempts" => "max_attempts",
        "delay" | "retry delay" => "delay_ms",
        "expiry" => "expires_in_ms",
        "lock ttl" => "ttl_ms",
        "lock name" | "schedule name" => "name",
        "schedule spec" => "spec",
        "stream name" => "stream",
        "consumer name" => "consumer",
        "event key" => "key",
        "group name" => "group",
        "read limit" | "list limit" | "batch limit" => "limit",
        "throughput window" | "depth window" => "window_s",
        "snooze delay" => "delay_ms",
        "notify payload" => "payload",
        "checkpoint" => "offset",
        "lock token" => "token",
        "expected offset" => "expected",
        other => other,
    }
}

/// 400 for a JSON value that does not deserialize: the field is the path
/// to the bad value (`jobs[0].priority`), else the name serde puts in
/// backticks (`missing field `worker``), else `body`.
pub(crate) fn invalid_json(e: &serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = e.path().to_string();
    let message = e.inner().to_string();
    let field = if path.is_empty() || path == "." || path == "?" {
        backticked(&message).unwrap_or("body").to_string()
    } else {
        path
    };
    ApiError::invalid(&field, message)
}

/// The field a JSON body error names: the path axum puts before serde's
/// message, else the first name in backticks.
fn json_field(text: &str) -> Option<&str> {
    let detail = text.split_once("target type: ").map_or(text, |(_, d)| d);
    if let Some((path, _)) = detail.split_once(": ") {
        let is_path = !path.is_empty()
            && path
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.[]".contains(c));
        if is_path && path != "." {
            return Some(path);
        }
    }
    backticked(detail)
}

/// The first `name` in backticks of a serde message.
fn backticked(text: &str) -> Option<&str> {
    let start = text.find('`')? + 1;
    let len = text[start..].find('`')?;
    Some(&text[start..start + len]).filter(|f| !f.is_empty())
}

/// What handlers return.
pub(crate) type ApiResult<T> = std::result::Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_name_their_field() {
        assert_eq!(
            backticked("Failed to deserialize the JSON body into the target type: missing field `worker` at line 1 column 2"),
            Some("worker")
        );
        assert_eq!(backticked("no field here"), None);
        assert_eq!(
            json_field("Failed to deserialize the JSON body into the target type: jobs[0].priority: invalid type: string \"x\", expected i32 at line 1 column 30"),
            Some("jobs[0].priority")
        );
        assert_eq!(
            json_field("Failed to deserialize the JSON body into the target type: unknown field `colour`, expected one of `payload`"),
            Some("colour")
        );
    }

    #[test]
    fn store_errors_keep_their_kind_and_field() {
        let e = ApiError::from(alkstore::Error::invalid("limit", "must be at least 1"));
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        assert_eq!(e.body.error.field.as_deref(), Some("limit"));
        assert_eq!(e.body.error.code, "invalid_input");
        let e = ApiError::from(alkstore::Error::PayloadTooLarge { size: 9, limit: 1 });
        assert_eq!(e.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}
