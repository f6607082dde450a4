//! What every operation of the OpenAPI document shares, added once here
//! rather than on each route: the errors any request can meet (400 bad
//! input, 401 without the token; 413 and 415 for a body) and the limits of
//! path parameters (names are 1 to 200 bytes of UTF-8 without NUL, ids
//! positive), and the server's long-poll cap on every `wait_ms`.

use serde_json::{json, Value};

/// The store's limit on names (queues, streams, workers, keys, ...): 200
/// bytes of UTF-8. JSON Schema's `maxLength` counts characters, so the
/// document gives it as an upper bound and says "bytes" in the description.
const NAME_MAX_CHARS: u64 = 200;

/// `doc` as JSON, with the shared responses and path parameter limits, and
/// every `wait_ms` capped at `max_wait_ms`.
pub(crate) fn complete(doc: &utoipa::openapi::OpenApi, max_wait_ms: u64) -> Value {
    let mut v = serde_json::to_value(doc).unwrap_or_default();
    cap_waits(&mut v, max_wait_ms);
    if let Some(paths) = v.get_mut("paths").and_then(Value::as_object_mut) {
        for item in paths.values_mut().filter_map(Value::as_object_mut) {
            for op in item.values_mut().filter_map(Value::as_object_mut) {
                complete_operation(op);
            }
        }
    }
    v
}

/// Set `maximum` on every `wait_ms` (body property or query parameter).
fn cap_waits(v: &mut Value, max_wait_ms: u64) {
    match v {
        Value::Object(map) => {
            let is_wait_param = map.get("name") == Some(&json!("wait_ms"));
            for (k, child) in map.iter_mut() {
                if k == "wait_ms" || (is_wait_param && k == "schema") {
                    if let Some(schema) = child.as_object_mut() {
                        schema.insert("maximum".into(), json!(max_wait_ms));
                    }
                }
                cap_waits(child, max_wait_ms);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| cap_waits(i, max_wait_ms)),
        _ => {}
    }
}

fn error(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    })
}

fn complete_operation(op: &mut serde_json::Map<String, Value>) {
    let has_body = op.contains_key("requestBody");
    if let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) {
        for p in params.iter_mut().filter(|p| p["in"] == "path") {
            let Some(schema) = p.get_mut("schema").and_then(Value::as_object_mut) else {
                continue;
            };
            if schema.get("type") == Some(&json!("string")) {
                schema.insert("minLength".into(), json!(1));
                schema.insert("maxLength".into(), json!(NAME_MAX_CHARS));
                schema.insert("pattern".into(), json!("^[^\\u0000]+$"));
                schema.insert(
                    "description".into(),
                    json!("1 to 200 bytes of UTF-8 (maxLength counts characters), no NUL; percent-encoded in the path"),
                );
            } else if schema.get("type") == Some(&json!("integer")) {
                schema.insert("minimum".into(), json!(1));
            }
        }
    }
    let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
        return;
    };
    let mut add = |code: &str, description: &str| {
        responses
            .entry(code.to_string())
            .or_insert_with(|| error(description));
    };
    add("400", "Bad input; nothing was changed");
    add(
        "401",
        "The server has a token and the request did not carry it",
    );
    if has_body {
        add("413", "The body is over the server's limit");
        add("415", "The body is not `application/json`");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_documents_its_errors_and_limits() {
        let doc = complete(&crate::openapi_raw(), 777);
        let claim = &doc["paths"]["/api/v1/queues/{queue}/claim"]["post"];
        for code in ["400", "401", "413", "415"] {
            assert!(claim["responses"].get(code).is_some(), "{code}");
        }
        let queue = &claim["parameters"][0]["schema"];
        assert_eq!(queue["maxLength"], json!(NAME_MAX_CHARS));
        let id = &doc["paths"]["/api/v1/jobs/{id}"]["get"]["parameters"][0]["schema"];
        assert_eq!(id["minimum"], json!(1));
        let wait = &doc["components"]["schemas"]["ClaimRequest"]["properties"]["wait_ms"];
        assert_eq!(wait["maximum"], json!(777), "{wait}");
    }
}
