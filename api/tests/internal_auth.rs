//! The node-to-node routes (`/internal/...`) accept only requests signed with the cluster
//! secret (HMAC over path, timestamp and body, as the Raft transport): the secret itself in the
//! old plain-text header, a wrong key, a signature of another route or body, or a stale one are
//! refused with 401 and nothing is written. A captured signed proposal replayed is refused
//! (401: its nonce was used), and so is one signed for another node. Every refusal says only
//! that authentication failed (code `unauthorized`, or `clock_skew`): no node id, no clock
//! offset, no expected value.

use axum::http::Method;
use raftlane_api::backend::MembershipChange;
use raftlane_api::clock::now_ms;
use raftlane_api::write::signing::{
    signature, LEGACY_SECRET_HEADER, PATH_MEMBERSHIP, PATH_PROPOSE, PATH_READ_INDEX,
};
use raftlane_api::ProposeError;
use raftlane_raft::auth::{ClusterAuth, AUTH_HEADER};
use raftlane_statemachine::wire::command::AuditAuthor;
use raftlane_statemachine::wire::command::RecordAudit;
use raftlane_statemachine::{codec, Command, Envelope, Outcome, Response};
use raftlane_testkit::api::LocalApi;
use serde_json::Value;

const ADMIN: &str = "admin-secret";
const SECRET: &str = "cluster-secret";
/// The node id of the kit's local backend: what calls to it are signed for.
const NODE: u64 = 1;

/// The kit's API on a fresh local backend, with this file's helpers.
struct Api(LocalApi);

impl std::ops::Deref for Api {
    type Target = LocalApi;
    fn deref(&self) -> &LocalApi {
        &self.0
    }
}

async fn start() -> Api {
    Api(LocalApi::start(ADMIN, SECRET).await)
}

impl Api {
    async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> (u16, Vec<u8>) {
        let url = format!("{}{path}", self.base);
        let (status, _, raw) = self
            .http
            .call(method, &url, headers, body)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        (status.as_u16(), raw.to_vec())
    }

