//! A claimed row's creation time (docs/SPEC.md §4.2a): from log format 4 every claim route
//! answers each row's `created_at`, the time of the command that created the row; an entry of an
//! older format answers none, and the member is left out of the JSON.

use crate::harness::*;

/// Far before the wall clock, so a time stamped from the wall clock would show.
const T: u64 = 2_000_000;

#[tokio::test]
async fn every_claim_route_answers_the_rows_creation_time_from_format_4() {
    let api = start_client_clock().await;

    // The harness holds the log format: format 1 answers no creation time.
    api.enqueue_at(Some(T), "old", "m0").await;
    let old = api.claim_ingress_at(Some(T + 1), "old", 10).await;
    assert_eq!(old.len(), 1);
    assert!(old[0].get("created_at").is_none(), "{}", old[0]);

    let r = api
        .post("/v1/cluster/log-format", json!({ "format": 4 }))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["log_format"], 4, "{}", r.body);

    // An unordered claim: the message's receipt, not the claim's time.
    api.enqueue_at(Some(T + 10), "lab", "m1").await;
    let items = api.claim_ingress_at(Some(T + 20), "lab", 10).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["created_at"], T + 10, "{}", items[0]);
    api.handoff_at(Some(T + 30), &items[0], "printer", "p")
        .await;

    // A FIFO claim: the outbound row was created by the handoff.
    let r = api
        .call_at(
            T + 40,
            Method::POST,
            "/v1/lanes/outbound/printer/claim",
            Some(json!({ "owner": "w", "ttl_ms": LONG_TTL })),
        )
        .await;
    ok(&r, 200);
    let head = r.body["item"].clone();
    assert_eq!(head["created_at"], T + 30, "{}", r.body);

    // A second row in the lane, then a completion that claims it in the same write.
    api.enqueue_at(Some(T + 50), "lab", "m2").await;
    let items = api.claim_ingress_at(Some(T + 55), "lab", 10).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["created_at"], T + 50, "{}", items[0]);
    api.handoff_at(Some(T + 60), &items[0], "printer", "p")
        .await;
    let r = api
        .call_at(
            T + 70,
            Method::POST,
            &format!("/v1/rows/{}/done", head["row_id"]),
            Some(json!({ "fence": head["fence"],
                         "claim_next": { "owner": "w", "ttl_ms": LONG_TTL } })),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["next"]["item"]["created_at"], T + 60, "{}", r.body);

    // The typed client reads it too; a row claimed again keeps its time.
    let r = api
        .call_at(
            T + 80,
            Method::POST,
            &format!("/v1/rows/{}/fail", r.body["next"]["item"]["row_id"]),
            Some(
                json!({ "fence": r.body["next"]["item"]["fence"], "error": "down",
                         "retry": { "backoff_ms": 1, "multiplier_milli": 1000, "max_backoff_ms": 1,
                                    "max_attempts": -1 } }),
            ),
        )
        .await;
    ok(&r, 200);
    let again = api
        .call_at(
            T + 10_000,
            Method::POST,
            "/v1/lanes/outbound/printer/claim",
            Some(json!({ "owner": "w", "ttl_ms": LONG_TTL })),
        )
        .await;
    ok(&again, 200);
    let row: ClaimedRow =
        serde_json::from_value(again.body["item"].clone()).expect("a claimed row");
    assert_eq!(row.created_at, Some(T + 60), "{}", again.body);
}
