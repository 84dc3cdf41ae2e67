//! The OpenAPI document against the router, probes and metrics, signed node-to-node calls, retention and stats.

use crate::harness::*;
use raftlane_statemachine::wire::command::AuditAuthor;
use raftlane_statemachine::wire::command::{EnqueueIngress, RecordAudit};

/// A plausible value for a path parameter.
fn fill(path: &str) -> String {
    path.split('/')
        .map(|seg| match seg {
            "{channel}" => "orders",
            "{id}" => "1",
            "{stage}" => "outbound",
            "{name}" => "lane-1",
            "{dest}" => "warehouse",
            "{action}" => "done",
            "{v}" => "0",
            "{namespace}" => "ns",
            "{key}" => "k",
            "{map}" => "roles",
            "{change}" => "disabled",
            "{token_hash}" => "ab12",
            "{owner}" => "node-a",
            "{node_id}" => "node-a",
            "{group}" => "mf",
            "{destination}" => "dest-a",
            s if s.starts_with('{') => panic!("no value for parameter {s} of {path}"),
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn openapi_lists_every_route_and_every_documented_route_is_mounted() {
    let api = start().await;
    let r = api.call(Method::GET, "/openapi.json", None, None).await;
    ok(&r, 200);
    let doc = &r.body;
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")));
    let paths = doc["paths"].as_object().expect("paths");

    let routes = api_routes();
    for route in &routes {
        let op = &doc["paths"][route.path][route.method];
        assert!(
            op.is_object(),
            "{} {} is not documented",
            route.method,
            route.path
        );
        assert_eq!(op["summary"], route.summary);
        assert_eq!(
            op.get("security").is_some(),
            route.auth,
            "{} {}",
            route.method,
            route.path
        );
    }
    let documented: usize = paths
        .values()
        .map(|p| p.as_object().map_or(0, |m| m.len()))
        .sum();
    assert_eq!(
        documented,
        routes.len(),
        "the document lists exactly the routes"
    );

    // Sanity of the probe below: the fallback is recognizable.
    let r = api.get("/v1/not-a-route").await;
    api_error(&r, 404, "not_found", None);
    assert_eq!(r.body["error"]["message"], "no such route");

    for (path, item) in paths {
        for method in item.as_object().expect("path item").keys() {
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let concrete = fill(path);
            let body = if m == Method::GET || m == Method::DELETE {
                None
            } else {
                Some(json!({}))
            };
            let r = api.call(m.clone(), &concrete, Some(ADMIN), body).await;
            let fallback =
                r.status == StatusCode::NOT_FOUND && r.body["error"]["message"] == "no such route";
            assert!(
                !fallback,
                "{m} {concrete} (documented as {path}) hit the router fallback"
            );
            assert_ne!(
                r.status,
                StatusCode::METHOD_NOT_ALLOWED,
                "{m} {concrete} is not mounted for {m}"
            );
        }
    }
}

#[tokio::test]
async fn probes_and_metrics() {
    let api = start().await;
    let r = api.call(Method::GET, "/healthz", None, None).await;
    ok(&r, 200);
    assert_eq!(r.body, json!({ "status": "ok" }));
    let r = api.call(Method::GET, "/readyz", None, None).await;
    ok(&r, 200);
    assert_eq!(r.body, json!({ "ready": true }));

    api.enqueue("orders", "x").await;
    let r = api.post("/v1/rows/999/done", json!({ "fence": 1 })).await;
    api_error(&r, 404, "not_found", None);

    let r = api.call(Method::GET, "/metrics", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.content_type().starts_with("text/plain"),
        "{}",
        r.content_type()
    );
    let text = r.text();
    assert!(
        text.contains("# TYPE raftlane_commands_total counter"),
        "{text}"
    );
    assert!(
        text.contains(
            "raftlane_commands_total{command=\"enqueue_ingress\",outcome=\"accepted\"} 1"
        ),
        "{text}"
    );
    assert!(
        text.contains("raftlane_commands_total{command=\"mark_done\",outcome=\"rejected\"} 1"),
        "{text}"
    );
    assert!(text.contains("raftlane_messages_total 1"), "{text}");
    assert!(
        text.contains("raftlane_rows{stage=\"ingress\",status=\"pending\"} 1"),
        "{text}"
    );
    assert!(text.contains("raftlane_is_leader 1"), "{text}");

    let r = api.get("/v1/cluster").await;
    ok(&r, 200);
    assert_eq!(r.body["leader_id"], 1);
    assert_eq!(r.body["node_id"], 1);
    assert_eq!(r.body["membership"][0]["voter"], true);
}

/// The headers of a node-to-node call to `path` with `body`, signed with the cluster secret for
/// the local backend's node (1).
fn signed(path: &str, body: &[u8]) -> Vec<(&'static str, String)> {
    let auth = raftlane_api::write::signing::cluster_auth(CLUSTER_SECRET).expect("a secret");
    vec![raftlane_api::write::signing::signature(
        &auth, 1, path, body,
    )]
}

#[tokio::test]
async fn internal_routes_need_the_cluster_secret() {
    let api = start().await;
    let before = api.digest().await;
    let envelope = Envelope::new(
        now_ms(),
        "intruder",
        Command::RecordAudit(RecordAudit {
            action: "forged".into(),
            channel: None,
            org: None,
            detail: None,
            author: AuditAuthor::Principal,
        }),
    );
    let body = codec::encode(&envelope);
    for headers in [
        vec![(LEGACY_SECRET_HEADER, "wrong".to_string())],
        vec![(LEGACY_SECRET_HEADER, String::new())],
        vec![],
        // A client token is not the cluster secret.
        vec![("authorization", format!("Bearer {ADMIN}"))],
    ] {
        let r = api
            .send_raw(Method::POST, "/internal/propose", &headers, body.clone())
            .await;
        api_error(&r, 401, "unauthorized", None);
        let batch = codec::encode(&vec![envelope.clone()]);
        let r = api
            .send_raw(Method::POST, "/internal/propose-batch", &headers, batch)
            .await;
        api_error(&r, 401, "unauthorized", None);
        let r = api
            .send_raw(Method::GET, "/internal/read-index", &headers, Vec::new())
            .await;
        api_error(&r, 401, "unauthorized", None);
    }
    nothing_proposed(&api, &before, "forged proposals").await;
    let r = api.get("/v1/audit/verify?org=default").await;
    assert_eq!(r.body["count"], 0);

    // Signed with the secret: a garbage body is a 400, a good one is applied.
    let r = api
        .send_raw(
            Method::POST,
            "/internal/propose",
            &signed("/internal/propose", b"garbage"),
            b"garbage".to_vec(),
        )
        .await;
    api_error(&r, 400, "invalid", Some("body"));
    nothing_proposed(&api, &before, "garbage proposal").await;
    let r = api
        .send_raw(
            Method::POST,
            "/internal/propose",
            &signed("/internal/propose", &body),
            body,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let result: Result<(u64, Response), ProposeError> = codec::decode(&r.raw).expect("decode");
    assert!(
        matches!(result, Ok((_, Ok(Outcome::Audit { seq: 0, .. })))),
        "{result:?}"
    );
    let r = api
        .send_raw(
            Method::GET,
            "/internal/read-index",
            &signed("/internal/read-index", b""),
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let index: Result<u64, ProposeError> = codec::decode(&r.raw).expect("decode");
    assert_eq!(index.expect("index"), before.0 + 1);
}

#[tokio::test]
async fn a_forwarded_maximal_write_fits_through_internal_propose() {
    let api = start().await;
    // The largest enqueue a client may send as JSON...
    let raw = "x".repeat(MAX_BODY - r#"{"raw":""}"#.len());
    let r = api
        .post("/v1/channels/orders/messages", json!({ "raw": raw }))
        .await;
    ok(&r, 201);
    // ...is what a follower forwards to the leader, wrapped in an envelope (a little larger).
    let command = Command::EnqueueIngress(EnqueueIngress {
        channel: "orders".into(),
        raw,
        fields: Default::default(),
        idempotency_key: Some("forwarded-1".into()),
    });
    let body = codec::encode(&Envelope::new(now_ms(), "admin", command));
    assert!(body.len() > MAX_BODY);
    let r = api
        .send_raw(
            Method::POST,
            "/internal/propose",
            &signed("/internal/propose", &body),
            body,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let result: Result<(u64, Response), ProposeError> = codec::decode(&r.raw).expect("decode");
    assert!(
        matches!(
            result,
            Ok((
                _,
                Ok(Outcome::Enqueued {
                    duplicate: false,
                    ..
                })
            ))
        ),
        "{result:?}"
    );
    // The internal route is still bounded.
    let huge = vec![0; 2 * MAX_BODY + (1 << 20) + 1];
    let r = api
        .send_raw(
            Method::POST,
            "/internal/propose",
            &signed("/internal/propose", &huge),
            huge,
        )
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
}

/// A follower's batch of forwarded writes: each envelope is proposed and answered on its own,
/// in order (one refused does not fail the others); an empty batch is refused whole.
#[tokio::test]
async fn internal_propose_batch_answers_each_envelope_in_order() {
    let api = start().await;
    let enqueue = |raw: &str| {
        Envelope::new(
            now_ms(),
            "admin",
            Command::EnqueueIngress(EnqueueIngress {
                channel: "orders".into(),
                raw: raw.into(),
                fields: Default::default(),
                idempotency_key: None,
            }),
        )
    };
    let refused = Envelope::new(
        now_ms(),
        "admin",
        Command::EnqueueIngress(EnqueueIngress {
            channel: String::new(),
            raw: "no channel".into(),
            fields: Default::default(),
            idempotency_key: None,
        }),
    );
    let body = codec::encode(&vec![enqueue("first"), refused, enqueue("second")]);
    let path = "/internal/propose-batch";
    let r = api
        .send_raw(Method::POST, path, &signed(path, &body), body)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    type Answer = Result<(u64, Response), ProposeError>;
    let answers: Result<Vec<Answer>, ProposeError> = codec::decode(&r.raw).expect("decode");
    let answers = answers.expect("the batch was taken");
    assert_eq!(answers.len(), 3, "{answers:?}");
    let id = |a: &Answer| match a {
        Ok((_, Ok(Outcome::Enqueued { message_id, .. }))) => message_id.0,
        other => panic!("not enqueued: {other:?}"),
    };
    assert!(
        matches!(answers[1], Ok((_, Err(_)))),
        "the empty channel is refused by the state machine: {:?}",
        answers[1]
    );
    assert!(id(&answers[0]) < id(&answers[2]), "{answers:?}");
    let r = api.get("/v1/messages?channel=orders").await;
    assert_eq!(ids_of(&r.body["messages"]).len(), 2, "{}", r.body);

    let before = api.digest().await;
    let empty = codec::encode(&Vec::<Envelope>::new());
    let r = api
        .send_raw(Method::POST, path, &signed(path, &empty), empty)
        .await;
    api_error(&r, 400, "invalid", Some("body"));
    nothing_proposed(&api, &before, "an empty batch").await;
}

/// `older_than_ms` of a purge is an age: a message seconds old survives an hour's purge and is
/// blanked by a purge of everything older than now.
#[tokio::test]
async fn retention_purge_takes_an_age() {
    let api = start().await;
    let id = api.enqueue("lab", "MSH|secret body").await;
    let item = api.claim_ingress("lab", 1).await.remove(0);
    let r = api
        .post(
            &format!("/v1/rows/{}/dead", item["row_id"]),
            json!({ "fence": item["fence"], "error": "poison" }),
        )
        .await;
    ok(&r, 200);
    tokio::time::sleep(Duration::from_millis(20)).await;

    let r = api
        .post(
            "/v1/retention/purge",
            json!({ "kind": "bodies", "older_than_ms": 3_600_000 }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["purged"], 0, "an hour's purge keeps a fresh message");
    let r = api
        .get(&format!("/v1/messages/{id}?body=true&record_view=false"))
        .await;
    assert_eq!(r.body["message"]["raw"], "MSH|secret body");

    let r = api
        .post(
            "/v1/retention/purge",
            json!({ "kind": "bodies", "older_than_ms": 0 }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["purged"], 1, "{}", r.text());
    let r = api
        .get(&format!("/v1/messages/{id}?body=true&record_view=false"))
        .await;
    assert_eq!(r.body["message"]["raw"], "");
    assert_eq!(r.body["message"]["purged"], true);

    let r = api
        .post(
            "/v1/retention/purge",
            json!({ "kind": "everything", "older_than_ms": 0 }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("kind"));
}

/// `/v1/stats` counts every channel, so a channel-scoped token may not read it.
#[tokio::test]
async fn stats_are_refused_to_a_channel_scoped_token() {
    let api = start().await;
    api.enqueue("adt", "not yours").await;
    let scoped = api.token("lab-reader", "viewer", Some(&["lab"])).await;
    let viewer = api.token("reader", "viewer", None).await;
    let r = api.get_as(&scoped, "/v1/stats").await;
    api_error(&r, 403, "forbidden", None);
    let r = api.get_as(&viewer, "/v1/stats").await;
    ok(&r, 200);
    assert_eq!(r.body["messages"], 1);
}