    async fn audit_count(&self) -> u64 {
        let (status, body) = raftlane_testkit::http::call(
            &self.http,
            &self.base,
            ADMIN,
            Method::GET,
            "/v1/audit/verify?org=default",
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        body["count"].as_u64().expect("count")
    }
}

fn forged_audit(request_id: &str) -> Vec<u8> {
    let envelope = Envelope::new(
        now_ms(),
        "node",
        Command::RecordAudit(RecordAudit {
            action: "forwarded".into(),
            channel: None,
            org: None,
            detail: None,
            author: AuditAuthor::Principal,
        }),
    )
    .with_request_id(request_id);
    codec::encode(&envelope)
}

/// A refusal: `401` with a stable code and a message that says only that authentication failed
/// (the reason is in the node's log): no node id, no clock offset, no expected value; the body
/// holds no digit at all.
fn assert_unauthorized(status: u16, raw: &[u8], what: &str) {
    assert_eq!(status, 401, "{what}: {}", String::from_utf8_lossy(raw));
    let body: Value = serde_json::from_slice(raw).expect("a JSON error");
    // A signature too far from this node's clock is refused as what it is: clock skew (one
    // bound for every node-to-node path, docs/SPEC.md §2.1), never as a wrong secret.
    let expected = if what.starts_with("stale signature") {
        "clock_skew"
    } else {
        "unauthorized"
    };
    assert_eq!(
        body,
        serde_json::json!({
            "error": { "code": expected, "message": "node-to-node authentication failed" }
        }),
        "{what}"
    );
    let text = String::from_utf8_lossy(raw);
    assert!(
        !text.contains(|c: char| c.is_ascii_digit()),
        "{what}: the refusal names a number (a node id, an offset): {text}"
    );
}

#[tokio::test]
async fn internal_routes_refuse_anything_but_a_valid_signature() {
    let api = start().await;
    let before = api.digest().await;
    let body = forged_audit("fwd-1/0");
    let good = ClusterAuth::new(SECRET, 0);
    let wrong_key = ClusterAuth::new("not-the-secret", 0);
    let now = now_ms();
    let stale = now - 10 * 60 * 1000;
    let refused: Vec<(&str, Vec<(&str, String)>)> = vec![
        // The former scheme: the (correct) secret itself in a header.
        (
            "plain secret",
            vec![(LEGACY_SECRET_HEADER, SECRET.to_string())],
        ),
        ("nothing", vec![]),
        (
            "wrong key",
            vec![(AUTH_HEADER, wrong_key.sign(NODE, PATH_PROPOSE, now, &body))],
        ),
        (
            "another route's signature",
            vec![(AUTH_HEADER, good.sign(NODE, PATH_READ_INDEX, now, &body))],
        ),
        (
            "another body's signature",
            vec![(AUTH_HEADER, good.sign(NODE, PATH_PROPOSE, now, b"other"))],
        ),
        (
            "stale signature",
            vec![(AUTH_HEADER, good.sign(NODE, PATH_PROPOSE, stale, &body))],
        ),
        ("malformed", vec![(AUTH_HEADER, "1.zz.zz".to_string())]),
        (
            "plain secret beside a wrong signature",
            vec![
                (LEGACY_SECRET_HEADER, SECRET.to_string()),
                (AUTH_HEADER, wrong_key.sign(NODE, PATH_PROPOSE, now, &body)),
            ],
        ),
    ];
    for (what, headers) in &refused {
        let (status, raw) = api
            .send(Method::POST, PATH_PROPOSE, headers, body.clone())
            .await;
        assert_unauthorized(status, &raw, what);
    }
    // The other internal routes too.
    let plain = [(LEGACY_SECRET_HEADER, SECRET.to_string())];
    let (status, raw) = api
        .send(Method::GET, PATH_READ_INDEX, &plain, Vec::new())
        .await;
    assert_unauthorized(status, &raw, "read index with the plain secret");
    let change = codec::encode(&MembershipChange::SetVoters(vec![1]));
    let (status, raw) = api
        .send(Method::POST, PATH_MEMBERSHIP, &plain, change.clone())
        .await;
    assert_unauthorized(status, &raw, "membership with the plain secret");
    let wrong = [(
        AUTH_HEADER,
        wrong_key.sign(NODE, PATH_MEMBERSHIP, now, &change),
    )];
    let (status, raw) = api
        .send(Method::POST, PATH_MEMBERSHIP, &wrong, change)
        .await;
    assert_unauthorized(status, &raw, "membership with a wrong key");

    // Nothing was written.
    assert_eq!(api.digest().await, before);
    assert_eq!(api.audit_count().await, 0);

    // A valid signature is accepted and the proposal applied...
    let auth = raftlane_api::write::signing::cluster_auth(SECRET).expect("a secret");
    let headers = [signature(&auth, NODE, PATH_PROPOSE, &body)];
    let (status, raw) = api
        .send(Method::POST, PATH_PROPOSE, &headers, body.clone())
        .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&raw));
    let result: Result<(u64, Response), ProposeError> = codec::decode(&raw).expect("decode");
    let Ok((_, Ok(Outcome::Audit { seq: 0, .. }))) = result else {
        panic!("{result:?}");
    };
    assert_eq!(api.audit_count().await, 1);
    let after = api.digest().await;

    // ...and the same request captured and replayed is refused (its nonce is remembered within
    // the freshness window): nothing new.
    let (status, raw) = api.send(Method::POST, PATH_PROPOSE, &headers, body).await;
    assert_unauthorized(status, &raw, "a replayed signed proposal");
    assert_eq!(api.audit_count().await, 1);
    assert_eq!(api.digest().await["digest"], after["digest"]);
}

