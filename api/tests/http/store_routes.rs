//! The routes a messagefoundry store reads and recovers through (docs/SPEC.md §14): one work
//! row, FIFO claims with the row owner apart from the lane owner or without a lane lease,
//! reclaim / reset / recover, the dead-letter sweeps, counts and the newest-dead listing, a
//! re-ingested child found by its caller's key, the state and reference listings, purges by
//! cutoff, audit search, `viewed`, and the dashboard's figures. Time is driven with the
//! client clock (`--test-client-clock`), so leases expire when a test says.

use crate::harness::*;

/// Far before the wall clock.
const T: u64 = 1_000_000;

/// Enqueue a routed message at `at` with one outbound row per destination; its id.
async fn routed(api: &Api, at: u64, channel: &str, destinations: &[&str]) -> u64 {
    let deliveries: Vec<Value> = destinations
        .iter()
        .map(|d| json!({ "destination": d, "payload": format!("to {d}") }))
        .collect();
    let r = api
        .call_at(
            at,
            Method::POST,
            &format!("/v1/channels/{channel}/messages"),
            Some(json!({ "raw": "MSG", "control_id": format!("c{at}"), "deliveries": deliveries })),
        )
        .await;
    ok(&r, 201);
    r.body["message_id"].as_u64().expect("message_id")
}

/// `POST /v1/claims` at `at` for `owner`; the claimed items.
async fn claim_ready(api: &Api, at: u64, stage: &str, owner: &str, ttl_ms: u64) -> Vec<Value> {
    let r = api
        .call_at(
            at,
            Method::POST,
            "/v1/claims",
            Some(json!({ "stage": stage, "limit": 10, "owner": owner, "ttl_ms": ttl_ms })),
        )
        .await;
    ok(&r, 200);
    r.body["items"].as_array().expect("items").clone()
}

fn row_id(item: &Value) -> u64 {
    item["row_id"].as_u64().expect("row_id")
}

async fn row(api: &Api, id: u64) -> Value {
    let r = api.get(&format!("/v1/rows/{id}")).await;
    ok(&r, 200);
    r.body["row"].clone()
}

#[tokio::test]
async fn a_row_reads_as_it_is_now() {
    let api = start_client_clock().await;
    routed(&api, T, "ib", &["ob1"]).await;
    let items = claim_ready(&api, T + 10, "outbound", "w1", 1000).await;
    let id = row_id(&items[0]);
    let r = row(&api, id).await;
    assert_eq!(r["status"], "inflight");
    assert_eq!(r["payload"], "to ob1");
    assert_eq!(r["claim"]["owner"], "w1");
    assert_eq!(r["claim"]["lease_expires_at"], T + 1010);

    let r = api.get("/v1/rows/999").await;
    api_error(&r, 404, "not_found", None);
    let r = api.get("/v1/rows/abc").await;
    api_error(&r, 400, "invalid", Some("id"));
}

