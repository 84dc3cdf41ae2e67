//! API errors: one JSON shape, `{"error": {"code", "message", "field"?}}`, with the right status.

use crate::write::WriteError;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use raftlane_statemachine::{Rejection, StoreError};
use serde::Serialize;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
    /// Seconds for a `Retry-After` header (503, 429).
    pub retry_after: Option<u64>,
    /// Extra JSON merged into the error object (e.g. the current config version on 412).
    pub extra: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    code: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    extra: Option<&'a serde_json::Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            field: None,
            retry_after: None,
            extra: None,
        }
    }

    /// 400 naming the offending field.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        let field = field.into();
        let reason = reason.into();
        Self {
            field: Some(field.clone()),
            ..Self::new(
                StatusCode::BAD_REQUEST,
                "invalid",
                format!("{field}: {reason}"),
            )
        }
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self {
            retry_after: Some(1),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
        }
    }

    /// 503 `storage_unavailable`: this node's storage failed (a full disk) and its Raft core
    /// stopped; it exits to be restarted, so the client should go to another node (after
    /// `Retry-After`). RocksDB's own text stays in the node's log, not in the answer.
    pub fn storage_unavailable(cause: &str) -> Self {
        Self {
            retry_after: Some(1),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "storage_unavailable",
                format!(
                    "a node's storage failed ({}) and its Raft core stopped; that node restarts \
                     by itself: send the request to another node, or again later",
                    raftlane_raft::node::storage_fault_kind(cause)
                ),
            )
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// A handler got an outcome of a shape it does not expect (a programming error, reported
    /// rather than panicking). Only its kind is shown: the outcome may be another request's
    /// remembered answer, carrying payloads or tokens' nonces; the whole of it goes to the log.
    pub fn unexpected_outcome(outcome: &raftlane_statemachine::Outcome) -> Self {
        tracing::error!(?outcome, "a handler got an outcome of an unexpected shape");
        Self::internal(format!("unexpected outcome ({})", outcome.kind()))
    }

    /// 429: the caller's token is over its request rate (`--rate-limit-per-token`); it may
    /// send again after `retry_after_s` seconds (also in the body, for clients that only see
    /// the body).
    pub fn rate_limited(retry_after_s: u64) -> Self {
        Self {
            retry_after: Some(retry_after_s),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("this token is over its request rate; retry after {retry_after_s} s"),
            )
            .with_extra(serde_json::json!({ "retry_after_s": retry_after_s }))
        }
    }

    pub fn with_extra(mut self, extra: serde_json::Value) -> Self {
        self.extra = Some(extra);
        self
    }

    /// The same error about one item of a list (`at`, e.g. `actions[3]`) whose fields sit
    /// under `at.body`: the field and the message say which item was at fault.
    pub fn within(mut self, at: &str) -> Self {
        self.field = self.field.map(|f| format!("{at}.body.{f}"));
        self.message = format!("{at}: {}", self.message);
        self
    }

    /// The error as one answer in a list of answers: `{"error": {...}, "status"}`.
    pub fn to_item(&self) -> raftlane_contract::ItemError {
        raftlane_contract::ItemError {
            error: self.detail(),
            status: self.status.as_u16(),
        }
    }

    /// The error object of the body; `extra` is always built as a JSON object.
    fn detail(&self) -> raftlane_contract::ErrorDetail {
        raftlane_contract::ErrorDetail {
            code: self.code.to_string(),
            message: self.message.clone(),
            field: self.field.clone(),
            extra: self
                .extra
                .as_ref()
                .and_then(serde_json::Value::as_object)
                .cloned()
                .unwrap_or_default(),
        }
    }

    fn body(&self) -> Body<'_> {
        Body {
            error: Inner {
                code: self.code,
                message: &self.message,
                field: self.field.as_deref(),
                extra: self.extra.as_ref(),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        resp
    }
}

