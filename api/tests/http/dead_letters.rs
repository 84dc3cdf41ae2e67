//! `GET /v1/dead-letters` and its count by stage: outbound's by default (messagefoundry's dead
//! letters), one other stage, or all of them.

use crate::harness::*;

/// The row ids a dead-letter list answered, and their stages.
fn listed(r: &Resp) -> Vec<(u64, String)> {
    ok(r, 200);
    r.body["dead_letters"]
        .as_array()
        .expect("dead_letters")
        .iter()
        .map(|d| {
            (
                d["id"].as_u64().expect("id"),
                d["stage"].as_str().expect("stage").to_string(),
            )
        })
        .collect()
}

fn count(r: &Resp) -> u64 {
    ok(r, 200);
    r.body["count"].as_u64().expect("count")
}

#[tokio::test]
async fn dead_letters_are_listed_and_counted_by_stage() {
    let api = start().await;
    api.enqueue("intake", "poison at ingress").await;
    api.enqueue("intake", "poison at the printer").await;
    let items = api.claim_ingress("intake", 2).await;
    assert_eq!(items.len(), 2);
    // The first dies at ingress, under its claim's fence.
    let r = api
        .post(
            &format!("/v1/rows/{}/dead", items[0]["row_id"]),
            json!({ "fence": items[0]["fence"], "error": "unparseable" }),
        )
        .await;
    ok(&r, 200);
    let ingress_row = items[0]["row_id"].as_u64().expect("row id");
    // The second goes on to the printer and dies there.
    api.handoff_to(&items[1], "printer", "p").await;
    let out = api
        .post(
            "/v1/claims",
            json!({ "stage": "outbound", "limit": 1, "owner": "printer-1", "ttl_ms": LONG_TTL }),
        )
        .await;
    ok(&out, 200);
    let out = &out.body["items"][0];
    let r = api
        .post(
            &format!("/v1/rows/{}/dead", out["row_id"]),
            json!({ "fence": out["fence"], "error": "printer on fire" }),
        )
        .await;
    ok(&r, 200);
    let outbound_row = out["row_id"].as_u64().expect("row id");

    let outbound = vec![(outbound_row, "outbound".to_string())];
    let ingress = vec![(ingress_row, "ingress".to_string())];
    assert_eq!(listed(&api.get("/v1/dead-letters").await), outbound);
    assert_eq!(
        listed(&api.get("/v1/dead-letters?stage=outbound").await),
        outbound
    );
    assert_eq!(
        listed(&api.get("/v1/dead-letters?stage=ingress").await),
        ingress
    );
    assert_eq!(
        listed(&api.get("/v1/dead-letters?stage=routed").await),
        Vec::new()
    );
    let all = listed(&api.get("/v1/dead-letters?stage=all").await);
    assert_eq!(
        all,
        [ingress.clone(), outbound.clone()].concat(),
        "row-id order"
    );
    let newest = listed(
        &api.get("/v1/dead-letters?stage=all&order=newest_failed")
            .await,
    );
    assert_eq!(newest, [outbound, ingress].concat(), "newest dead first");
    let filtered = listed(
        &api.get("/v1/dead-letters?stage=all&channel=intake&limit=1")
            .await,
    );
    assert_eq!(filtered.len(), 1);

    assert_eq!(count(&api.get("/v1/dead-letters/count").await), 1);
    assert_eq!(
        count(&api.get("/v1/dead-letters/count?stage=ingress").await),
        1
    );
    assert_eq!(count(&api.get("/v1/dead-letters/count?stage=all").await), 2);
    assert_eq!(
        count(
            &api.get("/v1/dead-letters/count?stage=all&channel=intake")
                .await
        ),
        2,
        "the filtered count walks every stage too"
    );

    for path in [
        "/v1/dead-letters?stage=sideways",
        "/v1/dead-letters/count?stage=sideways",
    ] {
        api_error(&api.get(path).await, 400, "invalid", Some("stage"));
    }
}
