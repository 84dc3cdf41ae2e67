//! What one route of the API is: its method, path and summary, whether it needs a token, its
//! handler, and the contract types of its body and answer. The route table
//! ([`crate::route_table`]) is a list of these; the router and the OpenAPI document are both
//! built from it, so they cannot disagree.

use crate::state::AppState;
use axum::routing::MethodRouter;
use std::sync::Arc;

/// One documented route: the router and the OpenAPI document are both built from this list,
/// so they cannot disagree.
pub struct ApiRoute {
    pub method: &'static str,
    pub path: &'static str,
    pub summary: &'static str,
    /// Needs `Authorization: Bearer`.
    pub auth: bool,
    pub handler: MethodRouter<Arc<AppState>>,
    /// The request body the handler parses, for the document.
    pub body: RouteBody,
    /// The schema of the 2xx answer (`None`: not JSON, e.g. `/metrics`).
    pub answer: Option<SchemaFn>,
}

/// A schema of the contract, as the document's generator produces it (usually a `$ref`).
pub type SchemaFn = fn(&mut raftlane_contract::schema::Schemas) -> serde_json::Value;

/// What a route reads from its body.
#[derive(Clone, Copy)]
pub enum RouteBody {
    None,
    /// A JSON body of this schema.
    Json(SchemaFn),
    /// A JSON body of this schema, or none at all (every member's default).
    OptionalJson(SchemaFn),
    /// A JSON body of this schema, or (any other content type) the raw text it wraps.
    JsonOrText(SchemaFn),
}

impl ApiRoute {
    /// The route parses a JSON body of type `T`.
    pub(crate) fn takes<T: raftlane_contract::schema::JsonSchema>(mut self) -> Self {
        self.body = RouteBody::Json(|s| s.request::<T>());
        self
    }

    /// The route parses a JSON body of type `T`; an empty body means `T`'s defaults.
    pub(crate) fn takes_optional<T: raftlane_contract::schema::JsonSchema>(mut self) -> Self {
        self.body = RouteBody::OptionalJson(|s| s.request::<T>());
        self
    }

    /// The route takes `T` as JSON, or its raw text under any other content type.
    pub(crate) fn takes_json_or_text<T: raftlane_contract::schema::JsonSchema>(mut self) -> Self {
        self.body = RouteBody::JsonOrText(|s| s.request::<T>());
        self
    }

    /// The route answers `T` (with each of its 2xx statuses).
    pub(crate) fn answers<T: raftlane_contract::schema::JsonSchema>(mut self) -> Self {
        self.answer = Some(|s| s.answer::<T>());
        self
    }
}

/// A route of the table: `auth` for every `/v1/` path.
pub(crate) fn r(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    handler: MethodRouter<Arc<AppState>>,
) -> ApiRoute {
    ApiRoute {
        method,
        path,
        summary,
        auth: path.starts_with("/v1/"),
        handler,
        body: RouteBody::None,
        answer: None,
    }
}