impl From<Rejection> for ApiError {
    fn from(r: Rejection) -> Self {
        let message = r.to_string();
        match &r {
            Rejection::Invalid { field, reason } => {
                ApiError::invalid(field.clone(), reason.clone())
            }
            Rejection::UnknownMessage(_)
            | Rejection::UnknownRow(_)
            | Rejection::UnknownApproval(_)
            | Rejection::UnknownPrincipal(_)
            | Rejection::UnknownUser(_)
            | Rejection::UnknownRole(_)
            | Rejection::UnknownApprovalKey(_) => ApiError::not_found(message),
            Rejection::UnknownChannel { field, .. } => ApiError {
                field: Some(field.clone()),
                ..ApiError::not_found(message)
            },
            Rejection::AlreadyExists { field, .. } => {
                let field = field.clone();
                ApiError {
                    field: Some(field),
                    ..ApiError::new(StatusCode::CONFLICT, "already_exists", message)
                }
            }
            Rejection::VersionMismatch { current, .. } => {
                ApiError::new(StatusCode::PRECONDITION_FAILED, "version_mismatch", message)
                    .with_extra(serde_json::json!({ "current_version": current }))
            }
            Rejection::ApprovalExpired(_) => {
                ApiError::new(StatusCode::CONFLICT, "expired", message)
            }
            Rejection::SelfApproval => {
                ApiError::new(StatusCode::FORBIDDEN, "self_approval", message)
            }
            Rejection::OwnerOfAnother { .. } => {
                ApiError::new(StatusCode::FORBIDDEN, "owner_of_another_principal", message)
            }
            Rejection::ClaimOfAnother { .. } => {
                ApiError::new(StatusCode::FORBIDDEN, "claim_of_another_principal", message)
            }
            Rejection::NameOfAnother { field, .. } => ApiError {
                field: Some(field.clone()),
                ..ApiError::new(StatusCode::FORBIDDEN, "owner_of_another_principal", message)
            },
            // The client's header, not the per-proposal id, is what the caller can fix.
            Rejection::RequestIdReused { .. } => ApiError {
                field: Some(raftlane_contract::headers::REQUEST_ID_FIELD.to_string()),
                ..ApiError::new(
                    StatusCode::CONFLICT,
                    "request_id_reused",
                    format!(
                        "this Request-Id was already used for a different request (another \
                         route, path or body) within the last {} s; send this request with a \
                         new Request-Id",
                        raftlane_statemachine::apply::request::REQUEST_TTL_MS / 1000
                    ),
                )
            },
            _ => ApiError::new(StatusCode::CONFLICT, r.code(), message),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        ApiError::internal(e.to_string())
    }
}

/// The write path's errors as the API answers them: every way no leader could be reached or
/// the node could not catch up is a 503 with `Retry-After` (the client may retry, a write with
/// the same `Request-Id`).
impl From<WriteError> for ApiError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::NoLeader { what, last } => {
                ApiError::unavailable(format!("no leader accepted the {what}: {last}"))
            }
            WriteError::NotApplied(cause) => ApiError::unavailable(cause.to_string()),
            WriteError::Refused(m) => ApiError::new(StatusCode::CONFLICT, "refused", m),
            WriteError::MembershipRefused(m) => {
                ApiError::new(StatusCode::CONFLICT, "membership_refused", m)
            }
            WriteError::MembershipRule {
                field,
                reason,
                invalid: true,
            } => ApiError::invalid(field, reason),
            WriteError::MembershipRule {
                field,
                reason,
                invalid: false,
            } => ApiError {
                field: Some(field.clone()),
                ..ApiError::new(
                    StatusCode::CONFLICT,
                    "membership_refused",
                    format!("{field}: {reason}"),
                )
            },
            e @ WriteError::OutcomeUnknown(_) => {
                ApiError::unavailable(format!("{e}; check /v1/cluster before retrying"))
            }
            WriteError::Fatal(m) => ApiError::internal(m),
            WriteError::StorageUnavailable(m) => {
                tracing::warn!(cause = %m, "answering 503 storage_unavailable");
                ApiError::storage_unavailable(&m)
            }
            WriteError::Seal(e) => ApiError::internal(e.to_string()),
            WriteError::Read(e) => ApiError::internal(e.to_string()),
            WriteError::Invalid(rejection) => rejection.into(),
            e @ WriteError::PoisonLane { .. } => ApiError::unavailable(e.to_string()),
            WriteError::ClockSkew(m) => ApiError {
                retry_after: Some(1),
                ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "clock_skew", m)
            },
            WriteError::Rejected(rejection) => rejection.into(),
            WriteError::UnexpectedOutcome(outcome) => ApiError::unexpected_outcome(&outcome),
            // The answer `crate::by_id` gives a row the caller cannot reach (`404`, naming the
            // id only): the state machine's own refusal of an unknown row, word for word.
            WriteError::RowNotFound(id) => Rejection::UnknownRow(id).into(),
            WriteError::Undecryptable {
                target,
                key_id,
                cause,
            } => ApiError::new(
                StatusCode::CONFLICT,
                "undecryptable",
                format!(
                    "rotation stopped, nothing written for this value's batch: {target:?}: {cause}"
                ),
            )
            .with_extra(serde_json::json!({ "ref": target, "key_id": key_id })),
            WriteError::NoKeyring => ApiError::new(
                StatusCode::CONFLICT,
                "no_keyring",
                "encryption at rest is off on this node (set RAFTLANE_KEYRING)",
            ),
            WriteError::TokenNotIssued { name } => ApiError::new(
                StatusCode::CONFLICT,
                "token_not_issued",
                format!(
                    "the principal '{name}' does not hold the token of this request: another \
                     rotation replaced it, or this node cannot re-derive a retried request's \
                     token (no cluster secret); create the token again with a new Request-Id"
                ),
            ),
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
