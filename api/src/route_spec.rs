//! What one route of the API is: its method, path and summary, whether it needs a token, its
//! handler, and the contract types of its query, body and answer. The route table
//! ([`crate::route_table`]) is a list of these; the router and the OpenAPI document are both
//! built from it, so they cannot disagree.
//!
//! # The query and the body come from the handler's signature
//! A route's query and body are not declared beside its handler but read off the handler's
//! arguments ([`Reads`]): a handler that takes `Query<T>` documents `T`'s members as query
//! parameters, one that takes `JsonBody<T>` or `OptionalJson<T>` documents `T` as its body. The
//! type the document names is the type the handler parses, by construction, so the two cannot
//! drift apart; an extractor without a [`Reads`] does not compile into the table. Only a
//! handler that reads its body as raw bytes and picks the type itself (by a path segment, or by
//! content type) names the body in the table (`takes…`), and the document refuses to be built
//! for such a route that names none ([`RouteBody::Raw`]).

use crate::auth::Caller;
use crate::extract::{JsonBody, OptionalJson, Path, Query, RawBody};
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::handler::Handler;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::routing::{on, MethodFilter, MethodRouter};
use raftlane_contract::schema::{JsonSchema, NotAQuery, Schemas};
use std::sync::Arc;

/// One documented route: the router and the OpenAPI document are both built from this list,
/// so they cannot disagree.
pub struct ApiRoute {
    /// Lower case, as OpenAPI spells it.
    pub method: &'static str,
    pub path: &'static str,
    pub summary: &'static str,
    /// Needs `Authorization: Bearer`.
    pub auth: bool,
    pub handler: MethodRouter<Arc<AppState>>,
    /// The query parameters the handler parses (`None`: it reads no query).
    pub query: Option<QueryFn>,
    /// The request body the handler parses, for the document.
    pub body: RouteBody,
    /// The schema of the 2xx answer (`None`: not JSON, e.g. `/metrics`).
    pub answer: Option<SchemaFn>,
}

/// A schema of the contract, as the document's generator produces it (usually a `$ref`).
pub type SchemaFn = fn(&mut Schemas) -> serde_json::Value;

/// The OpenAPI `parameters` of a query type.
pub type QueryFn = fn(&mut Schemas) -> Result<Vec<serde_json::Value>, NotAQuery>;

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
    /// The handler reads raw bytes and parses them itself: the table must say as what
    /// (`takes…`) before the document can describe the route.
    Raw,
}

/// The HTTP methods the API serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Get,
    Post,
    Put,
    Delete,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Post => "post",
            Verb::Put => "put",
            Verb::Delete => "delete",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
            Verb::Put => MethodFilter::PUT,
            Verb::Delete => MethodFilter::DELETE,
        }
    }
}

/// What a handler's arguments read from a request beyond its path and headers, gathered for
/// the document.
#[derive(Clone, Copy)]
pub struct Inputs {
    query: Option<QueryFn>,
    body: RouteBody,
}

impl Inputs {
    fn query(&mut self, query: QueryFn) {
        assert!(self.query.is_none(), "a handler parses its query once");
        self.query = Some(query);
    }

    fn body(&mut self, body: RouteBody) {
        assert!(
            matches!(self.body, RouteBody::None),
            "a handler reads its body once"
        );
        self.body = body;
    }
}

/// What an extractor a handler takes reads from the request, for the document. Every
/// extractor a handler may take implements it, so a route's query and body are read off its
/// handler's signature; a handler taking an extractor without one does not compile into the
/// route table.
pub trait Reads {
    fn reads(inputs: &mut Inputs);
}

impl<T: JsonSchema> Reads for Query<T> {
    fn reads(inputs: &mut Inputs) {
        inputs.query(|s| s.query::<T>());
    }
}

impl<T: JsonSchema> Reads for JsonBody<T> {
    fn reads(inputs: &mut Inputs) {
        inputs.body(RouteBody::Json(|s| s.request::<T>()));
    }
}

