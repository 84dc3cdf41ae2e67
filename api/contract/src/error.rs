//! The one error shape every route answers with: `{"error": {"code", "message", "field"?, ...}}`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The body of every non-2xx answer (the schema component `Error`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Error")]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// What went wrong: a stable machine-readable `code` (`invalid`, `not_found`, `stale_fence`,
/// `version_mismatch`, `unavailable`, ...), a human `message`, the request `field` a 400 blames,
/// and any extra members a caller can act on without another request (e.g. `current_version` on
/// a 412), kept as they came.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl ErrorDetail {
    /// The error a non-2xx body stands for. A body that is not this shape (a proxy's page, an
    /// empty body) still yields an error, with code `unknown`, so the status is never lost.
    pub fn from_body(body: &[u8]) -> Self {
        serde_json::from_slice::<ErrorBody>(body)
            .map(|b| b.error)
            .unwrap_or_else(|_| ErrorDetail {
                code: "unknown".to_string(),
                message: String::from_utf8_lossy(body).chars().take(200).collect(),
                field: None,
                extra: serde_json::Map::new(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn extra_members_are_kept_apart_from_the_named_ones() {
        let body = json!({ "error": {
            "code": "version_mismatch",
            "message": "expected 7, current 3",
            "current_version": 3,
        }})
        .to_string();
        let e = ErrorDetail::from_body(body.as_bytes());
        assert_eq!(e.code, "version_mismatch");
        assert_eq!(e.message, "expected 7, current 3");
        assert_eq!(e.field, None);
        assert_eq!(e.extra.len(), 1, "{:?}", e.extra);
        assert_eq!(e.extra["current_version"], json!(3));
    }

    #[test]
    fn a_field_is_named() {
        let body = br#"{"error":{"code":"invalid","message":"m","field":"ttl_ms"}}"#;
        let e = ErrorDetail::from_body(body);
        assert_eq!(e.field.as_deref(), Some("ttl_ms"));
        assert!(e.extra.is_empty());
    }

    #[test]
    fn a_foreign_body_becomes_unknown() {
        let e = ErrorDetail::from_body(b"<html>bad gateway</html>");
        assert_eq!(e.code, "unknown");
        assert!(e.message.contains("bad gateway"));
        assert_eq!(ErrorDetail::from_body(b"").code, "unknown");
    }

    #[test]
    fn it_round_trips() {
        let mut extra = serde_json::Map::new();
        extra.insert("current_version".into(), json!(9));
        let body = ErrorBody {
            error: ErrorDetail {
                code: "version_mismatch".into(),
                message: "m".into(),
                field: None,
                extra,
            },
        };
        let text = serde_json::to_string(&body).unwrap();
        assert_eq!(
            text,
            r#"{"error":{"code":"version_mismatch","message":"m","current_version":9}}"#
        );
        assert_eq!(serde_json::from_str::<ErrorBody>(&text).unwrap(), body);
    }
}
