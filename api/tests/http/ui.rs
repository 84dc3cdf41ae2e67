//! `GET /ui`: the operator's page is served without a token, runs only its own script (by its
//! hash), loads nothing from elsewhere, and reads only routes the API serves, which answer a
//! viewer's token.

use crate::harness::*;
use base64::Engine;
use sha2::{Digest, Sha256};

/// The paths the page's script reads (`get("/v1/...")`). A query whose last value the script
/// appends (`"...?org=" + org`) gets the value the page starts with: `org` the `default` org,
/// `limit` the number of rows it asks for.
fn paths_read(page: &str) -> Vec<String> {
    page.split("get(\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|path| match path.rsplit(['?', '&']).next() {
            Some("org=") => format!("{path}default"),
            Some("limit=") => format!("{path}500"),
            _ => path.to_string(),
        })
        .collect()
}

#[tokio::test]
async fn the_operator_page_is_self_contained_and_reads_what_a_viewer_may() {
    let api = start().await;
    let r = api.call(Method::GET, "/ui", None, None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let header = |name: &str| {
        r.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    assert!(header("content-type").starts_with("text/html"));
    let page = r.text();

    // Nothing from anywhere else: no absolute URL at all.
    for scheme in ["http://", "https://", "src=\"//", "href=\"//"] {
        assert!(!page.contains(scheme), "the page names {scheme}");
    }
    // Only its own inline script may run: the policy names that script's hash.
    let script = page
        .split("<script>")
        .nth(1)
        .and_then(|rest| rest.split("</script>").next())
        .expect("one inline script");
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script));
    let csp = header("content-security-policy");
    assert!(
        csp.contains(&format!("script-src 'sha256-{hash}'")),
        "{csp}"
    );
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert_eq!(page.matches("<script").count(), 1, "one script, inline");

    // Every path it reads is a route the API serves for GET, and answers a viewer's token.
    let reads = paths_read(&page);
    assert!(reads.len() >= 5, "{reads:?}");
    assert!(reads.iter().all(|p| !p.ends_with('=')), "{reads:?}");
    let served = api_routes();
    let routes: Vec<(&str, &str)> = served.iter().map(|r| (r.method, r.path)).collect();
    let viewer = api.token("ui-viewer", "viewer", None).await;
    for path in &reads {
        let bare = path.split('?').next().unwrap_or(path);
        assert!(
            routes.contains(&("get", bare)),
            "the page reads {bare}, which the API does not serve"
        );
        let answer = api.get_as(&viewer, path).await;
        ok(&answer, 200);
    }
}
