//! The OpenAPI document, generated from [`crate::app::api_routes`] (the same list the router is
//! built from), served at `GET /openapi.json`.

use crate::app::api_routes;
use axum::Json;
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
/// config write adds 412, and creating a message or a token answers 201.
fn responses(method: &str, path: &str, auth: bool) -> Value {
    let error = |description: &str| json!({ "description": description, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } });
    let write = method != "get";
    let mut out = Map::new();
    match (method, path) {
        ("post", "/v1/channels/{channel}/messages") => {
            out.insert(
                "201".into(),
                json!({ "description": "Created: {message_id, duplicate: false, index}" }),
            );
            out.insert("200".into(), json!({ "description": "Idempotency-Key already used: the first message, duplicate: true" }));
        }
        ("post", "/v1/tokens") => {
            out.insert(
                "201".into(),
                json!({ "description": "Created: the token, shown once" }),
            );
        }
        _ => {
            out.insert("200".into(), json!({ "description": "OK" }));
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
    out.insert(
        "503".into(),
        error("No leader known; retry after Retry-After seconds"),
    );
    Value::Object(out)
}

pub fn document() -> Value {
    let mut paths = Map::new();
    for route in api_routes() {
        let mut parameters: Vec<Value> = params(route.path)
            .into_iter()
            .map(|p| json!({ "name": p, "in": "path", "required": true, "schema": { "type": "string" } }))
            .collect();
        if route.auth && route.method != "get" {
            parameters.push(request_id_header());
        }
        let mut op = json!({
            "summary": route.summary,
            "parameters": parameters,
            "responses": responses(route.method, route.path, route.auth),
        });
        if route.auth {
            op["security"] = json!([{ "bearer": [] }]);
        }
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        entry[route.method] = op;
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "raftlane",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Replicated message pipeline: queues, FIFO lanes, leases and an audit chain decided by Raft consensus."
        },
        "paths": paths,
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["code", "message"],
                            "properties": {
                                "code": { "type": "string" },
                                "message": { "type": "string" },
                                "field": { "type": "string" }
                            }
                        }
                    }
                }
            }
        }
    })
}

pub async fn serve() -> Json<Value> {
    Json(document())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_route() {
        let doc = document();
        let statuses = |method: &str, path: &str| -> Vec<String> {
            doc["paths"][path][method]["responses"]
                .as_object()
                .unwrap_or_else(|| panic!("{method} {path} documented"))
                .keys()
                .cloned()
                .collect()
        };
        let enqueue = statuses("post", "/v1/channels/{channel}/messages");
        assert!(enqueue.contains(&"201".into()) && enqueue.contains(&"413".into()));
        assert!(statuses("post", "/v1/tokens").contains(&"201".into()));
        let put_config = statuses("put", "/v1/config");
        assert!(put_config.contains(&"412".into()), "{put_config:?}");
        assert!(!statuses("get", "/v1/config").contains(&"412".into()));
        assert!(!statuses("get", "/v1/messages").contains(&"413".into()));
        let healthz = statuses("get", "/healthz");
        assert!(!healthz.contains(&"401".into()), "{healthz:?}");
        assert!(statuses("get", "/v1/stats").contains(&"401".into()));
    }

    #[test]
    fn every_write_documents_the_request_id_header_and_no_read_does() {
        let doc = document();
        let mut writes = 0;
        for route in api_routes().into_iter().filter(|r| r.auth) {
            let params = doc["paths"][route.path][route.method]["parameters"].clone();
            let has = params
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["name"] == "Request-Id"));
            assert_eq!(
                has,
                route.method != "get",
                "{} {}",
                route.method,
                route.path
            );
            writes += usize::from(has);
        }
        assert!(writes > 10, "only {writes} writes documented");
    }
}
