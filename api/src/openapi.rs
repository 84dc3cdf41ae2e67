//! The OpenAPI document, generated from [`crate::app::api_routes`] (the same list the router is
//! built from), served at `GET /openapi.json`. Request and answer schemas come from the
//! contract's types (`raftlane_contract::schema`), named by each route in that list.

use crate::app::{api_routes, RouteBody};
use axum::Json;
use raftlane_contract::schema::Schemas;
use raftlane_contract::{ErrorBody, OpenApiDocument};
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
fn request_body(body: RouteBody, schemas: &mut Schemas) -> Option<Value> {
    let json_body = |schema: Value| json!({ "application/json": { "schema": schema } });
    Some(match body {
        RouteBody::None => return None,
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
    })
}

pub fn document() -> Value {
    let mut schemas = Schemas::new();
    let error = schemas.answer::<ErrorBody>();
    let mut paths = Map::new();
    for route in api_routes() {
        let mut parameters: Vec<Value> = params(route.path)
            .into_iter()
            .map(|p| json!({ "name": p, "in": "path", "required": true, "schema": { "type": "string" } }))
            .collect();
        if route.auth && route.method != "get" {
            parameters.push(request_id_header());
        }
        let answer = route.answer.map(|schema| schema(&mut schemas));
        let mut op = json!({
            "summary": route.summary,
            "parameters": parameters,
            "responses": responses(route.method, route.path, route.auth, answer.as_ref(), &error),
        });
        if let Some(body) = request_body(route.body, &mut schemas) {
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
    doc
}

pub async fn serve() -> Json<OpenApiDocument> {
    let doc = match document() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    Json(OpenApiDocument(doc))
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
    /// The `$ref` a schema points at, if it resolves in the document's components.
    fn resolves(doc: &Value, schema: &Value) -> Result<String, String> {
        let r = schema["$ref"]
            .as_str()
            .ok_or_else(|| format!("not a $ref: {schema}"))?;
        let name = r
            .strip_prefix("#/components/schemas/")
            .ok_or_else(|| format!("not a component: {r}"))?;
        if doc["components"]["schemas"][name].is_object() {
            Ok(name.to_string())
        } else {
            Err(format!("{r} does not resolve"))
        }
    }

    #[test]
    fn every_json_body_and_every_2xx_answer_has_a_resolving_schema() {
        let doc = document();
        let mut bodies = 0;
        for route in api_routes() {
            let op = &doc["paths"][route.path][route.method];
            let at = format!("{} {}", route.method, route.path);
            match route.body {
                RouteBody::None => assert!(op.get("requestBody").is_none(), "{at}"),
                _ => {
                    let schema = &op["requestBody"]["content"]["application/json"]["schema"];
                    let name = resolves(&doc, schema).unwrap_or_else(|e| panic!("{at}: {e}"));
                    assert!(!name.is_empty());
                    bodies += 1;
                }
            }
            let responses = op["responses"].as_object().expect("responses");
            let mut ok = 0;
            for (status, response) in responses.iter().filter(|(s, _)| s.starts_with('2')) {
                ok += 1;
                if route.answer.is_none() {
                    let media = if route.path == "/ui" {
                        "text/html"
                    } else {
                        "text/plain"
                    };
                    assert!(response["content"][media].is_object(), "{at}");
                    continue;
                }
                let schema = &response["content"]["application/json"]["schema"];
                resolves(&doc, schema).unwrap_or_else(|e| panic!("{at} {status}: {e}"));
            }
            assert!(ok > 0, "{at} documents no 2xx");
            for (status, response) in responses.iter().filter(|(s, _)| !s.starts_with('2')) {
                let schema = &response["content"]["application/json"]["schema"];
                resolves(&doc, schema).unwrap_or_else(|e| panic!("{at} {status}: {e}"));
            }
        }
        assert!(bodies >= 20, "only {bodies} request bodies documented");
    }

    #[test]
    fn every_ref_in_the_document_resolves() {
        fn walk(v: &Value, doc: &Value, at: &str) {
            match v {
                Value::Object(map) => {
                    if map.contains_key("$ref") {
                        resolves(doc, v).unwrap_or_else(|e| panic!("{at}: {e}"));
                    }
                    for (k, child) in map {
                        walk(child, doc, &format!("{at}/{k}"));
                    }
                }
                Value::Array(items) => {
                    for (i, child) in items.iter().enumerate() {
                        walk(child, doc, &format!("{at}/{i}"));
                    }
                }
                _ => {}
            }
        }
        let doc = document();
        walk(&doc, &doc, "");
        // The request schemas were all moved into the components.
        assert!(doc["components"].get("requestSchemas").is_none());
        assert!(doc["components"]["schemas"]["Error"].is_object());
    }

    /// A body the server refuses is refused by the schema too: unknown members, missing
    /// required ones.
    #[test]
    fn request_schemas_refuse_what_the_server_refuses() {
        use raftlane_contract::schema::conforms;
        let doc = document();
        let components = &doc["components"]["schemas"];
        let body = |method: &str, path: &str| {
            doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
                .clone()
        };
        let claim = body("post", "/v1/lanes/{stage}/{name}/claim");
        assert!(conforms(&json!({ "owner": "w", "ttl_ms": 5 }), &claim, components).is_ok());
        assert!(conforms(&json!({ "owner": "w" }), &claim, components).is_err());
        assert!(conforms(
            &json!({ "owner": "w", "ttl_ms": 5, "x": 1 }),
            &claim,
            components
        )
        .is_err());
        // No member of the configuration is required in a request, though every one is sent.
        let config = body("put", "/v1/config");
        assert!(conforms(&json!({}), &config, components).is_ok());
        let answer = &doc["paths"]["/v1/config"]["get"]["responses"]["200"]["content"]
            ["application/json"]["schema"];
        let sent = json!({ "config": {}, "set_at": 1, "set_by": "a", "version": 1 });
        assert!(
            conforms(&sent, answer, components).is_err(),
            "config members are sent"
        );
    }
}
