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
            "responses": {
                "200": { "description": "OK" },
                "400": { "description": "Invalid input", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
                "401": { "description": "Missing or unknown token" },
                "403": { "description": "Outside the token's role or channel scope" },
                "404": { "description": "Not found" },
                "409": { "description": "Stale fence or wrong status" },
                "503": { "description": "No leader known; retry after Retry-After seconds" }
            }
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