#[tokio::test]
async fn a_call_signed_for_another_node_is_refused() {
    let api = start().await;
    let before = api.digest().await;
    let auth = raftlane_api::write::signing::cluster_auth(SECRET).expect("a secret");
    let body = forged_audit("fwd-other-node/0");
    // Signed with the right secret, fresh, for this route and body: but for node 2.
    let headers = [signature(&auth, NODE + 1, PATH_PROPOSE, &body)];
    let (status, raw) = api
        .send(Method::POST, PATH_PROPOSE, &headers, body.clone())
        .await;
    // Refused without saying for which node it was signed, nor which node this is.
    assert_unauthorized(status, &raw, "a call signed for another node");
    assert_eq!(api.digest().await, before);
    // The same call signed for this node passes.
    let headers = [signature(&auth, NODE, PATH_PROPOSE, &body)];
    let (status, raw) = api.send(Method::POST, PATH_PROPOSE, &headers, body).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&raw));
}

#[tokio::test]
async fn a_signed_membership_change_reaches_the_backend() {
    let api = start().await;
    let auth = raftlane_api::write::signing::cluster_auth(SECRET).expect("a secret");
    let change = codec::encode(&MembershipChange::SetVoters(vec![1]));
    let headers = [signature(&auth, NODE, PATH_MEMBERSHIP, &change)];
    let (status, raw) = api
        .send(Method::POST, PATH_MEMBERSHIP, &headers, change)
        .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&raw));
    // A single in-memory node has no peers: the backend's refusal comes back as the answer.
    let result: Result<(), ProposeError> = codec::decode(&raw).expect("decode");
    assert!(
        matches!(result, Err(ProposeError::Refused(_))),
        "{result:?}"
    );
    // A garbage body under a valid signature is a 400 naming the body.
    let headers = [signature(&auth, NODE, PATH_MEMBERSHIP, b"garbage")];
    let (status, raw) = api
        .send(Method::POST, PATH_MEMBERSHIP, &headers, b"garbage".to_vec())
        .await;
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&raw));
    let body: Value = serde_json::from_slice(&raw).expect("JSON");
    assert_eq!(body["error"]["field"], "body");

    // Through the public route, the refusal is a 409 with a JSON error, not a 503.
    let (status, body) = raftlane_testkit::http::call(
        &api.http,
        &api.base,
        ADMIN,
        Method::POST,
        "/v1/cluster/membership",
        Some(serde_json::json!({ "voters": [1] })),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "membership_refused");
}

/// The refusals that used to name numbers: a call signed for another node (both ids), and
/// signatures beyond the clock-skew bound either way (the offset and the bound). Each answers
/// only its code; the node's log has the detail.
#[tokio::test]
async fn a_refusal_names_no_node_id_and_no_clock_offset() {
    let api = start().await;
    let before = api.digest().await;
    let auth = raftlane_api::write::signing::cluster_auth(SECRET).expect("a secret");
    let body = forged_audit("fwd-refusal-shape/0");
    let now = now_ms();
    let cases: Vec<(&str, String)> = vec![
        ("signed for node 7", auth.sign(7, PATH_PROPOSE, now, &body)),
        (
            "signed for node 1234567",
            auth.sign(1_234_567, PATH_PROPOSE, now, &body),
        ),
        (
            "stale signature, an hour behind",
            auth.sign(NODE, PATH_PROPOSE, now - 3_600_000, &body),
        ),
        (
            "stale signature, an hour ahead",
            auth.sign(NODE, PATH_PROPOSE, now + 3_600_000, &body),
        ),
        (
            "bad signature",
            ClusterAuth::new("wrong", 0).sign(NODE, PATH_PROPOSE, now, &body),
        ),
    ];
    for (what, signature) in cases {
        let (status, raw) = api
            .send(
                Method::POST,
                PATH_PROPOSE,
                &[(AUTH_HEADER, signature)],
                body.clone(),
            )
            .await;
        assert_unauthorized(status, &raw, what);
    }
    assert_eq!(api.digest().await, before);
}
