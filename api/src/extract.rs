//! Extractors whose rejections are the API's JSON errors naming the field: a JSON body
//! ([`JsonBody`]), a JSON body that may be empty ([`OptionalJson`]), a raw body ([`RawBody`]),
//! the query ([`Query`]) and the path ([`Path`]); and the parsing they share.

use crate::error::{ApiError, ApiResult};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

/// A JSON body parsed with errors that name the field: `400 {field, reason}`, `413` when too
/// large. Replaces axum's `Json` extractor, whose rejections are plain text.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(body_error)?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// The raw request body, with `413` (and other body failures) as JSON errors. Replaces axum's
/// `Bytes` extractor in handlers, whose rejections are plain text.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        Bytes::from_request(req, state)
            .await
            .map(RawBody)
            .map_err(body_error)
    }
}

/// A body that is JSON of type `T` or empty (every member's default), read by the extractor
/// but parsed only when the handler asks ([`OptionalJson::parse`]): after its permission
/// checks, so a caller without the permission hears `403` whatever it sent. Naming `T` in the
/// handler's signature is also what documents the body (`crate::route_spec::Reads`).
pub struct OptionalJson<T> {
    bytes: Bytes,
    wants: std::marker::PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned + Default> OptionalJson<T> {
    /// The body as a `T` (`400 {field, reason}` when it is not one).
    pub fn parse(&self) -> ApiResult<T> {
        parse_json_or_default(&self.bytes)
    }
}

impl<T, S: Send + Sync> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let RawBody(bytes) = RawBody::from_request(req, state).await?;
        Ok(OptionalJson {
            bytes,
            wants: std::marker::PhantomData,
        })
    }
}

pub fn body_error(e: axum::extract::rejection::BytesRejection) -> ApiError {
    if let Some(late) = crate::body_deadline::timed_out(&e) {
        body_timeout(late)
    } else if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "request body exceeds the configured limit",
        )
    } else {
        ApiError::invalid("body", e.body_text())
    }
}

/// `408 body_timeout`: the body did not arrive before its deadline ([`crate::body_deadline`]).
pub fn body_timeout(late: &crate::body_deadline::BodyTimedOut) -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "body_timeout",
        late.to_string(),
    )
}

/// Like [`parse_json`], with an empty body meaning every field's default.
pub fn parse_json_or_default<T: DeserializeOwned + Default>(bytes: &[u8]) -> ApiResult<T> {
    if bytes.is_empty() {
        Ok(T::default())
    } else {
        parse_json(bytes)
    }
}

pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(v) => Ok(v),
        Err(e) => {
            // A path of only unknown segments ("?", e.g. inside a truncated object) names nothing.
            let named = e
                .path()
                .iter()
                .any(|s| !matches!(s, serde_path_to_error::Segment::Unknown));
            let path = e.path().to_string();
            let inner = e.into_inner();
            // Malformed JSON is a fault of the body, wherever the parser stopped.
            let field = if !named || inner.is_syntax() || inner.is_eof() {
                missing_field(&inner.to_string()).unwrap_or_else(|| "body".to_string())
            } else {
                path
            };
            Err(ApiError::invalid(field, strip_position(&inner.to_string())))
        }
    }
}

/// A query string parsed with errors as JSON naming the parameter: `400 {field, reason}`.
/// Replaces axum's `Query`, whose rejections are plain text.
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::try_from_uri(&parts.uri)
            .map(|q| Query(q.0))
            .map_err(query_error)
    }
}

/// Path parameters with errors as JSON naming the parameter (e.g. invalid UTF-8 after percent
/// decoding). Replaces axum's `Path`, whose rejections are plain text.
pub struct Path<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        use axum::extract::path::ErrorKind;
        use axum::extract::rejection::PathRejection;
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(p) => Ok(Path(p.0)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => {
                let field = match e.kind() {
                    ErrorKind::InvalidUtf8InPathParam { key }
                    | ErrorKind::ParseErrorAtKey { key, .. }
                    | ErrorKind::DeserializeError { key, .. } => key.clone(),
                    _ => "path".to_string(),
                };
                Err(ApiError::invalid(field, e.body_text()))
            }
            Err(e) => Err(ApiError::internal(e.body_text())),
        }
    }
}

fn query_error(e: axum::extract::rejection::QueryRejection) -> ApiError {
    let text = e.body_text();
    let detail = text
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or(&text);
    // axum reports the parameter's path first: "count: invalid digit found in string".
    if let Some((name, reason)) = detail.split_once(": ") {
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return ApiError::invalid(name, reason);
        }
    }
    ApiError::invalid(
        missing_field(detail).unwrap_or_else(|| "query".to_string()),
        detail,
    )
}

/// serde's "missing field `x`" names the field only in the message.
fn missing_field(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("missing field `")?;
    Some(rest.split('`').next()?.to_string())
}

fn strip_position(msg: &str) -> String {
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}
