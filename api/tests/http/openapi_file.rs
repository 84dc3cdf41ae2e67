//! `api/openapi.json`, the OpenAPI document committed beside the code (the Python client's
//! types are generated from it), is the document a node serves at `GET /openapi.json`.
//!
//! A change to a route, a query, a body or an answer changes the served document; this test
//! then fails until the file is regenerated with
//! `RAFTLANE_OPENAPI_BLESS=1 cargo test -p raftlane-api --test http openapi_file`
//! (which writes the file and still fails, so a bless is never silent) and the new file is
//! reviewed and committed with the change.

use crate::harness::*;
use std::path::PathBuf;

const BLESS_VAR: &str = "RAFTLANE_OPENAPI_BLESS";

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openapi.json")
}

/// The JSON pointers where `a` and `b` differ (at most `limit` of them).
fn differences(a: &Value, b: &Value, at: &str, out: &mut Vec<String>, limit: usize) {
    if out.len() >= limit || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let path = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => differences(p, q, &path, out, limit),
                    (Some(_), None) => out.push(format!("{path}: only in the committed file")),
                    (None, Some(_)) => out.push(format!("{path}: only in the served document")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(p, q, &format!("{at}/{i}"), out, limit);
            }
        }
        _ => out.push(format!("{at}: committed {a}, served {b}")),
    }
}

#[tokio::test]
async fn the_committed_document_is_the_served_one() {
    let api = start().await;
    let r = api.call(Method::GET, "/openapi.json", None, None).await;
    ok(&r, 200);
    let served = r.body;
    let path = committed_path();
    let mut text = serde_json::to_string_pretty(&served).expect("the document serializes");
    text.push('\n');
    if std::env::var(BLESS_VAR).as_deref() == Ok("1") {
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        panic!(
            "{BLESS_VAR}=1: wrote {}; review it (git diff), then run again without the variable",
            path.display()
        );
    }
    let regenerate = format!(
        "regenerate it with `{BLESS_VAR}=1 cargo test -p raftlane-api --test http openapi_file`, \
         review the diff and commit it"
    );
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} cannot be read ({e}): {regenerate}", path.display()));
    let committed: Value = serde_json::from_str(&committed)
        .unwrap_or_else(|e| panic!("{} is not JSON ({e}): {regenerate}", path.display()));
    let mut diff = Vec::new();
    differences(&committed, &served, "", &mut diff, 20);
    assert!(
        diff.is_empty(),
        "{} differs from the document the API serves:\n  {}\n{regenerate}",
        path.display(),
        diff.join("\n  ")
    );
    // Byte for byte too, so the file is exactly what a bless writes (generators and reviewers
    // read the text).
    assert_eq!(
        std::fs::read_to_string(&path).expect("read above"),
        text,
        "{} holds the served document but not as a bless writes it: {regenerate}",
        path.display()
    );
}

/// The comparison is not vacuous: a changed, a missing and an added member are each reported.
#[test]
fn differences_are_reported_by_pointer() {
    let committed = json!({ "paths": { "/a": { "get": 1 } }, "info": { "version": "1" } });
    let served = json!({ "paths": { "/a": { "get": 2 }, "/b": {} }, "x/y": 0 });
    let mut out = Vec::new();
    differences(&committed, &served, "", &mut out, 20);
    assert_eq!(
        out,
        vec![
            "/info: only in the committed file".to_string(),
            "/paths/~1a/get: committed 1, served 2".to_string(),
            "/paths/~1b: only in the served document".to_string(),
            "/x~1y: only in the served document".to_string(),
        ]
    );
}
