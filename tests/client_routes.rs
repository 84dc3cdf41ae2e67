//! The Rust client covers the API: the routes its methods call (`raftlane_client::routes`, one
//! constant per route) are exactly the server's route table, and every route the Python
//! client's methods call (its `@_route(...)` marks) is among them. A route added to the server
//! or to the Python client without a Rust method fails here, naming it.

use raftlane_client::route::Route;
use raftlane_client::routes::ROUTES;
use std::collections::BTreeSet;

/// `(method, path)` as the server's table and the Python client spell them.
type Key = (String, String);

fn key(r: &Route) -> Key {
    (r.method.as_str().to_string(), r.path.to_string())
}

fn rust_routes() -> BTreeSet<Key> {
    ROUTES.iter().map(key).collect()
}

fn server_routes() -> BTreeSet<Key> {
    raftlane_api::route_table::api_routes()
        .iter()
        .map(|r| (r.method.to_lowercase(), r.path.to_string()))
        .collect()
}

/// The quoted string at the start of `s` (after blanks) and what follows it.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start().strip_prefix('"')?;
    let end = s.find('"')?;
    Some((&s[..end], &s[end + 1..]))
}

/// Every `@_route("verb", "/path", ...)` of the Python client's source, the mark spread over
/// lines or not.
fn python_routes(source: &str) -> Vec<Key> {
    source
        .split("@_route(")
        .skip(1)
        .filter_map(|mark| {
            let (verb, rest) = quoted(mark)?;
            let rest = rest.trim_start().strip_prefix(',')?;
            let (path, _) = quoted(rest)?;
            Some((verb.to_lowercase(), path.to_string()))
        })
        .collect()
}

fn python_source() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../clients/python/src/raftlane/client.py"
    );
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

#[test]
fn the_client_calls_every_route_the_server_serves_and_no_other() {
    let rust = rust_routes();
    assert_eq!(rust.len(), ROUTES.len(), "a route is listed twice");
    let server = server_routes();
    let missing: Vec<&Key> = server.difference(&rust).collect();
    let unknown: Vec<&Key> = rust.difference(&server).collect();
    assert!(
        missing.is_empty(),
        "routes the server serves without a Rust client method: {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "routes the Rust client calls that the server does not serve: {unknown:?}"
    );
}

#[test]
fn the_client_calls_every_route_the_python_client_calls() {
    let source = python_source();
    let python = python_routes(&source);
    // The parse found the marks: as many as the source has, and a known one among them.
    assert_eq!(python.len(), source.matches("@_route(").count());
    assert!(python.contains(&("post".into(), "/v1/channels/{channel}/messages".into())));
    let rust = rust_routes();
    let missing: BTreeSet<&Key> = python.iter().filter(|k| !rust.contains(k)).collect();
    assert!(
        missing.is_empty(),
        "routes the Python client calls without a Rust client method: {missing:?}"
    );
}

#[test]
fn marks_spread_over_lines_are_read() {
    let source = r#"
    @_route("get", "/v1/stats", answer=Stats)
    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        body=("fence",),
    )
    "#;
    assert_eq!(
        python_routes(source),
        vec![
            ("get".to_string(), "/v1/stats".to_string()),
            ("post".to_string(), "/v1/rows/{id}/{action}".to_string()),
        ]
    );
}
