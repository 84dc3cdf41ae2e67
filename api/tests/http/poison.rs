//! A poison message cannot wedge a lane (docs/SPEC.md §5.2), over HTTP: a worker
//! that crashes on its row every time, the lane moving on after the default attempt limit and
//! `/metrics` counting it; retry policies refused when the config is written, naming the field;
//! one spelling of the multiplier (`multiplier_milli`) in the config and the `fail` body.

use crate::harness::*;

/// Far before the wall clock, so a wall-clock proposal would show.
const T: u64 = 5_000_000;

#[tokio::test]
async fn a_worker_that_crashes_every_time_cannot_wedge_its_lane() {
    let api = start_client_clock().await;
    let mut ids = Vec::new();
    for raw in ["poison", "next"] {
        let r = api
            .call_at(
                T,
                Method::POST,
                "/v1/channels/lab/messages",
                Some(json!({ "raw": raw })),
            )
            .await;
        ok(&r, 201);
        ids.push(r.body["message_id"].as_u64().expect("message_id"));
    }
    // The worker takes the head and crashes; its lease runs out; again, ten times.
    for attempt in 1..=10u64 {
        let r = api
            .call_at(
                T + attempt * 2_000,
                Method::POST,
                "/v1/lanes/ingress/lab/claim",
                Some(json!({ "owner": "w1", "ttl_ms": 1000 })),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["item"]["message_id"], ids[0], "{}", r.body);
        assert_eq!(r.body["item"]["attempts"], attempt, "{}", r.body);
    }
    // The eleventh claim finds the poison row's last lease expired: it dies, and the message
    // behind it is handed out.
    let r = api
        .call_at(
            T + 11 * 2_000,
            Method::POST,
            "/v1/lanes/ingress/lab/claim",
            Some(json!({ "owner": "w1", "ttl_ms": 1000 })),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["item"]["message_id"], ids[1], "{}", r.body);
    assert_eq!(r.body["item"]["attempts"], 1, "{}", r.body);

    let r = api
        .get(&format!("/v1/messages/{}?record_view=false", ids[0]))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["message"]["status"], "error", "{}", r.body);
    assert_eq!(
        event_kinds(&r.body).last().map(String::as_str),
        Some("dead")
    );
    let row = &r.body["rows"][0];
    assert_eq!(row["status"], "dead", "{}", r.body);
    assert_eq!(
        row["last_error"], "lease expired on attempt 10 of 10",
        "{}",
        r.body
    );

    let r = api.call(Method::GET, "/metrics", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    let text = r.text();
    assert!(
        text.contains("raftlane_rows_dead_total{cause=\"lease_expired\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn a_retry_policy_fail_would_refuse_is_refused_when_the_config_is_written() {
    let api = start().await;
    let before = api.digest().await;
    let policy = |max_attempts: u64, multiplier_milli: u64, backoff_ms: u64| {
        json!({ "destinations": { "x": { "retry": {
            "max_attempts": max_attempts, "backoff_ms": backoff_ms,
            "multiplier_milli": multiplier_milli, "max_backoff_ms": 60_000 } } } })
    };
    for (doc, field) in [
        (policy(0, 2000, 1000), "destinations.x.retry.max_attempts"),
        (policy(3, 0, 1000), "destinations.x.retry.multiplier_milli"),
        (
            policy(3, 500, 1000),
            "destinations.x.retry.multiplier_milli",
        ),
        (
            policy(3, 2000, 1_000_000_000_000_000),
            "destinations.x.retry.backoff_ms",
        ),
    ] {
        let r = api.put_config(Some("0"), &doc).await;
        api_error(&r, 400, "invalid", Some(field));
        nothing_proposed(&api, &before, field).await;
    }
    let r = api.get("/v1/config").await;
    ok(&r, 200);
    assert_eq!(r.body["version"], 0);
    // A sound one is stored as written.
    let r = api.put_config(Some("0"), &policy(3, 1500, 1000)).await;
    ok(&r, 200);
}

/// `fail` takes the config's spelling, `multiplier_milli`, and still the older `multiplier`;
/// both at once, or an out-of-range one, is a 400 before anything is proposed.
#[tokio::test]
async fn fail_spells_the_multiplier_like_the_config() {
    let api = start().await;
    api.enqueue("orders", "x").await;
    let item = api.claim_ingress("orders", 1).await.remove(0);
    let row = item["row_id"].as_u64().expect("row_id");
    let fence = item["fence"].clone();
    let before = api.digest().await;
    for (retry, field) in [
        (
            json!({ "backoff_ms": 10, "multiplier_milli": 999, "max_backoff_ms": 100 }),
            Some("retry.multiplier_milli"),
        ),
        (
            json!({ "backoff_ms": 10, "multiplier": 0.5, "max_backoff_ms": 100 }),
            Some("retry.multiplier_milli"),
        ),
        (
            json!({ "backoff_ms": 10, "multiplier_milli": 1500, "multiplier": 1.5, "max_backoff_ms": 100 }),
            None,
        ),
    ] {
        let r = api
            .post(
                &format!("/v1/rows/{row}/fail"),
                json!({ "fence": fence, "error": "boom", "retry": retry }),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{retry}: {}", r.body);
        if let Some(field) = field {
            api_error(&r, 400, "invalid", Some(field));
        }
        nothing_proposed(&api, &before, "bad retry").await;
    }
    let r = api
        .post(
            &format!("/v1/rows/{row}/fail"),
            json!({ "fence": fence, "error": "boom",
                    "retry": { "backoff_ms": 10, "multiplier_milli": 1500, "max_backoff_ms": 100 } }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["dead"], false, "{}", r.body);
}