#[tokio::test]
async fn fifo_claims_name_the_row_owner_apart_or_take_no_lane_lease() {
    let api = start_client_clock().await;
    routed(&api, T, "ib", &["ob1"]).await;
    routed(&api, T + 1, "ib", &["ob2"]).await;

    // The node holds the lane, the process the row.
    let r = api
        .call_at(
            T + 10,
            Method::POST,
            "/v1/lanes/outbound/ob1/claim",
            Some(json!({ "owner": "node-a", "row_owner": "node-a:7", "ttl_ms": 1000 })),
        )
        .await;
    ok(&r, 200);
    let id = r.body["item"]["row_id"].as_u64().expect("row_id");
    assert_eq!(row(&api, id).await["claim"]["owner"], "node-a:7");
    let lane = api.get("/v1/lanes/outbound/ob1").await;
    assert_eq!(lane.body["holder"]["owner"], "node-a", "{}", lane.body);

    // No lane lease: the row is claimed, the lane stays unheld.
    let r = api
        .call_at(
            T + 20,
            Method::POST,
            "/v1/lanes/outbound/ob2/claim",
            Some(json!({ "owner": "solo", "lane_lease": false, "ttl_ms": 1000 })),
        )
        .await;
    ok(&r, 200);
    let id = r.body["item"]["row_id"].as_u64().expect("row_id");
    assert_eq!(row(&api, id).await["claim"]["owner"], "solo");
    let lane = api.get("/v1/lanes/outbound/ob2").await;
    assert!(lane.body["holder"].is_null(), "{}", lane.body);

    let before = api.digest().await;
    let r = api
        .post(
            "/v1/lanes/outbound/ob2/claim",
            json!({ "owner": "a", "row_owner": "", "ttl_ms": 1000 }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("row_owner"));
    nothing_proposed(&api, &before, "empty row_owner").await;
}

#[tokio::test]
async fn reclaim_takes_back_only_expired_leases_and_reset_takes_every_one() {
    let api = start_client_clock().await;
    routed(&api, T, "ib", &["ob1"]).await;
    routed(&api, T, "ib", &["ob2"]).await;
    let short = claim_ready(&api, T + 10, "outbound", "w1", 100).await;
    assert_eq!(short.len(), 2);

    // Nothing expired yet.
    let r = api
        .call_at(T + 50, Method::POST, "/v1/leases/reclaim", Some(json!({})))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["reclaimed"], 0);
    // A stage without inflight rows reclaims nothing, even once the leases are gone.
    let r = api
        .call_at(
            T + 500,
            Method::POST,
            "/v1/leases/reclaim",
            Some(json!({ "stage": "ingress" })),
        )
        .await;
    assert_eq!(r.body["reclaimed"], 0);
    let r = api
        .call_at(
            T + 500,
            Method::POST,
            "/v1/leases/reclaim",
            Some(json!({ "stage": "outbound" })),
        )
        .await;
    assert_eq!(r.body["reclaimed"], 2);
    assert_eq!(row(&api, row_id(&short[0])).await["status"], "pending");

    // Reset ignores live leases.
    let live = claim_ready(&api, T + 600, "outbound", "w2", 60_000).await;
    assert_eq!(live.len(), 2);
    let r = api
        .call_at(T + 700, Method::POST, "/v1/leases/reset", None)
        .await;
    ok(&r, 200);
    assert_eq!(r.body["reset"], 2);
    let back = row(&api, row_id(&live[0])).await;
    assert_eq!(back["status"], "pending");
    assert!(back["claim"].is_null());

    let before = api.digest().await;
    let r = api
        .post("/v1/leases/reset", json!({ "stage": "sideways" }))
        .await;
    api_error(&r, 400, "invalid", Some("stage"));
    nothing_proposed(&api, &before, "unknown stage").await;
}

#[tokio::test]
async fn recover_takes_back_other_owners_rows_and_keeps_the_callers() {
    let api = start_client_clock().await;
    routed(&api, T, "ib", &["ob1"]).await;
    let theirs = claim_ready(&api, T + 10, "outbound", "old-leader", 60_000).await;
    routed(&api, T + 20, "ib", &["ob2"]).await;
    let mine = claim_ready(&api, T + 30, "outbound", "new-leader", 60_000).await;
    let r = api
        .call_at(
            T + 40,
            Method::POST,
            "/v1/leases/recover",
            Some(json!({ "owner": "new-leader", "lane_owner": "node-b" })),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["recovered"], 1);
    assert_eq!(row(&api, row_id(&theirs[0])).await["status"], "pending");
    assert_eq!(row(&api, row_id(&mine[0])).await["status"], "inflight");

    let r = api.post("/v1/leases/recover", json!({})).await;
    api_error(&r, 400, "invalid", Some("owner"));
}