impl<T: JsonSchema> Reads for OptionalJson<T> {
    fn reads(inputs: &mut Inputs) {
        inputs.body(RouteBody::OptionalJson(|s| s.request::<T>()));
    }
}

impl Reads for RawBody {
    fn reads(inputs: &mut Inputs) {
        inputs.body(RouteBody::Raw);
    }
}

/// The whole request: its body is raw bytes the handler parses itself (the enqueue route:
/// JSON, or text with `X-` headers). The API's handlers read the query only through
/// [`Query`].
impl Reads for Request {
    fn reads(inputs: &mut Inputs) {
        inputs.body(RouteBody::Raw);
    }
}

/// Extractors that read neither the query nor the body.
macro_rules! reads_nothing {
    ($($ty:ty),* $(,)?) => {
        $(impl<T> Reads for $ty {
            fn reads(_: &mut Inputs) {}
        })*
    };
}
reads_nothing!(State<T>, Path<T>);

impl Reads for Caller {
    fn reads(_: &mut Inputs) {}
}

impl Reads for HeaderMap {
    fn reads(_: &mut Inputs) {}
}

/// The request's head, for a handler that authenticates only sometimes (`/metrics`): its
/// headers. Like [`Request`], its query is read only through [`Query`].
impl Reads for Parts {
    fn reads(_: &mut Inputs) {}
}

/// A handler's arguments as axum sees them: `(M, T1, …, Tn)`, `M` the marker of how the last
/// one is extracted (a handler without arguments is `((),)`).
macro_rules! reads_arguments {
    ($($ty:ident),*) => {
        impl<M, $($ty: Reads,)*> Reads for (M, $($ty,)*) {
            #[allow(unused_variables)]
            fn reads(inputs: &mut Inputs) {
                $($ty::reads(inputs);)*
            }
        }
    };
}
reads_arguments!();
reads_arguments!(T1);
reads_arguments!(T1, T2);
reads_arguments!(T1, T2, T3);
reads_arguments!(T1, T2, T3, T4);
reads_arguments!(T1, T2, T3, T4, T5);
reads_arguments!(T1, T2, T3, T4, T5, T6);
reads_arguments!(T1, T2, T3, T4, T5, T6, T7);
reads_arguments!(T1, T2, T3, T4, T5, T6, T7, T8);

impl ApiRoute {
    /// The handler reads raw bytes that are JSON of type `T`.
    pub(crate) fn takes<T: JsonSchema>(self) -> Self {
        self.names_raw_body(RouteBody::Json(|s| s.request::<T>()))
    }

    /// The handler reads raw bytes that are `T` as JSON, or its raw text under any other
    /// content type.
    pub(crate) fn takes_json_or_text<T: JsonSchema>(self) -> Self {
        self.names_raw_body(RouteBody::JsonOrText(|s| s.request::<T>()))
    }

    /// Only a raw body is named in the table: any other's type is the handler's own.
    fn names_raw_body(mut self, body: RouteBody) -> Self {
        assert!(
            matches!(self.body, RouteBody::Raw),
            "{} {}: the handler's signature names its body",
            self.method,
            self.path
        );
        self.body = body;
        self
    }

    /// The route answers `T` (with each of its 2xx statuses).
    pub(crate) fn answers<T: JsonSchema>(mut self) -> Self {
        self.answer = Some(|s| s.answer::<T>());
        self
    }
}

/// A route of the table, its query and body read off `handler`'s arguments; `auth` for every
/// `/v1/` path.
pub(crate) fn r<H, T>(verb: Verb, path: &'static str, summary: &'static str, handler: H) -> ApiRoute
where
    H: Handler<T, Arc<AppState>>,
    T: Reads + 'static,
{
    let mut inputs = Inputs {
        query: None,
        body: RouteBody::None,
    };
    T::reads(&mut inputs);
    ApiRoute {
        method: verb.as_str(),
        path,
        summary,
        auth: path.starts_with("/v1/"),
        handler: on(verb.filter(), handler),
        query: inputs.query,
        body: inputs.body,
        answer: None,
    }
}
