//! The enqueue and audit shapes a messagefoundry store needs (docs/SPEC.md §14): a message its
//! producer routed already, a message recorded as filtered or in error, an audit row naming the
//! engine's own user as its actor; and the combinations that are refused without a write.

use crate::harness::*;

#[tokio::test]
async fn enqueue_with_deliveries_routes_at_once() {
    let api = start().await;
    let r = api
        .post(
            "/v1/channels/ib/messages",
            json!({ "raw": "MSG", "control_id": "c1", "deliveries": [
                { "destination": "ob1", "payload": "p1" },
                { "destination": "ob2", "payload": "p2" } ] }),
        )
        .await;
    ok(&r, 201);
    let mid = r.body["message_id"].as_u64().expect("message_id");
    let view = api
        .get(&format!("/v1/messages/{mid}?body=true&record_view=false"))
        .await;
    ok(&view, 200);
    assert_eq!(view.body["message"]["status"], "routed");
    assert_eq!(view.body["message"]["control_id"], "c1");
    let rows = view.body["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    assert!(rows
        .iter()
        .all(|r| r["stage"] == "outbound" && r["status"] == "pending"));

    // No delivery: the message is unrouted and has no row.
    let r = api
        .post(
            "/v1/channels/ib/messages",
            json!({ "raw": "MSG", "deliveries": [] }),
        )
        .await;
    ok(&r, 201);
    let mid = r.body["message_id"].as_u64().expect("message_id");
    let view = api
        .get(&format!("/v1/messages/{mid}?body=true&record_view=false"))
        .await;
    assert_eq!(view.body["message"]["status"], "unrouted");
    assert_eq!(view.body["rows"].as_array().map(Vec::len), Some(0));
}

#[tokio::test]
async fn enqueue_with_status_records_on_receipt() {
    let api = start().await;
    let r = api
        .post(
            "/v1/channels/ib/messages",
            json!({ "raw": "MSG", "status": "error", "error": "bad parse" }),
        )
        .await;
    ok(&r, 201);
    let mid = r.body["message_id"].as_u64().expect("message_id");
    let view = api
        .get(&format!("/v1/messages/{mid}?body=true&record_view=false"))
        .await;
    assert_eq!(view.body["message"]["status"], "error");
    assert_eq!(view.body["message"]["error"], "bad parse");
    assert_eq!(view.body["rows"].as_array().map(Vec::len), Some(0));

    let r = api
        .post(
            "/v1/channels/ib/messages",
            json!({ "raw": "MSG", "status": "filtered" }),
        )
        .await;
    ok(&r, 201);
    let mid = r.body["message_id"].as_u64().expect("message_id");
    let view = api
        .get(&format!("/v1/messages/{mid}?body=true&record_view=false"))
        .await;
    assert_eq!(view.body["message"]["status"], "filtered");
}

#[tokio::test]
async fn enqueue_shapes_that_exclude_each_other_are_refused() {
    let api = start().await;
    let before = api.digest().await;
    let r = api
        .post(
            "/v1/channels/ib/messages",
            json!({ "raw": "M", "status": "filtered", "deliveries": [] }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("status"));
    let r = api
        .post(
            "/v1/channels/ib/messages",
            json!({ "raw": "M", "error": "x" }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("error"));
    let r = api
        .post(
            "/v1/channels/ib/messages",
            json!({ "raw": "M", "status": "routed" }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("status"));
    nothing_proposed(&api, &before, "refused enqueue shapes").await;
}

#[tokio::test]
async fn audit_row_names_the_given_actor() {
    let api = start().await;
    let r = api
        .post(
            "/v1/audit",
            json!({ "action": "auth.login_success", "org": "mf", "actor": "alice", "detail": "1" }),
        )
        .await;
    ok(&r, 200);
    let r = api
        .post("/v1/audit", json!({ "action": "export", "org": "mf" }))
        .await;
    ok(&r, 200);
    let list = api.get("/v1/audit?org=mf").await;
    ok(&list, 200);
    let rows = list.body["rows"].as_array().expect("rows");
    assert_eq!(rows[0]["actor"], "alice");
    assert_ne!(rows[1]["actor"], "alice");
    let verify = api.get("/v1/audit/verify?org=mf").await;
    ok(&verify, 200);
    assert_eq!(verify.body["ok"], true);

    let before = api.digest().await;
    let r = api
        .post("/v1/audit", json!({ "action": "x", "actor": "" }))
        .await;
    api_error(&r, 400, "invalid", Some("actor"));
    nothing_proposed(&api, &before, "empty actor").await;
}
