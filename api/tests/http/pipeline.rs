//! The pipeline end to end: ingress, route, transform, deliver; FIFO lanes; batched row actions; fences; idempotent enqueue.

use crate::harness::*;

#[tokio::test]
async fn full_pipeline_ingress_route_transform_deliver() {
    let api = start().await;

    // Enqueue: 201 once committed.
    let r = api
        .post("/v1/channels/orders/messages", json!({ "raw": "ORDER 42", "message_type": "ORM", "control_id": "c-42", "metadata": { "k": "v" } }))
        .await;
    ok(&r, 201);
    assert_eq!(r.body["duplicate"], false);
    assert!(r.body["index"].as_u64().is_some());
    let mid = r.body["message_id"].as_u64().expect("message_id");
    let view = api
        .get(&format!("/v1/messages/{mid}?body=true&record_view=false"))
        .await;
    ok(&view, 200);
    assert_eq!(view.body["message"]["status"], "received");
    assert_eq!(view.body["message"]["channel_id"], "orders");
    assert_eq!(view.body["message"]["raw"], "ORDER 42");
    assert_eq!(view.body["message"]["message_type"], "ORM");
    assert_eq!(view.body["message"]["control_id"], "c-42");
    assert_eq!(event_kinds(&view.body), ["received"]);
    assert_eq!(view.body["rows"][0]["stage"], "ingress");
    assert_eq!(view.body["rows"][0]["status"], "pending");

    // Ingress claim.
    let r = api
        .post(
            "/v1/claims",
            json!({ "stage": "ingress", "limit": 10, "owner": "router-1", "ttl_ms": 30_000 }),
        )
        .await;
    ok(&r, 200);
    let items = r.body["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    let ingress = &items[0];
    assert_eq!(ingress["message_id"], mid);
    assert_eq!(ingress["stage"], "ingress");
    assert_eq!(ingress["channel_id"], "orders");
    assert_eq!(ingress["payload"], "ORDER 42");
    assert_eq!(ingress["attempts"], 1);
    assert!(ingress["fence"].as_u64().is_some_and(|f| f > 0));
    // Nothing else is due.
    let r = api
        .post(
            "/v1/claims",
            json!({ "stage": "ingress", "limit": 10, "owner": "router-2", "ttl_ms": 30_000 }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["items"], json!([]));

    // Route to one handler.
    let r = api
        .post(
            &format!("/v1/rows/{}/route", ingress["row_id"]),
            json!({ "fence": ingress["fence"], "handlers": [{ "handler": "to-json", "payload": "{\"order\":42}" }] }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["applied"], true);
    let view = api
        .get(&format!("/v1/messages/{mid}?body=true&record_view=false"))
        .await;
    ok(&view, 200);
    assert_eq!(view.body["message"]["status"], "routed");

    // Routed claim.
    let r = api
        .post(
            "/v1/claims",
            json!({ "stage": "routed", "limit": 10, "owner": "xform-1", "ttl_ms": 30_000 }),
        )
        .await;
    ok(&r, 200);
    let items = r.body["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    let routed = &items[0];
    assert_eq!(routed["message_id"], mid);
    assert_eq!(routed["stage"], "routed");
    assert_eq!(routed["handler_name"], "to-json");
    assert_eq!(routed["payload"], "{\"order\":42}");

    // Transform: two deliveries and a state op.
    let r = api
        .post(
            &format!("/v1/rows/{}/transform", routed["row_id"]),
            json!({
                "fence": routed["fence"],
                "deliveries": [
                    { "destination": "warehouse", "payload": "W-42" },
                    { "destination": "billing", "payload": "B-42" }
                ],
                "state_ops": [{ "namespace": "orders", "key": "last", "value": { "id": mid, "total": 9.5 } }]
            }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["applied"], true);
    let view = api
        .get(&format!("/v1/messages/{mid}?body=true&record_view=false"))
        .await;
    ok(&view, 200);
    assert_eq!(
        view.body["message"]["status"], "routed",
        "transform never sets the status while rows are live"
    );
    let outbound: Vec<&Value> = view.body["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["stage"] == "outbound")
        .collect();
    assert_eq!(outbound.len(), 2);
    assert!(outbound.iter().all(|r| r["status"] == "pending"));

    // Deliver each destination through its FIFO lane.
    for (dest, payload) in [("warehouse", "W-42"), ("billing", "B-42")] {
        let r = api
            .post(
                &format!("/v1/lanes/outbound/{dest}/claim"),
                json!({ "owner": "sender-1", "ttl_ms": 30_000 }),
            )
            .await;
        ok(&r, 200);
        let item = &r.body["item"];
        assert_eq!(item["message_id"], mid);
        assert_eq!(item["stage"], "outbound");
        assert_eq!(item["destination_name"], dest);
        assert_eq!(item["payload"], payload);
        // A repeated claim by the holder (its answer lost, say) gets the same row and fence.
        let again = api
            .post(
                &format!("/v1/lanes/outbound/{dest}/claim"),
                json!({ "owner": "sender-1", "ttl_ms": 30_000 }),
            )
            .await;
        ok(&again, 200);
        assert_eq!(again.body["item"]["row_id"], item["row_id"]);
        assert_eq!(again.body["item"]["fence"], item["fence"]);
        let r = api
            .post(
                &format!("/v1/rows/{}/done", item["row_id"]),
                json!({ "fence": item["fence"] }),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["ok"], true);
    }

    let view = api
        .get(&format!("/v1/messages/{mid}?body=true&record_view=false"))
        .await;
    ok(&view, 200);
    assert_eq!(view.body["message"]["status"], "processed");
    assert_eq!(
        event_kinds(&view.body),
        [
            "received",
            "routed",
            "transformed",
            "delivered",
            "delivered"
        ]
    );
    let delivered: Vec<&Value> = view.body["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event"] == "delivered")
        .map(|e| &e["destination"])
        .collect();
    assert_eq!(delivered, [&json!("warehouse"), &json!("billing")]);
    assert!(view.body["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .all(|r| r["status"] == "done" && r["claim"].is_null()));

    // The state op.
    let r = api.get("/v1/state/orders/last").await;
    ok(&r, 200);
    assert_eq!(r.body["namespace"], "orders");
    assert_eq!(r.body["key"], "last");
    assert_eq!(r.body["value"], json!({ "id": mid, "total": 9.5 }));
    assert_eq!(r.body["message_id"], mid);
    let r = api.get("/v1/state/orders").await;
    ok(&r, 200);
    assert_eq!(r.body["version"], 1);
    let r = api.get("/v1/state/orders/missing").await;
    api_error(&r, 404, "not_found", None);

    // The list and the stats agree.
    let r = api.get("/v1/messages?status=processed").await;
    ok(&r, 200);
    assert_eq!(ids_of(&r.body["messages"]), [mid]);
    let r = api.get("/v1/stats").await;
    ok(&r, 200);
    assert_eq!(r.body["rows"]["outbound"]["done"], 2);
    assert_eq!(r.body["rows"]["outbound"]["pending"], 0);
}

#[tokio::test]
async fn fifo_lane_with_two_competing_workers() {
    let api = start().await;
    let client = &api.admin;
    const N: usize = 6;
    let mut enqueued = Vec::new();
    for i in 0..N {
        enqueued.push(api.enqueue("feed", &format!("m{i}")).await);
    }
    let items = api.claim_ingress("feed", 100).await;
    assert_eq!(items.len(), N);
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item["message_id"], enqueued[i]);
        api.handoff_to(item, "printer", &format!("m{i}")).await;
    }
    let lane = api.get("/v1/lanes/outbound/printer").await;
    ok(&lane, 200);
    assert_eq!(lane.body["lane"], "outbound:printer");
    assert_eq!(lane.body["depth"], N);
    assert_eq!(lane.body["inflight"], 0);
    assert_eq!(lane.body["holder"], Value::Null);

    let workers = ["worker-a", "worker-b"];
    let mut completed = Vec::new();
    for i in 0..N {
        let (me, other) = (workers[i % 2], workers[(i + 1) % 2]);
        let claim: FifoClaim = client
            .claim_fifo("outbound", "printer", me, LONG_TTL)
            .await
            .expect("claim");
        let item = claim
            .item
            .clone()
            .unwrap_or_else(|| panic!("{me} should get the head: {claim:?}"));
        assert_eq!(item.payload, format!("m{i}"), "the head of the lane");
        assert_eq!(item.destination_name.as_deref(), Some("printer"));

        // The competitor is refused while the lane lease is held, and told by whom.
        let r = api
            .post(
                "/v1/lanes/outbound/printer/claim",
                json!({ "owner": other, "ttl_ms": LONG_TTL }),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["item"], Value::Null);
        assert_eq!(r.body["reason"], "lane_busy");
        assert_eq!(r.body["holder"], me);
        assert!(r.body["expires_at"].as_u64().is_some());
        let lane = api.get("/v1/lanes/outbound/printer").await;
        ok(&lane, 200);
        assert_eq!(lane.body["holder"]["owner"], me);
        assert_eq!(lane.body["inflight"], 1);
        assert_eq!(lane.body["depth"], N - i - 1);

        client.done(&item).await.expect("done");
        completed.push(item.message_id.0);

        // Still busy until the holder gives the lane back.
        let busy = client
            .claim_fifo("outbound", "printer", other, LONG_TTL)
            .await
            .expect("claim");
        assert_eq!(busy.reason, Some(FifoEmptyReason::LaneBusy));
        assert_eq!(busy.holder.as_deref(), Some(me));
        let r = api
            .post("/v1/lanes/outbound/printer/release", json!({ "owner": me }))
            .await;
        ok(&r, 200);
        assert_eq!(r.body["released"], true);
    }
    assert_eq!(completed, enqueued, "completion order equals enqueue order");

    let r = api
        .post(
            "/v1/lanes/outbound/printer/claim",
            json!({ "owner": "worker-a", "ttl_ms": LONG_TTL }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["item"], Value::Null);
    assert_eq!(r.body["reason"], "empty");
    let r = api
        .get("/v1/messages?channel=feed&status=processed&limit=100")
        .await;
    ok(&r, 200);
    let mut processed = ids_of(&r.body["messages"]);
    processed.reverse(); // newest first
    assert_eq!(processed, enqueued);
}

#[tokio::test]
async fn done_with_claim_next_walks_a_lane_one_write_per_row() {
    let api = start().await;
    const N: usize = 4;
    let mut enqueued = Vec::new();
    for i in 0..N {
        enqueued.push(api.enqueue("feed", &format!("m{i}")).await);
    }
    for (i, item) in api.claim_ingress("feed", 100).await.iter().enumerate() {
        api.handoff_to(item, "printer", &format!("m{i}")).await;
    }
    let first = api.claim_head("printer", "w", LONG_TTL).await;

    // Bad claim_next fields: 400 naming the field, and nothing proposed (the row stays out).
    let done_path = format!("/v1/rows/{}/done", first.row_id.0);
    let before = api.digest().await;
    for (next, field) in [
        (
            json!({ "owner": "", "ttl_ms": LONG_TTL }),
            "claim_next.owner",
        ),
        (json!({ "owner": "w", "ttl_ms": 0 }), "claim_next.ttl_ms"),
    ] {
        let r = api
            .post(
                &done_path,
                json!({ "fence": first.fence.0, "claim_next": next }),
            )
            .await;
        api_error(&r, 400, "invalid", Some(field));
    }
    nothing_proposed(&api, &before, "done with a bad claim_next").await;
    // A channel-scoped worker may finish its channel's rows (those it claimed: a row's claim is
    // its principal's) but not claim a whole outbound lane.
    let scoped = api.token("worker-feed", "worker", Some(&["feed"])).await;
    let r = api
        .post_as(
            &scoped,
            "/v1/channels/feed/messages",
            json!({ "raw": "own", "deliveries": [{ "destination": "plotter", "payload": "p" }] }),
        )
        .await;
    ok(&r, 201);
    let r = api
        .post_as(
            &scoped,
            "/v1/claims",
            json!({ "stage": "outbound", "limit": 1, "owner": "sw", "ttl_ms": LONG_TTL,
                    "channel": "feed", "destination": "plotter" }),
        )
        .await;
    ok(&r, 200);
    let own = &r.body["items"][0];
    let r = api
        .post_as(
            &scoped,
            &format!("/v1/rows/{}/done", own["row_id"]),
            json!({ "fence": own["fence"], "claim_next": { "owner": "sw", "ttl_ms": LONG_TTL } }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    message_contains(&r, "outbound lane");

    // Each done hands back the lane's next row, in order, fenced by the same write.
    let mut item = first;
    let mut delivered = vec![item.message_id.0];
    loop {
        let r = api
            .post(
                &format!("/v1/rows/{}/done", item.row_id.0),
                json!({ "fence": item.fence.0, "claim_next": { "owner": "w", "ttl_ms": LONG_TTL } }),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["ok"], true);
        let index = r.body["index"].as_u64().expect("index");
        let next = &r.body["next"];
        if next["item"].is_null() {
            assert_eq!(next["reason"], "empty");
            break;
        }
        let claimed: ClaimedRow =
            serde_json::from_value(next["item"].clone()).expect("a claimed row");
        assert_eq!(claimed.fence.0, index, "fenced by the done's own entry");
        assert_eq!(claimed.payload, format!("m{}", delivered.len()));
        delivered.push(claimed.message_id.0);
        item = claimed;
    }
    assert_eq!(delivered, enqueued, "delivery order equals enqueue order");
    let r = api
        .get("/v1/messages?channel=feed&status=processed&limit=100")
        .await;
    ok(&r, 200);
    assert_eq!(ids_of(&r.body["messages"]).len(), N);
    // The finished row's fence is spent: the typed client gets the state machine's refusal.
    let err = api
        .admin
        .done_then_claim_next(&item, "w", LONG_TTL)
        .await
        .expect_err("the row is done");
    assert_eq!(err.code(), Some("wrong_status"));
}

#[tokio::test]
async fn row_actions_hand_on_a_claimed_batch_in_one_request() {
    let api = start().await;
    let mut enqueued = Vec::new();
    for i in 0..3 {
        enqueued.push(api.enqueue("feed", &format!("m{i}")).await);
    }
    let items = api.claim_ingress("feed", 10).await;
    assert_eq!(items.len(), 3);
    let handoff = |item: &Value| json!({ "row": item["row_id"], "action": "handoff", "body": { "fence": item["fence"], "deliveries": [{ "destination": "printer", "payload": item["payload"] }] } });

    let scoped = api.token("worker-other", "worker", Some(&["other"])).await;

    // Bad input refuses the whole request, naming the item and its field; nothing is proposed.
    let before = api.digest().await;
    let mut no_fence = handoff(&items[0]);
    no_fence["body"]
        .as_object_mut()
        .expect("body")
        .remove("fence");
    let with_claim = json!({ "row": items[1]["row_id"], "action": "done", "body": { "fence": items[1]["fence"], "claim_next": { "owner": "w", "ttl_ms": LONG_TTL } } });
    for (actions, field) in [
        (json!([]), "actions"),
        (
            json!([handoff(&items[0]), { "row": items[1]["row_id"], "action": "explode", "body": {} }]),
            "actions[1].action",
        ),
        (
            json!([handoff(&items[0]), handoff(&items[0])]),
            "actions[1].row",
        ),
        (json!([no_fence]), "actions[0].body.fence"),
        (
            json!([handoff(&items[0]), with_claim]),
            "actions[1].body.claim_next",
        ),
    ] {
        let r = api
            .post("/v1/rows/actions", json!({ "actions": actions }))
            .await;
        api_error(&r, 400, "invalid", Some(field));
    }
    let too_many: Vec<Value> = (0..=raftlane_api::routes::work::MAX_ROW_ACTIONS as u64)
        .map(|row| json!({ "row": row, "action": "done", "body": { "fence": 1 } }))
        .collect();
    let r = api
        .post("/v1/rows/actions", json!({ "actions": too_many }))
        .await;
    api_error(&r, 400, "invalid", Some("actions"));
    // A row outside a scoped caller's channels is that item's 404, as a missing row is
    // (docs/SPEC.md §9.4): it proposes nothing and names no channel.
    let r = api
        .post_as(
            &scoped,
            "/v1/rows/actions",
            json!({ "actions": [handoff(&items[0])] }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["results"][0]["status"], 404, "{}", r.text());
    assert_eq!(
        r.body["results"][0]["error"]["message"],
        format!("row {} not found", items[0]["row_id"]),
        "{}",
        r.text()
    );
    let after = api.digest().await;
    assert_eq!(after.1, before.1, "a refused batch changed the state");

    // One answer per action, in order: two hand-offs, a stale fence, an unknown row.
    let mut stale = handoff(&items[2]);
    stale["body"]["fence"] = json!(items[2]["fence"].as_u64().expect("fence") - 1);
    let body = json!({ "actions": [handoff(&items[0]), handoff(&items[1]), stale, { "row": 999_999, "action": "done", "body": { "fence": 1 } }] });
    let send = || async {
        let headers = [
            ("authorization", format!("Bearer {ADMIN}")),
            ("content-type", "application/json".to_string()),
            ("request-id", "batch-1".to_string()),
        ];
        api.send_raw(
            Method::POST,
            "/v1/rows/actions",
            &headers,
            body.to_string().into_bytes(),
        )
        .await
    };
    let r = send().await;
    ok(&r, 200);
    let results = r.body["results"].as_array().expect("results").clone();
    assert_eq!(results.len(), 4, "{}", r.text());
    for answer in &results[..2] {
        assert_eq!(answer["applied"], true, "{answer}");
        assert!(answer["index"].as_u64().is_some(), "{answer}");
    }
    assert_eq!(results[2]["status"], 409, "{}", results[2]);
    assert_eq!(results[2]["error"]["code"], "stale_fence");
    assert_eq!(results[3]["status"], 404, "{}", results[3]);
    assert_eq!(results[3]["error"]["code"], "not_found");

    // The same request again (same Request-Id) gets the same answers and changes nothing.
    let state = api.digest().await;
    let again = send().await;
    ok(&again, 200);
    assert_eq!(again.body["results"][0], results[0]);
    assert_eq!(again.body["results"][1], results[1]);
    assert_eq!(
        api.digest().await.1,
        state.1,
        "a repeated batch applied twice"
    );

    // The handed-on rows wait on the printer lane in enqueue order; the stale one stays put.
    let first = api.claim_head("printer", "w", LONG_TTL).await;
    assert_eq!(first.message_id.0, enqueued[0]);
    assert_eq!(first.payload, "m0");
    let next = api
        .admin
        .done_then_claim_next(&first, "w", LONG_TTL)
        .await
        .expect("done")
        .item
        .expect("the second row");
    assert_eq!(next.message_id.0, enqueued[1]);
    let view = serde_json::to_value(
        api.admin
            .message(MessageId(enqueued[2]))
            .await
            .expect("message"),
    )
    .expect("json");
    assert_eq!(view["rows"][0]["stage"], "ingress");
    assert_eq!(view["rows"][0]["status"], "inflight");
}

#[tokio::test]
async fn stale_fence_is_refused_and_changes_nothing() {
    let api = start().await;
    let client = &api.admin;
    let mid = api.message_at("slow", "dest").await;

    let old = api.claim_head("dest", "old-worker", 100).await;
    assert_eq!(old.attempts, 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Past both leases: the new owner takes the lane and recovers the stranded head.
    let new = api.claim_head("dest", "new-worker", LONG_TTL).await;
    assert_eq!(new.row_id, old.row_id, "the stranded head, not a later row");
    assert_eq!(new.attempts, 2);
    assert!(new.fence.0 > old.fence.0);

    let before = api.digest().await;
    for (action, body) in [
        ("done", json!({ "fence": old.fence.0 })),
        (
            "fail",
            json!({ "fence": old.fence.0, "error": "late", "retry": { "backoff_ms": 10, "multiplier": 2.0, "max_backoff_ms": 100 } }),
        ),
        (
            "response",
            json!({ "fence": old.fence.0, "body": "late", "outcome": "ok" }),
        ),
    ] {
        let r = api
            .post(&format!("/v1/rows/{}/{action}", old.row_id.0), body)
            .await;
        api_error(&r, 409, "stale_fence", None);
        message_contains(&r, "stale fence");
        let after = api.digest().await;
        assert_eq!(after.1, before.1, "a stale {action} changed the state");
        assert!(after.0 > before.0, "it was proposed and applied as a no-op");
    }
    let view =
        serde_json::to_value(client.message(MessageId(mid)).await.expect("message")).expect("json");
    let row = &view["rows"][0];
    assert_eq!(row["status"], "inflight");
    assert_eq!(row["claim"]["owner"], "new-worker");
    assert_eq!(row["claim"]["fence"], new.fence.0);
    assert!(view["responses"].as_array().expect("responses").is_empty());
    assert_eq!(event_kinds(&view), ["received", "routed"]);

    // The current holder completes normally.
    let r = api
        .post(
            &format!("/v1/rows/{}/done", new.row_id.0),
            json!({ "fence": new.fence.0 }),
        )
        .await;
    ok(&r, 200);
    let view =
        serde_json::to_value(client.message(MessageId(mid)).await.expect("message")).expect("json");
    assert_eq!(view["message"]["status"], "processed");
}

#[tokio::test]
async fn idempotent_enqueue() {
    let api = start().await;
    let path = "/v1/channels/inbox/messages";
    let send = |key: &'static str, path: &'static str| {
        let api = &api;
        async move {
            api.send_raw(
                Method::POST,
                path,
                &[
                    ("authorization", format!("Bearer {ADMIN}")),
                    ("content-type", "application/json".into()),
                    ("idempotency-key", key.into()),
                ],
                json!({ "raw": "hello" }).to_string().into_bytes(),
            )
            .await
        }
    };
    let first = send("key-1", path).await;
    ok(&first, 201);
    assert_eq!(first.body["duplicate"], false);
    let id = first.body["message_id"].as_u64().expect("id");
    let second = send("key-1", path).await;
    ok(&second, 200);
    assert_eq!(second.body["duplicate"], true);
    assert_eq!(second.body["message_id"], id);
    // The typed client sees the same.
    let third = api
        .admin
        .enqueue("inbox", "hello", Some("key-1"))
        .await
        .expect("enqueue");
    assert!(third.duplicate);
    assert_eq!(third.message_id, MessageId(id));
    // Keys are per channel; another key is another message.
    let other_channel = send("key-1", "/v1/channels/outbox/messages").await;
    ok(&other_channel, 201);
    assert_ne!(other_channel.body["message_id"], id);
    let other_key = send("key-2", path).await;
    ok(&other_key, 201);
    assert_ne!(other_key.body["message_id"], id);

    let r = api.get("/v1/messages?channel=inbox").await;
    ok(&r, 200);
    assert_eq!(r.body["messages"].as_array().expect("messages").len(), 2);
    let r = api.get("/v1/stats").await;
    ok(&r, 200);
    assert_eq!(r.body["rows"]["ingress"]["pending"], 3);
}

#[tokio::test]
async fn route_with_claim_next_walks_an_ingress_lane_one_write_per_row() {
    let api = start().await;
    const N: usize = 3;
    let mut enqueued = Vec::new();
    for i in 0..N {
        enqueued.push(api.enqueue("intake", &format!("m{i}")).await);
    }
    let first = api
        .admin
        .claim_fifo("ingress", "intake", "w", LONG_TTL)
        .await
        .expect("claim")
        .item
        .expect("the head");

    // Bad claim_next fields: 400 naming the field, and nothing proposed.
    let route_path = format!("/v1/rows/{}/route", first.row_id.0);
    let before = api.digest().await;
    let r = api
        .post(
            &route_path,
            json!({ "fence": first.fence.0, "handlers": [{"handler": "h1"}],
                    "claim_next": { "owner": "w", "ttl_ms": 0 } }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("claim_next.ttl_ms"));
    nothing_proposed(&api, &before, "route with a bad claim_next").await;
    // Not in a batch.
    let r = api
        .post(
            "/v1/rows/actions",
            json!({ "actions": [{ "row": first.row_id.0, "action": "route", "body": {
                "fence": first.fence.0, "handlers": [{"handler": "h1"}],
                "claim_next": { "owner": "w", "ttl_ms": LONG_TTL } } }] }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("actions[0].body.claim_next"));

    // Each route hands back the lane's next row, in order, fenced by the same write.
    let mut item = first;
    let mut routed = vec![item.message_id.0];
    loop {
        let r = api
            .post(
                &format!("/v1/rows/{}/route", item.row_id.0),
                json!({ "fence": item.fence.0, "handlers": [{"handler": "h1"}],
                        "claim_next": { "owner": "w", "ttl_ms": LONG_TTL } }),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["applied"], true);
        let index = r.body["index"].as_u64().expect("index");
        let next = &r.body["next"];
        if next["item"].is_null() {
            assert_eq!(next["reason"], "empty");
            break;
        }
        let claimed: ClaimedRow =
            serde_json::from_value(next["item"].clone()).expect("a claimed row");
        assert_eq!(claimed.fence.0, index, "fenced by the route's own entry");
        assert_eq!(claimed.payload, format!("m{}", routed.len()));
        routed.push(claimed.message_id.0);
        item = claimed;
    }
    assert_eq!(routed, enqueued, "routing order equals enqueue order");
    let r = api
        .get("/v1/messages?channel=intake&status=routed&limit=100")
        .await;
    ok(&r, 200);
    assert_eq!(ids_of(&r.body["messages"]).len(), N);
}
