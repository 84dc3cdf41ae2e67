//! `GET /v1/lanes`: every lane with its depth, oldest row and holder, paged in key order.

use crate::harness::*;

/// The lanes of a page as `"stage:name"`, and its cursor.
fn page(r: &Resp) -> (Vec<String>, Option<String>) {
    ok(r, 200);
    let lanes = r.body["lanes"]
        .as_array()
        .expect("lanes")
        .iter()
        .map(|l| l["lane"].as_str().expect("lane").to_string())
        .collect();
    (lanes, r.body["next_cursor"].as_str().map(str::to_string))
}

#[tokio::test]
async fn lanes_are_listed_with_their_figures_a_page_at_a_time() {
    let api = start().await;
    let r = api.get("/v1/lanes").await;
    assert_eq!(page(&r), (Vec::new(), None), "a new cluster has no lanes");

    for (channel, n) in [("beta", 2), ("alpha", 3), ("gamma", 1)] {
        for i in 0..n {
            api.enqueue(channel, &format!("{channel}-{i}")).await;
        }
    }
    // Two of alpha's rows go on to the printer: one claimed under a lane lease, one waiting.
    let items = api.claim_ingress("alpha", 2).await;
    for (i, item) in items.iter().enumerate() {
        api.handoff_to(item, "printer", &format!("p{i}")).await;
    }
    let claim = api
        .post(
            "/v1/lanes/outbound/printer/claim",
            json!({ "owner": "printer-worker", "ttl_ms": LONG_TTL }),
        )
        .await;
    ok(&claim, 200);

    // Key order: stage (ingress, routed, outbound), then name, shorter names first.
    let r = api.get("/v1/lanes").await;
    let (all, next) = page(&r);
    assert_eq!(
        all,
        [
            "ingress:beta",
            "ingress:alpha",
            "ingress:gamma",
            "outbound:printer"
        ]
    );
    assert_eq!(next, None);
    let by_lane = |lane: &str| {
        r.body["lanes"]
            .as_array()
            .and_then(|l| l.iter().find(|x| x["lane"] == lane))
            .cloned()
            .unwrap_or_else(|| panic!("{lane} listed"))
    };
    let alpha = by_lane("ingress:alpha");
    assert_eq!(alpha["stage"], "ingress");
    assert_eq!(alpha["name"], "alpha");
    assert_eq!(alpha["depth"], 1, "two of three were claimed and handed on");
    assert!(alpha["oldest"].as_u64().is_some());
    assert!(alpha["oldest_age_ms"].as_u64().is_some());
    let printer = by_lane("outbound:printer");
    assert_eq!(printer["depth"], 1);
    assert_eq!(printer["inflight"], 1);
    assert_eq!(printer["holder"]["owner"], "printer-worker");
    assert!(printer["holder"]["expires_at"].as_u64().is_some());
    // The listing agrees with the one-lane read.
    let one = api.get("/v1/lanes/outbound/printer").await;
    ok(&one, 200);
    assert_eq!(one.body["depth"], printer["depth"]);
    assert_eq!(one.body["holder"], printer["holder"]);

    // Pages of two, each going on after the last one's cursor, together the whole list.
    let mut walked = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..4 {
        let path = match &cursor {
            Some(c) => format!("/v1/lanes?limit=2&cursor={c}"),
            None => "/v1/lanes?limit=2".to_string(),
        };
        let (lanes, next) = page(&api.get(&path).await);
        assert!(lanes.len() <= 2);
        walked.extend(lanes);
        cursor = next;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(walked, all);
    assert_eq!(cursor, None);

    // One stage only.
    let (outbound, _) = page(&api.get("/v1/lanes?stage=outbound").await);
    assert_eq!(outbound, ["outbound:printer"]);
    let (ingress, next) = page(&api.get("/v1/lanes?stage=ingress&limit=2").await);
    assert_eq!(ingress, ["ingress:beta", "ingress:alpha"]);
    let c = next.expect("a third ingress lane follows");
    let (rest, next) = page(
        &api.get(&format!("/v1/lanes?stage=ingress&cursor={c}"))
            .await,
    );
    assert_eq!(
        rest,
        ["ingress:gamma"],
        "the stage filter holds past the cursor"
    );
    assert_eq!(next, None);
}

#[tokio::test]
async fn a_bad_lane_query_names_its_field() {
    let api = start().await;
    let r = api.get("/v1/lanes?stage=outgoing").await;
    api_error(&r, 400, "invalid", Some("stage"));
    // A limit that is no number is refused; 0 and more than 1,000 are taken as 1 and 1,000
    // (api/src/page.rs, the rule of every listing).
    for limit in ["x", "-1"] {
        let r = api.get(&format!("/v1/lanes?limit={limit}")).await;
        api_error(&r, 400, "invalid", Some("limit"));
    }
    for (limit, most) in [("0", 1), ("1001", 1000)] {
        api.enqueue("lane-a", "x").await;
        api.enqueue("lane-b", "x").await;
        let r = api.get(&format!("/v1/lanes?limit={limit}")).await;
        ok(&r, 200);
        let lanes = r.body["lanes"].as_array().expect("lanes").len();
        assert!((1..=most).contains(&lanes), "limit={limit}: {lanes} lanes");
    }
    for cursor in ["printer", "outgoing:printer", "outbound:"] {
        let r = api.get(&format!("/v1/lanes?cursor={cursor}")).await;
        api_error(&r, 400, "invalid", Some("cursor"));
    }
}
