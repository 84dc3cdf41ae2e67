//! What a call can fail with: the server's error answer, no answer at all, or an answer the
//! client could not read.

use raftlane_contract::ErrorDetail;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error body.
    #[error("{status} {code}: {message}")]
    Api {
        status: u16,
        code: String,
        message: String,
        field: Option<String>,
        /// Every other member of the error object, e.g. `current_version` on a 412, so that a
        /// caller can act on it without another request.
        extra: serde_json::Map<String, Value>,
    },
    /// No node answered before the deadline. The call may or may not have taken effect.
    #[error("no node answered: {0}")]
    Unavailable(String),
    #[error("unexpected response: {0}")]
    Decode(String),
}

impl ClientError {
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Api { code, .. } => Some(code),
            _ => None,
        }
    }
    /// The request field the server blamed (400).
    pub fn field(&self) -> Option<&str> {
        match self {
            ClientError::Api { field, .. } => field.as_deref(),
            _ => None,
        }
    }
    /// A member of the error object beyond `code`, `message` and `field`.
    pub fn extra(&self, name: &str) -> Option<&Value> {
        match self {
            ClientError::Api { extra, .. } => extra.get(name),
            _ => None,
        }
    }
    /// The configuration's current version, sent with a 412 of a compare-and-set.
    pub fn current_version(&self) -> Option<u64> {
        self.extra("current_version").and_then(Value::as_u64)
    }

    /// The error a non-success, non-503 answer stands for. A body that is not the API's JSON
    /// error (e.g. from a proxy) still gives its status, with code `unknown`.
    pub fn from_response(status: u16, body: &[u8]) -> Self {
        let ErrorDetail {
            code,
            message,
            field,
            extra,
        } = ErrorDetail::from_body(body);
        ClientError::Api {
            status,
            code,
            message,
            field,
            extra,
        }
    }
}

/// A request body that would not serialize (not expected of the contract's types; a map with
/// non-string keys would do it).
pub(crate) fn encode_error(e: serde_json::Error) -> ClientError {
    ClientError::Decode(format!("request body: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_error_keeps_its_extra_members() {
        let body = json!({ "error": {
            "code": "version_mismatch",
            "message": "expected 7, current 3",
            "current_version": 3,
        }})
        .to_string();
        let e = ClientError::from_response(412, body.as_bytes());
        assert_eq!(e.status(), Some(412));
        assert_eq!(e.code(), Some("version_mismatch"));
        assert_eq!(e.current_version(), Some(3));
        assert_eq!(e.field(), None);

        let e = ClientError::from_response(
            400,
            br#"{"error":{"code":"invalid","message":"m","field":"ttl_ms"}}"#,
        );
        assert_eq!(e.field(), Some("ttl_ms"));
        assert_eq!(e.current_version(), None);
        assert_eq!(e.extra("field"), None);

        // Not the API's error shape (e.g. a proxy's page): the status survives.
        let e = ClientError::from_response(502, b"");
        assert_eq!((e.status(), e.code()), (Some(502), Some("unknown")));
    }
}
