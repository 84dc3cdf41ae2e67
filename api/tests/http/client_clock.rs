//! Client-clock test mode (`--test-client-clock`, docs/SPEC.md §2.1): a request's
//! `Raftlane-Client-Time-Ms` is its proposals' exact time (the envelope's `client_time`); without the mode the
//! header is refused before anything is proposed.

use crate::harness::*;

/// Far before the wall clock: a proposal stamped with the wall clock would show.
const T: u64 = 1_000_000;

#[tokio::test]
async fn the_header_sets_the_time_of_proposals_and_reads() {
    let api = start_client_clock().await;
    let r = api
        .call_at(
            T,
            Method::POST,
            "/v1/channels/lab/messages",
            Some(json!({ "raw": "m1" })),
        )
        .await;
    ok(&r, 201);
    let id = r.body["message_id"].as_u64().expect("message_id");
    let r = api
        .get(&format!("/v1/messages/{id}?body=true&record_view=false"))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["message"]["received_at"], T, "{}", r.body);

    // A FIFO claim at T+10 leases until T+10+ttl; another owner at T+500 finds the lane held
    // (with the wall clock the lease would long have expired).
    let r = api
        .call_at(
            T + 10,
            Method::POST,
            "/v1/lanes/ingress/lab/claim",
            Some(json!({ "owner": "w1", "ttl_ms": 1000 })),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["item"]["lease_expires_at"], T + 1010, "{}", r.body);
    let r = api
        .call_at(
            T + 500,
            Method::POST,
            "/v1/lanes/ingress/lab/claim",
            Some(json!({ "owner": "w2", "ttl_ms": 1000 })),
        )
        .await;
    ok(&r, 200);
    assert!(r.body["item"].is_null(), "{}", r.body);
    assert_eq!(r.body["holder"], "w1", "{}", r.body);
    assert_eq!(r.body["expires_at"], T + 1010, "{}", r.body);

    // A test's time is applied exactly, even before the state's clock (docs/SPEC.md §2.1):
    // messagefoundry's suite logs a user in "at 20 s" after creating it "at 1000 s".
    let r = api
        .call_at(
            T - 500,
            Method::POST,
            "/v1/channels/lab/messages",
            Some(json!({ "raw": "m2" })),
        )
        .await;
    ok(&r, 201);
    let id2 = r.body["message_id"].as_u64().expect("message_id");
    let r = api
        .get(&format!("/v1/messages/{id2}?body=true&record_view=false"))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["message"]["received_at"], T - 500, "{}", r.body);

    // The typed client sends it too.
    let at = api.admin.with_client_time(T + 2000);
    let e = at.enqueue("lab", "m3", None).await.expect("enqueue");
    let m = api.admin.message(e.message_id).await.expect("message");
    assert_eq!(m.message.meta.received_at, T + 2000);

    // In test mode too, the value must be a number.
    let r = api
        .send_raw(
            Method::GET,
            "/v1/messages",
            &[
                ("authorization", format!("Bearer {ADMIN}")),
                ("raftlane-client-time-ms", "soon".into()),
            ],
            Vec::new(),
        )
        .await;
    api_error(&r, 400, "invalid", Some("Raftlane-Client-Time-Ms"));
}

#[tokio::test]
async fn without_the_mode_the_header_is_refused() {
    let api = start().await;
    let before = api.digest().await;
    let r = api
        .call_at(
            T,
            Method::POST,
            "/v1/channels/lab/messages",
            Some(json!({ "raw": "m1" })),
        )
        .await;
    api_error(&r, 400, "invalid", Some("Raftlane-Client-Time-Ms"));
    assert_eq!(api.digest().await, before, "nothing was proposed");
    // Reads too.
    let r = api.call_at(T, Method::GET, "/v1/messages", None).await;
    api_error(&r, 400, "invalid", Some("Raftlane-Client-Time-Ms"));
    let e = api
        .admin
        .with_client_time(T)
        .enqueue("lab", "m1", None)
        .await
        .expect_err("refused");
    assert_eq!(
        (e.status(), e.field()),
        (Some(400), Some("Raftlane-Client-Time-Ms"))
    );
}
