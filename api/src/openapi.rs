//! The OpenAPI document, generated from the route table ([`crate::route_table::api_routes`],
//! the same list the router is built from), served at `GET /openapi.json` and committed as
//! `api/openapi.json` (`route_table`'s test `the_committed_document_is_the_served_one`).
//! Query, request and answer schemas come from the contract's types
//! (`raftlane_contract::schema`): a route's query and body are the types its handler's
//! extractors parse (`crate::route_spec::Reads`), its answer the type its entry names.

use crate::route_spec::{ApiRoute, RouteBody};
use raftlane_contract::schema::Schemas;
use raftlane_contract::ErrorBody;
use serde_json::{json, Map, Value};

/// Path parameters of a templated path: `/v1/rows/{id}/{action}` → `[id, action]`.
fn params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

/// The optional `Request-Id` header every write accepts (see `crate::request_id`).
fn request_id_header() -> Value {
    json!({
        "name": "Request-Id",
        "in": "header",
        "required": false,
        "description": "1 to 56 visible ASCII characters. Resending a write with the same id (same token) within 120 s returns the first answer instead of applying it again.",
        "schema": { "type": "string", "maxLength": 56 }
    })
}

/// The statuses a route can answer, each error with the JSON error body. Which ones follow
/// from the route's kind: bearer routes add 401/403, writes add 409 and 413 (body limit), the
/// config write adds 412, and creating a message or a token answers 201. Every 2xx carries
/// `answer`, the schema of the route's answer (none: not JSON).
fn responses(method: &str, path: &str, auth: bool, answer: Option<&Value>, error: &Value) -> Value {
    let error = |description: &str| json!({ "description": description, "content": { "application/json": { "schema": error } } });
    let ok = |description: &str| match answer {
        Some(schema) => {
            json!({ "description": description, "content": { "application/json": { "schema": schema } } })
        }
        // Not JSON: the operator's page is HTML, the rest (`/metrics`) text.
        None => {
            let media = if path == "/ui" {
                "text/html"
            } else {
                "text/plain"
            };
            let mut content = Map::new();
            content.insert(media.into(), json!({ "schema": { "type": "string" } }));
            json!({ "description": description, "content": content })
        }
    };
    let write = method != "get";
    let mut out = Map::new();
    match (method, path) {
        ("post", "/v1/channels/{channel}/messages") => {
            out.insert(
                "201".into(),
                ok("Created: {message_id, duplicate: false, index}"),
            );
            out.insert(
                "200".into(),
                ok("Idempotency-Key already used: the first message, duplicate: true"),
            );
        }
        ("post", "/v1/tokens") => {
            out.insert("201".into(), ok("Created: the token, shown once"));
        }
        ("post", "/v1/approvals") => {
            out.insert("201".into(), ok("Created: the approval's id"));
        }
        _ => {
            out.insert("200".into(), ok("OK"));
        }
    }
    out.insert("400".into(), error("Invalid input (the field is named)"));
    if auth {
        out.insert("401".into(), error("Missing or unknown token"));
        out.insert(
            "403".into(),
            error("Outside the token's role or channel scope"),
        );
    }
    out.insert("404".into(), error("Not found"));
    if write {
        out.insert(
            "409".into(),
            error("Stale fence, wrong status or a refused change"),
        );
        out.insert("413".into(), error("Body over the configured limit"));
    }
    if (method, path) == ("put", "/v1/config") {
        out.insert(
            "412".into(),
            error("If-Match is not the current version (error.current_version has it)"),
        );
    }
    let unavailable = if path == "/readyz" {
        // Not ready is an answer of its own: `{"ready": false, "reason"}`.
        ok("Not ready (reason says why)")
    } else {
        error("No leader known; retry after Retry-After seconds")
    };
    out.insert("503".into(), unavailable);
    Value::Object(out)
}

/// The `requestBody` of a route that reads one.
fn request_body(route: &ApiRoute, schemas: &mut Schemas) -> Result<Option<Value>, DocumentError> {
    let json_body = |schema: Value| json!({ "application/json": { "schema": schema } });
    Ok(Some(match route.body {
        RouteBody::None => return Ok(None),
        RouteBody::Json(schema) => {
            json!({ "required": true, "content": json_body(schema(schemas)) })
        }
        RouteBody::OptionalJson(schema) => json!({
            "required": false,
            "description": "An empty body is every member's default.",
            "content": json_body(schema(schemas)),
        }),
        RouteBody::JsonOrText(schema) => {
            let mut content = json_body(schema(schemas));
            content["text/plain"] = json!({ "schema": { "type": "string", "description": "The raw message; the other members as X- headers (X-Control-Id, X-Message-Type, X-Source-Type, X-Summary, X-Metadata)." } });
            json!({ "required": true, "content": content })
        }
        RouteBody::Raw => return Err(DocumentError::RawBody(route.method, route.path)),
    }))
}

/// Why the route table cannot be documented: a fault of the table, which every test that
/// builds the router meets first.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("{0} {1}: its handler reads a raw body; name what it parses with .takes…() in the route table")]
    RawBody(&'static str, &'static str),
    #[error("{0} {1}: {2}")]
    Query(
        &'static str,
        &'static str,
        #[source] raftlane_contract::schema::NotAQuery,
    ),
}

/// The document of `routes`.
pub fn document(routes: &[ApiRoute]) -> Result<Value, DocumentError> {
    let mut schemas = Schemas::new();
    let error = schemas.answer::<ErrorBody>();
    let mut paths = Map::new();
    for route in routes {
        let mut parameters: Vec<Value> = params(route.path)
            .into_iter()
            .map(|p| json!({ "name": p, "in": "path", "required": true, "schema": { "type": "string" } }))
            .collect();
        if let Some(query) = route.query {
            let query = query(&mut schemas)
                .map_err(|e| DocumentError::Query(route.method, route.path, e))?;
            parameters.extend(query);
        }
        if route.auth && route.method != "get" {
            parameters.push(request_id_header());
        }
        let answer = route.answer.map(|schema| schema(&mut schemas));
        let mut op = json!({
            "summary": route.summary,
            "parameters": parameters,
            "responses": responses(route.method, route.path, route.auth, answer.as_ref(), &error),
        });
        if let Some(body) = request_body(route, &mut schemas)? {
            op["requestBody"] = body;
        }
        if route.auth {
            op["security"] = json!([{ "bearer": [] }]);
        }
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        entry[route.method] = op;
    }
    let mut doc = json!({
        "openapi": "3.0.3",
        "info": {
            "title": "raftlane",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Replicated message pipeline: queues, FIFO lanes, leases and an audit chain decided by Raft consensus."
        },
        "paths": paths,
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
            "schemas": {}
        }
    });
    schemas.finish(&mut doc);
    Ok(doc)
}