#[tokio::test]
async fn sweeps_dead_letter_what_left_the_registry() {
    let api = start_client_clock().await;
    let kept = routed(&api, T, "ib", &["ob1"]).await;
    let gone = routed(&api, T + 1, "ib", &["retired"]).await;
    let r = api
        .call_at(
            T + 10,
            Method::POST,
            "/v1/dead-letters/sweep",
            Some(json!({ "stage": "outbound", "keep": ["ob1"] })),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["dead"], 1);
    let view = api
        .get(&format!("/v1/messages/{gone}?body=true&record_view=false"))
        .await;
    assert_eq!(view.body["rows"][0]["status"], "dead");
    assert_eq!(view.body["message"]["status"], "error", "{}", view.body);
    let view = api
        .get(&format!("/v1/messages/{kept}?body=true&record_view=false"))
        .await;
    assert_eq!(view.body["rows"][0]["status"], "pending");

    let before = api.digest().await;
    let r = api
        .post(
            "/v1/dead-letters/sweep",
            json!({ "stage": "ingress", "keep": [] }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("stage"));
    nothing_proposed(&api, &before, "sweep of a stage without a registry").await;
}

#[tokio::test]
async fn counts_and_the_newest_dead_first() {
    let api = start_client_clock().await;
    routed(&api, T, "ib", &["ob1"]).await;
    routed(&api, T + 1, "ib2", &["ob2"]).await;
    routed(&api, T + 2, "ib2", &["ob2"]).await;
    let r = api.get("/v1/messages/count").await;
    ok(&r, 200);
    assert_eq!(r.body["count"], 3);
    let r = api.get("/v1/messages/count?channel=ib2").await;
    assert_eq!(r.body["count"], 2);
    let r = api
        .get("/v1/messages/count?allowed_channels=ib,other")
        .await;
    assert_eq!(r.body["count"], 1);
    let r = api.get("/v1/messages/count?status=sideways").await;
    api_error(&r, 400, "invalid", Some("status"));

    // ob1's row dies at T+100, then one ob2 row at T+200.
    let items = claim_ready(&api, T + 50, "outbound", "w", 60_000).await;
    let by_dest = |d: &str| {
        items
            .iter()
            .find(|i| i["destination_name"] == d)
            .map(|i| (row_id(i), i["fence"].as_u64().expect("fence")))
            .expect("claimed")
    };
    for (dest, at) in [("ob1", T + 100), ("ob2", T + 200)] {
        let (id, fence) = by_dest(dest);
        let r = api
            .call_at(
                at,
                Method::POST,
                &format!("/v1/rows/{id}/dead"),
                Some(json!({ "fence": fence, "error": "boom" })),
            )
            .await;
        ok(&r, 200);
    }
    let r = api.get("/v1/dead-letters/count").await;
    assert_eq!(r.body["count"], 2);
    let r = api.get("/v1/dead-letters/count?destination=ob1").await;
    assert_eq!(r.body["count"], 1);
    let r = api.get("/v1/dead-letters?order=newest_failed").await;
    ok(&r, 200);
    let dead = r.body["dead_letters"].as_array().expect("dead_letters");
    assert_eq!(dead[0]["destination_name"], "ob2");
    assert_eq!(dead[0]["control_id"], format!("c{}", T + 1));
    assert_eq!(dead[0]["received_at"], T + 1);
    assert_eq!(dead[1]["destination_name"], "ob1");
    let r = api
        .get("/v1/dead-letters?order=newest_failed&offset=1")
        .await;
    assert_eq!(r.body["dead_letters"][0]["destination_name"], "ob1");
    let r = api.get("/v1/dead-letters").await;
    assert_eq!(r.body["dead_letters"][0]["destination_name"], "ob1");
    let r = api.get("/v1/dead-letters?order=sideways").await;
    api_error(&r, 400, "invalid", Some("order"));
}

#[tokio::test]
async fn a_reingested_child_is_found_by_its_callers_key() {
    let api = start_client_clock().await;
    let origin = routed(&api, T, "ib", &["ob1"]).await;
    let items = claim_ready(&api, T + 10, "outbound", "w", 60_000).await;
    let (id, fence) = (row_id(&items[0]), items[0]["fence"].clone());
    let r = api
        .call_at(
            T + 20,
            Method::POST,
            &format!("/v1/rows/{id}/response"),
            Some(
                json!({ "fence": fence, "body": "ACK", "outcome": "accepted",
                         "reingress_to": "loop" }),
            ),
        )
        .await;
    ok(&r, 200);
    let r = api
        .call_at(
            T + 30,
            Method::POST,
            "/v1/lanes/response/loop/claim",
            Some(json!({ "owner": "w", "ttl_ms": 60_000 })),
        )
        .await;
    ok(&r, 200);
    let (rid, rfence) = (
        r.body["item"]["row_id"].as_u64().expect("row_id"),
        r.body["item"]["fence"].clone(),
    );
    // Describing the child needs its key.
    let before = api.digest().await;
    let r = api
        .post(
            &format!("/v1/rows/{rid}/reingress"),
            json!({ "fence": rfence, "loopback_channel": "loop", "summary": "s" }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("summary"));
    nothing_proposed(&api, &before, "child fields without a key").await;

    let key = "0123456789abcdef0123456789abcdef";
    let r = api
        .call_at(
            T + 40,
            Method::POST,
            &format!("/v1/rows/{rid}/reingress"),
            Some(
                json!({ "fence": rfence, "loopback_channel": "loop", "child_key": key,
                         "control_id": "R1", "message_type": "RSP^K11" }),
            ),
        )
        .await;
    ok(&r, 200);
    let child = api
        .get(&format!("/v1/messages/{key}?body=true&record_view=false"))
        .await;
    ok(&child, 200);
    assert_eq!(child.body["message"]["control_id"], "R1");
    assert_eq!(child.body["message"]["message_type"], "RSP^K11");
    assert_eq!(child.body["message"]["channel_id"], "loop");
    assert_ne!(child.body["message"]["id"], origin);
    let r = api
        .get("/v1/messages/ffffffffffffffffffffffffffffffff")
        .await;
    api_error(&r, 404, "not_found", None);
}

/// Ingress → route → transform on channel `ib` at `at`, writing `ns/key = value`.
async fn transform_writing(api: &Api, at: u64, ns: &str, key: &str, value: Value) {
    let r = api
        .call_at(
            at,
            Method::POST,
            "/v1/channels/ib/messages",
            Some(json!({ "raw": "M" })),
        )
        .await;
    ok(&r, 201);
    let claim = |stage: &'static str| {
        api.call_at(
            at,
            Method::POST,
            if stage == "ingress" {
                "/v1/lanes/ingress/ib/claim"
            } else {
                "/v1/lanes/routed/ib/claim"
            },
            Some(json!({ "owner": "w", "ttl_ms": 60_000 })),
        )
    };
    let r = claim("ingress").await;
    let (id, fence) = (
        r.body["item"]["row_id"].clone(),
        r.body["item"]["fence"].clone(),
    );
    let r = api
        .call_at(
            at,
            Method::POST,
            &format!("/v1/rows/{id}/route"),
            Some(json!({ "fence": fence, "handlers": [{ "handler": "h", "payload": "p" }] })),
        )
        .await;
    ok(&r, 200);
    let r = claim("routed").await;
    let (id, fence) = (
        r.body["item"]["row_id"].clone(),
        r.body["item"]["fence"].clone(),
    );
    let r = api
        .call_at(
            at,
            Method::POST,
            &format!("/v1/rows/{id}/transform"),
            Some(json!({ "fence": fence, "deliveries": [],
                         "state_ops": [{ "namespace": ns, "key": key, "value": value }] })),
        )
        .await;
    ok(&r, 200);
}

#[tokio::test]
async fn state_lists_its_namespaces_and_entries_and_a_purge_by_cutoff_moves_them() {
    let api = start_client_clock().await;
    transform_writing(&api, T, "ns", "mrn", json!({ "anon": "A1" })).await;
    let r = api.get("/v1/state").await;
    ok(&r, 200);
    assert_eq!(r.body["namespaces"][0]["namespace"], "ns");
    let v1 = r.body["namespaces"][0]["version"]
        .as_u64()
        .expect("version");
    let r = api.get("/v1/state/ns?entries=true").await;
    ok(&r, 200);
    assert_eq!(r.body["version"], v1);
    assert_eq!(r.body["entries"][0]["key"], "mrn");
    assert_eq!(r.body["entries"][0]["value"], json!({ "anon": "A1" }));
    assert_eq!(r.body["entries"][0]["set_at"], T);
    let r = api.get("/v1/state/ns").await;
    assert!(r.body.get("entries").is_none(), "{}", r.body);

    // A cutoff, not an age: everything set before T+100 goes, and the version moves.
    let r = api
        .call_at(
            T + 100,
            Method::POST,
            "/v1/retention/purge",
            Some(json!({ "kind": "state", "older_than": T + 100 })),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["purged"], 1);
    let r = api.get("/v1/state/ns?entries=true").await;
    assert!(r.body["version"].as_u64().expect("version") > v1);
    assert_eq!(r.body["entries"], json!([]));

    let before = api.digest().await;
    for body in [
        json!({ "kind": "state" }),
        json!({ "kind": "state", "older_than": 1, "older_than_ms": 1 }),
    ] {
        let r = api.post("/v1/retention/purge", body).await;
        api_error(&r, 400, "invalid", Some("older_than_ms"));
    }
    nothing_proposed(&api, &before, "purge without exactly one cutoff").await;
}

/// `PUT /v1/reference/{name}` with one row.
async fn put(api: &Api, name: &str, version: Value) -> Resp {
    let path = format!("/v1/reference/{name}");
    let body = json!({ "version": version, "rows": { "P1": "{\"npi\":\"111\"}" } });
    api.call(Method::PUT, &path, Some(ADMIN), Some(body)).await
}

#[tokio::test]
async fn reference_sets_list_with_their_text_versions() {
    let api = start().await;
    ok(&put(&api, "providers", json!("v1")).await, 200);
    ok(&put(&api, "codes", json!(7)).await, 200);
    let r = api.get("/v1/reference").await;
    ok(&r, 200);
    let sets = r.body["sets"].as_array().expect("sets");
    assert_eq!(sets.len(), 2);
    assert_eq!(sets[0]["name"], "codes");
    assert_eq!(sets[0]["version"], 7);
    assert!(sets[0].get("label").is_none());
    assert_eq!(sets[1]["name"], "providers");
    assert_eq!(sets[1]["label"], "v1");
    assert_eq!(sets[1]["row_count"], 1);
    let v = sets[1]["version"].as_u64().expect("version");

    // The same label again still moves the number, so a follower reloads.
    ok(&put(&api, "providers", json!("v1")).await, 200);
    let r = api.get("/v1/reference/providers").await;
    assert_eq!(r.body["label"], "v1");
    assert_eq!(r.body["version"], v + 1);
    assert_eq!(r.body["rows"]["P1"], "{\"npi\":\"111\"}");

    let r = put(&api, "providers", json!("")).await;
    api_error(&r, 400, "invalid", Some("version"));
}

#[tokio::test]
async fn audit_search_finds_an_actors_rows_newest_first() {
    let api = start().await;
    for (action, actor) in [
        ("auth.login_success", "alice"),
        ("auth.login_failure", "bob"),
        ("message.export", "alice"),
        ("auth.logout", "alice"),
    ] {
        let r = api
            .post(
                "/v1/audit",
                json!({ "action": action, "org": "mf", "actor": actor }),
            )
            .await;
        ok(&r, 200);
    }
    let r = api
        .get("/v1/audit/search?org=mf&actor=alice&action_prefix=auth.")
        .await;
    ok(&r, 200);
    let actions: Vec<&str> = r.body["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|row| row["action"].as_str())
        .collect();
    assert_eq!(actions, ["auth.logout", "auth.login_success"]);
    let r = api.get("/v1/audit/search?org=mf&actor=alice&limit=1").await;
    assert_eq!(r.body["rows"].as_array().map(Vec::len), Some(1));
    let r = api.get("/v1/audit/search?org=mf").await;
    api_error(&r, 400, "invalid", Some("actor"));
}

#[tokio::test]
async fn viewed_appends_an_event_and_nothing_else() {
    let api = start().await;
    let r = api
        .post("/v1/channels/ib/messages", json!({ "raw": "M" }))
        .await;
    let id = r.body["message_id"].as_u64().expect("message_id");
    let r = api
        .post(
            &format!("/v1/messages/{id}/viewed"),
            json!({ "actor": "alice" }),
        )
        .await;
    ok(&r, 200);
    let view = api
        .get(&format!("/v1/messages/{id}?body=true&record_view=false"))
        .await;
    let last = view.body["events"]
        .as_array()
        .and_then(|e| e.last().cloned())
        .expect("an event");
    assert_eq!(last["event"], "viewed");
    // The person named, beside the principal that recorded the view (docs/SPEC.md §9.8).
    assert_eq!(last["detail"], "alice (via admin)");
    assert_eq!(view.body["message"]["status"], "received");
    // The list shows each message's newest event.
    let list = api.get("/v1/messages").await;
    ok(&list, 200);
    assert_eq!(list.body["messages"][0]["id"], id);
    assert_eq!(list.body["messages"][0]["last_event"], "viewed");
    let r = api.post("/v1/messages/99/viewed", json!({})).await;
    api_error(&r, 404, "not_found", None);
}

#[tokio::test]
async fn dashboard_figures_count_traffic_and_state() {
    let api = start_client_clock().await;
    routed(&api, T, "ib", &["ob1", "ob2"]).await;
    routed(&api, T + 10, "ib", &["ob1"]).await;
    let items = claim_ready(&api, T + 20, "outbound", "w", 60_000).await;
    let done = items
        .iter()
        .find(|i| i["destination_name"] == "ob2")
        .expect("ob2 row");
    let r = api
        .call_at(
            T + 30,
            Method::POST,
            &format!("/v1/rows/{}/done", row_id(done)),
            Some(json!({ "fence": done["fence"] })),
        )
        .await;
    ok(&r, 200);

    let r = api
        .call_at(
            T + 40,
            Method::GET,
            &format!("/v1/metrics/connections?since={}&rate_window_ms=20", T + 5),
            None,
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["inbound"][0]["channel"], "ib");
    assert_eq!(r.body["inbound"][0]["read"], 1, "one message since T+5");
    assert_eq!(r.body["inbound"][0]["last_at"], T + 10);
    let dests = r.body["destinations"].as_array().expect("destinations");
    assert_eq!(dests[0]["destination"], "ob1");
    assert_eq!(dests[0]["queue_depth"], 2);
    assert_eq!(dests[1]["destination"], "ob2");
    assert_eq!(dests[1]["written"], 1);
    assert_eq!(dests[1]["recent_done"], 1);
    assert_eq!(dests[1]["last_done_at"], T + 30);

    let r = api.get("/v1/stats/storage").await;
    ok(&r, 200);
    assert_eq!(r.body["messages"], 2);
    assert!(
        r.body["events"].as_u64().expect("events") >= 3,
        "{}",
        r.body
    );
    assert!(r.body["size_bytes"].as_u64().expect("size_bytes") > 0);
}

#[tokio::test]
async fn keyed_approvals_are_created_listed_and_decided_once() {
    let api = start_client_clock().await;
    for (key, at, expires) in [
        ("ap-1", T, Some(T + 1_000)),
        ("ap-2", T + 10, None),
        ("ap-3", T + 20, Some(T + 50)),
    ] {
        let mut body = json!({ "key": key, "operation": "replay_dead",
            "params": "{\"destination\":\"OB1\"}", "requester": "alice", "requested_at": at });
        if let Some(e) = expires {
            body["expires_at"] = json!(e);
        }
        let r = api
            .call_at(at, Method::POST, "/v1/approvals/keyed", Some(body))
            .await;
        ok(&r, 201);
    }
    // At T+100 ap-3 has expired: pending ones, newest request first.
    let r = api
        .call_at(T + 100, Method::GET, "/v1/approvals?status=pending", None)
        .await;
    ok(&r, 200);
    let keys: Vec<&str> = r.body["approvals"]
        .as_array()
        .expect("approvals")
        .iter()
        .filter_map(|a| a["key"].as_str())
        .collect();
    assert_eq!(keys, ["ap-2", "ap-1"]);

    let r = api.get("/v1/approvals/keyed/ap-1").await;
    ok(&r, 200);
    assert_eq!(r.body["requester"], "alice");
    assert_eq!(r.body["requested_at"], T);
    assert_eq!(r.body["params"], "{\"destination\":\"OB1\"}");
    assert_eq!(r.body["status"], "pending");

    let decide = json!({ "status": "approved", "approver": "bob", "decided_at": T + 200 });
    let r = api
        .post("/v1/approvals/keyed/ap-1/decide", decide.clone())
        .await;
    ok(&r, 200);
    assert_eq!(r.body["status"], "approved");
    let r = api.get("/v1/approvals/keyed/ap-1").await;
    assert_eq!(r.body["approver"], "bob");
    assert_eq!(r.body["decided_at"], T + 200);
    // Once only.
    let r = api.post("/v1/approvals/keyed/ap-1/decide", decide).await;
    api_error(&r, 409, "already_decided", None);

    let before = api.digest().await;
    let r = api
        .post(
            "/v1/approvals/keyed/ap-2/decide",
            json!({ "status": "pending", "decided_at": 1 }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("status"));
    let r = api.get("/v1/approvals?status=approved").await;
    api_error(&r, 400, "invalid", Some("status"));
    nothing_proposed(&api, &before, "refused approval calls").await;
    let r = api
        .post(
            "/v1/approvals/keyed/nobody/decide",
            json!({ "status": "rejected", "decided_at": 1 }),
        )
        .await;
    api_error(&r, 404, "not_found", None);
    let r = api.get("/v1/approvals/keyed/nobody").await;
    api_error(&r, 404, "not_found", None);
}
