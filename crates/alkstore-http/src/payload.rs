//! Payloads on the wire: JSON in, stored as its bytes; stored bytes out as
//! JSON when they are JSON, else as base64 (a job or event written by a
//! program that stores raw bytes).

use base64::Engine as _;

use crate::error::{ApiError, ApiResult};

/// The bytes to store for a JSON payload.
pub(crate) fn encode(payload: &serde_json::Value) -> ApiResult<Vec<u8>> {
    serde_json::to_vec(payload).map_err(|e| ApiError::invalid("payload", e.to_string()))
}

/// The bytes to store for a payload given either as JSON or, for bytes
/// that are not JSON, as `base64` (standard alphabet, padded): one of the
/// two, not both.
pub(crate) fn encode_either(
    payload: &serde_json::Value,
    base64: Option<&str>,
) -> ApiResult<Vec<u8>> {
    match base64 {
        None => encode(payload),
        Some(_) if !payload.is_null() => Err(ApiError::invalid(
            "payload_base64",
            "give the payload as JSON or in base64, not both",
        )),
        Some(text) => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| ApiError::invalid("payload_base64", format!("not base64: {e}"))),
    }
}

/// `(json, None)` for JSON bytes, `(null, Some(base64))` for anything else.
pub(crate) fn decode(bytes: &[u8]) -> (serde_json::Value, Option<String>) {
    match serde_json::from_slice(bytes) {
        Ok(v) => (v, None),
        Err(_) => (
            serde_json::Value::Null,
            Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_and_bytes_come_back_in_base64() {
        let v = serde_json::json!({"to": "a@b.c", "n": [1, 2]});
        assert_eq!(decode(&encode(&v).unwrap_or_default()), (v, None));
        assert_eq!(
            decode(&[0xff, 0x00]),
            (serde_json::Value::Null, Some("/wA=".to_string()))
        );
    }

    #[test]
    fn base64_payloads_decode_and_refuse_json_beside_them() {
        let null = serde_json::Value::Null;
        assert_eq!(
            encode_either(&null, Some("/wA=")).ok(),
            Some(vec![0xff, 0x00])
        );
        assert_eq!(encode_either(&null, None).ok(), Some(b"null".to_vec()));
        assert!(encode_either(&null, Some("not base64!")).is_err());
        assert!(encode_either(&serde_json::json!(1), Some("/wA=")).is_err());
    }
}
