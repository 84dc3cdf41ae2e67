//! "A principal acts only on what is its own, everywhere" (docs/SPEC.md §9.4, §9.5, §9.8): each
//! finding of the attacker test as the attack it was, refused, and the legitimate neighbour
//! call that must keep working. Every refusal writes nothing.

use crate::harness::*;

/// A routed row of `channel` claimed by `token` under `owner`: `(row id, fence)`. The message is
/// enqueued and routed by the admin.
pub(crate) async fn routed_row(api: &Api, token: &str, channel: &str, owner: &str) -> (u64, u64) {
    api.enqueue(channel, "MSH|routed").await;
    let ingress = api.claim_ingress(channel, 10).await;
    let r = api
        .post(
            &format!("/v1/rows/{}/route", ingress[0]["row_id"]),
            json!({ "fence": ingress[0]["fence"], "handlers": [{ "handler": "h", "payload": "p" }] }),
        )
        .await;
    ok(&r, 200);
    let r = api
        .post_as(
            token,
            "/v1/claims",
            json!({ "stage": "routed", "limit": 1, "owner": owner, "ttl_ms": LONG_TTL,
                    "channel": channel }),
        )
        .await;
    ok(&r, 200);
    let item = &r.body["items"][0];
    (
        item["row_id"].as_u64().expect("row_id"),
        item["fence"].as_u64().expect("fence"),
    )
}

/// A transform body writing `namespace`/`key`.
fn transform(fence: u64, namespace: &str, key: &str, value: Value) -> Value {
    json!({ "fence": fence, "deliveries": [],
            "state_ops": [{ "namespace": namespace, "key": key, "value": value }] })
}

// --- 1. state namespaces: a scoped token reads and writes only its channels' namespaces ---

#[tokio::test]
async fn a_scoped_worker_writes_only_the_namespaces_of_its_channels() {
    let api = start().await;
    // Tenant "billing" keeps its invoice counter; an admin's transform writes it.
    let (row, fence) = routed_row(&api, ADMIN, "billing", "admin-xform").await;
    let r = api
        .post(
            &format!("/v1/rows/{row}/transform"),
            transform(fence, "billing/invoices", "next_invoice", json!(1001)),
        )
        .await;
    ok(&r, 200);

    let lab = api.token("lab-worker", "worker", Some(&["lab"])).await;
    let encoded = |ns: &str| ns.replace('/', "%2F");
    // The attack: a transform of its own row overwriting another tenant's counter, and an
    // unbound namespace, on each path a transform takes.
    for ns in ["billing/invoices", "invoices"] {
        let (row, fence) = routed_row(&api, &lab, "lab", "lab-xform").await;
        let before = api.digest().await;
        let body = transform(fence, ns, "next_invoice", json!(1));
        let r = api
            .post_as(&lab, &format!("/v1/rows/{row}/transform"), body.clone())
            .await;
        api_error(&r, 404, "not_found", None);
        message_contains(&r, ns);
        let mut with_next = body.clone();
        with_next["claim_next"] = json!({ "owner": "lab-xform", "ttl_ms": LONG_TTL });
        let r = api
            .post_as(&lab, &format!("/v1/rows/{row}/transform"), with_next)
            .await;
        api_error(&r, 404, "not_found", None);
        let r = api
            .post_as(
                &lab,
                "/v1/rows/actions",
                json!({ "actions": [{ "row": row, "action": "transform", "body": body }] }),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["results"][0]["status"], 404, "{}", r.text());
        nothing_proposed(&api, &before, &format!("a scoped transform writing {ns}")).await;
        // Its own channel's namespace is its to write.
        let r = api
            .post_as(
                &lab,
                &format!("/v1/rows/{row}/transform"),
                transform(fence, "lab/counters", "seen", json!(1)),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["applied"], true);
    }
    let r = api.get("/v1/state/billing%2Finvoices/next_invoice").await;
    ok(&r, 200);
    assert_eq!(
        r.body["value"], 1001,
        "the other tenant's counter is untouched"
    );

    // Reads follow the very same rule: its namespaces are readable, the others do not exist.
    let r = api
        .get_as(&lab, &format!("/v1/state/{}", encoded("lab/counters")))
        .await;
    ok(&r, 200);
    let r = api
        .get_as(&lab, &format!("/v1/state/{}/seen", encoded("lab/counters")))
        .await;
    ok(&r, 200);
    for path in [
        format!("/v1/state/{}", encoded("billing/invoices")),
        format!("/v1/state/{}/next_invoice", encoded("billing/invoices")),
        "/v1/state/invoices".to_string(),
    ] {
        let r = api.get_as(&lab, &path).await;
        api_error(&r, 404, "not_found", None);
    }
    let r = api.get_as(&lab, "/v1/state").await;
    ok(&r, 200);
    let names: Vec<&str> = r.body["namespaces"]
        .as_array()
        .expect("namespaces")
        .iter()
        .filter_map(|n| n["namespace"].as_str())
        .collect();
    assert_eq!(names, ["lab/counters"], "only its own channel's namespaces");
    // An unscoped token sees and writes every namespace.
    let r = api.get("/v1/state").await;
    assert_eq!(r.body["namespaces"].as_array().map(Vec::len), Some(2));
}

// --- 2. a row's claim is its principal's: its fence shows to it, its actions are its own ---

#[tokio::test]
async fn another_principals_claim_shows_no_fence_and_takes_no_action() {
    let api = start().await;
    let a = api.token("worker-a", "worker", None).await;
    let b = api.token("worker-b", "worker", None).await;
    let viewer = api.token("viewer-v", "viewer", None).await;
    let ops = api.token("ops", "operator", None).await;
    let (message, row, fence) = claimed_ingress(&api, &a, "lab", "wa").await;

    // Reads: the fence is the claim's principal's and operators'.
    for (token, shown) in [(&a, true), (&ops, true), (&b, false)] {
        let r = api.get_as(token, &format!("/v1/rows/{row}")).await;
        ok(&r, 200);
        assert_eq!(r.body["row"]["claim"]["owner"], "wa");
        let want = if shown { json!(fence) } else { json!(0) };
        assert_eq!(r.body["row"]["claim"]["fence"], want, "{}", r.text());
        if !shown {
            assert_eq!(r.body["row"]["last_fence"], Value::Null, "{}", r.text());
        }
    }
    for token in [&b, &viewer] {
        let r = api
            .get_as(token, &format!("/v1/messages/{message}?body=true"))
            .await;
        ok(&r, 200);
        assert_eq!(r.body["rows"][0]["claim"]["fence"], 0, "{}", r.text());
        assert_eq!(r.body["rows"][0]["last_fence"], Value::Null);
    }

    // Actions: another principal holding the real fence (fences are log indexes) is refused
    // on every path, and nothing is written.
    let before = api.digest().await;
    let forged = json!({ "fence": fence,
        "deliveries": [{ "destination": "attacker", "payload": "forged" }] });
    let mut forged_next = forged.clone();
    forged_next["claim_next"] = json!({ "owner": "wb", "ttl_ms": LONG_TTL });
    for (action, body) in [
        ("handoff", forged.clone()),
        ("handoff", forged_next),
        (
            "route",
            json!({ "fence": fence, "handlers": [{ "handler": "h", "payload": "x" }] }),
        ),
        ("done", json!({ "fence": fence })),
        ("fail", json!({ "fence": fence, "error": "forged" })),
        ("dead", json!({ "fence": fence, "error": "forged" })),
    ] {
        let r = api
            .post_as(&b, &format!("/v1/rows/{row}/{action}"), body)
            .await;
        api_error(&r, 403, "claim_of_another_principal", None);
    }
    let r = api
        .post_as(
            &b,
            "/v1/rows/actions",
            json!({ "actions": [{ "row": row, "action": "handoff", "body": forged }] }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["results"][0]["status"], 403, "{}", r.text());
    assert_eq!(
        r.body["results"][0]["error"]["code"],
        "claim_of_another_principal"
    );
    nothing_proposed(&api, &before, "actions on another principal's claim").await;

    // An operator may act on it, and that act is audited as an override.
    let r = api
        .post_as(
            &ops,
            &format!("/v1/rows/{row}/dead"),
            json!({ "error": "stuck; dead-lettered by ops" }),
        )
        .await;
    ok(&r, 200);
    let r = api.get("/v1/audit/search?org=default&actor=ops").await;
    ok(&r, 200);
    let actions: Vec<&str> = r.body["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|row| row["action"].as_str())
        .collect();
    assert!(actions.contains(&"row.override"), "{actions:?}");

    // The claim's own principal acts as always.
    let (_, row, fence) = claimed_ingress(&api, &a, "lab", "wa").await;
    let r = api
        .post_as(
            &a,
            &format!("/v1/rows/{row}/handoff"),
            json!({ "fence": fence, "deliveries": [{ "destination": "emr", "payload": "p" }] }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["applied"], true);
}

// --- 3. recovery: a worker takes back only its own principal's claims; operators everyone's ---

#[tokio::test]
async fn a_worker_recovers_only_its_own_principals_rows() {
    let api = start().await;
    let a = api.token("worker-a", "worker", None).await;
    let b = api.token("worker-b", "worker", None).await;
    let ops = api.token("ops", "operator", None).await;
    let (_, row_a, _) = claimed_ingress(&api, &a, "lab", "wa").await;
    let (_, row_b1, _) = claimed_ingress(&api, &b, "lab", "wb-1").await;
    let (_, row_b2, _) = claimed_ingress(&api, &b, "lab", "wb-2").await;

    // The attack: B takes every other owner's rows back (recover) or every row (reset).
    let r = api
        .post_as(&b, "/v1/leases/recover", json!({ "owner": "wb-2" }))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["recovered"], 1, "only wb-1, B's own: {}", r.text());
    assert_eq!(
        claim_owner(&api, row_a).await,
        ("inflight".into(), json!("wa"))
    );
    assert_eq!(claim_owner(&api, row_b1).await.0, "pending");
    // An engine's start-up reset under its own token: B's rows only.
    let r = api.post_as(&b, "/v1/leases/reset", json!({})).await;
    ok(&r, 200);
    assert_eq!(r.body["reset"], 1, "{}", r.text());
    assert_eq!(claim_owner(&api, row_b2).await.0, "pending");
    assert_eq!(
        claim_owner(&api, row_a).await,
        ("inflight".into(), json!("wa"))
    );

    // An operator takes back every principal's rows.
    let r = api
        .post_as(&ops, "/v1/leases/recover", json!({ "owner": "ops-1" }))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["recovered"], 1);
    assert_eq!(claim_owner(&api, row_a).await.0, "pending");

    // Sweeps and cancels stay operators'.
    let before = api.digest().await;
    let r = api
        .post_as(
            &b,
            "/v1/dead-letters/sweep",
            json!({ "stage": "outbound", "keep": [] }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    let r = api
        .post_as(&b, "/v1/lanes/outbound/emr/cancel", json!({}))
        .await;
    api_error(&r, 403, "forbidden", None);
    nothing_proposed(&api, &before, "sweeps and cancels by a worker").await;
}

/// A dead-letter sweep is a recovery too: an engine's sweep (an engine sweeps at start-up)
/// dead-letters pending rows and its own principal's in-flight rows, and leaves another
/// principal's claim alone; an operator's takes every claim (docs/SPEC.md §9.8). It took every
/// claim before, handing any engine token another engine's in-flight rows.
#[tokio::test]
async fn a_sweep_takes_back_only_the_claims_its_caller_may() {
    let api = start().await;
    let a = api.token("engine-a", "engine", None).await;
    let b = api.token("engine-b", "engine", None).await;
    let ops = api.token("ops", "operator", None).await;
    // The rule is log format 2's (a cluster of this build raises its format by itself).
    let r = api
        .post("/v1/cluster/log-format", json!({ "format": 2 }))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["log_format"], 2, "{}", r.text());
    api.message_at("lab", "gone").await;
    api.message_at("lab", "gone").await;
    let r = api
        .post_as(
            &a,
            "/v1/lanes/outbound/gone/claim",
            json!({ "owner": "engine-a-1", "ttl_ms": LONG_TTL }),
        )
        .await;
    ok(&r, 200);
    let held = r.body["item"]["row_id"].as_u64().expect("A holds the head");

    let r = api
        .post_as(
            &b,
            "/v1/dead-letters/sweep",
            json!({ "stage": "outbound", "keep": [] }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["dead"], 1, "only the pending row: {}", r.text());
    assert_eq!(
        claim_owner(&api, held).await,
        ("inflight".into(), json!("engine-a-1"))
    );

    let r = api
        .post_as(
            &ops,
            "/v1/dead-letters/sweep",
            json!({ "stage": "outbound", "keep": [] }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(
        r.body["dead"],
        1,
        "the operator's takes A's claim: {}",
        r.text()
    );
    assert_eq!(claim_owner(&api, held).await.0, "dead");
}

#[tokio::test]
async fn an_engines_lease_recovery_still_works() {
    let api = start_client_clock().await;
    let engine = api.token("engine", "worker", None).await;
    let other = api.token("other-worker", "worker", None).await;
    api.enqueue("lab", "MSH|1").await;
    api.enqueue("lab", "MSH|2").await;
    // The rows are due from the cluster's time at their enqueue, which may run a little ahead of
    // this process's clock: the engine's calls are dated after it.
    let t = now_ms() + 50;
    let at = |ms: u64| {
        move |token: &str| {
            vec![
                ("authorization", format!("Bearer {token}")),
                ("content-type", "application/json".to_string()),
                ("raftlane-client-time-ms", ms.to_string()),
            ]
        }
    };
    let post_at = |token: String, ms: u64, path: &'static str, body: Value| {
        let api = &api;
        async move {
            api.send_raw(
                Method::POST,
                path,
                &at(ms)(&token),
                body.to_string().into_bytes(),
            )
            .await
        }
    };
    // Engine node 1 claims a row; engine node 2 (the same principal) is promoted and recovers
    // node 1's in-flight rows.
    let r = post_at(
        engine.clone(),
        t,
        "/v1/claims",
        json!({ "stage": "ingress", "limit": 1, "owner": "node-1", "ttl_ms": 1000, "channel": "lab" }),
    )
    .await;
    ok(&r, 200);
    let row1 = r.body["items"][0]["row_id"].as_u64().expect("row");
    let r = post_at(
        engine.clone(),
        t + 10,
        "/v1/leases/recover",
        json!({ "owner": "node-2", "lane_owner": "node-2" }),
    )
    .await;
    ok(&r, 200);
    assert_eq!(r.body["recovered"], 1);
    assert_eq!(claim_owner(&api, row1).await.0, "pending");
    // A lease that ran out goes back whoever asks (as the leader's timer does).
    let r = post_at(
        engine.clone(),
        t + 20,
        "/v1/claims",
        json!({ "stage": "ingress", "limit": 1, "owner": "node-2", "ttl_ms": 1000, "channel": "lab" }),
    )
    .await;
    ok(&r, 200);
    let row2 = r.body["items"][0]["row_id"].as_u64().expect("row");
    let r = post_at(other, t + 5000, "/v1/leases/reclaim", json!({})).await;
    ok(&r, 200);
    assert_eq!(r.body["reclaimed"], 1, "{}", r.text());
    assert_eq!(claim_owner(&api, row2).await.0, "pending");
}

/// A config listing `required` in `approvals_required`, written as admin over the current one.
pub(crate) async fn require_approvals(api: &Api, required: &[&str]) {
    let current = api.get("/v1/config").await;
    ok(&current, 200);
    let version = current.body["version"].as_u64().expect("version");
    let mut doc = current.body["config"].clone();
    doc["approvals_required"] = json!(required);
    let r = api.put_config(Some(&version.to_string()), &doc).await;
    ok(&r, 200);
}

#[tokio::test]
async fn recovery_sweeps_and_cancels_can_be_listed_under_dual_control() {
    let api = start().await;
    let ops = api.token("ops", "operator", None).await;
    let worker = api.token("worker-w", "worker", None).await;
    let (_, own, _) = claimed_ingress(&api, &worker, "lab", "ww").await;
    require_approvals(
        &api,
        &[
            "reset_leases",
            "recover_leases",
            "sweep_dead_letters",
            "cancel_queued",
        ],
    )
    .await;
    let before = api.digest().await;
    for (path, body, operation) in [
        ("/v1/leases/reset", json!({}), "reset_leases"),
        (
            "/v1/leases/recover",
            json!({ "owner": "o" }),
            "recover_leases",
        ),
        (
            "/v1/dead-letters/sweep",
            json!({ "stage": "outbound", "keep": [] }),
            "sweep_dead_letters",
        ),
        ("/v1/lanes/outbound/emr/cancel", json!({}), "cancel_queued"),
    ] {
        let r = api.post_as(&ops, path, body).await;
        api_error(&r, 403, "approval_required", None);
        assert_eq!(r.body["error"]["operation"], operation, "{path}");
    }
    nothing_proposed(&api, &before, "listed recoveries without an approval").await;
    // A worker's recovery of its own rows reaches no one else's: not under dual control.
    let r = api.post_as(&worker, "/v1/leases/reset", json!({})).await;
    ok(&r, 200);
    assert_eq!(r.body["reset"], 1);
    assert_eq!(claim_owner(&api, own).await.0, "pending");
}

// --- 4. audit and view records name the principal that wrote them ---

#[tokio::test]
async fn audit_and_view_records_name_the_principal_beside_the_named_actor() {
    let api = start().await;
    let engine = api.token("engine", "operator", None).await;
    let mid = api.enqueue("lab", "MSH|1").await;

    // The attack: a row in someone else's name, with nothing of who wrote it.
    let r = api
        .post_as(
            &engine,
            "/v1/audit",
            json!({ "action": "config.approve", "actor": "alice", "org": "mf" }),
        )
        .await;
    ok(&r, 200);
    let r = api
        .post_as(
            &engine,
            "/v1/audit",
            json!({ "action": "note", "org": "mf" }),
        )
        .await;
    ok(&r, 200);
    let r = api.get("/v1/audit?org=mf").await;
    ok(&r, 200);
    let rows = r.body["rows"].as_array().expect("rows");
    // The actor stays readable (and searchable) as named; who wrote it is beside it.
    assert_eq!(rows[0]["actor"], "alice");
    assert_eq!(rows[0]["principal"], "engine", "{}", r.text());
    assert_eq!(rows[1]["actor"], "engine");
    assert_eq!(rows[1]["principal"], Value::Null);
    let r = api.get("/v1/audit/search?org=mf&actor=alice").await;
    ok(&r, 200);
    assert_eq!(r.body["rows"][0]["principal"], "engine");
    // The principal is part of the chain: it verifies.
    let r = api.get("/v1/audit/verify?org=mf").await;
    ok(&r, 200);
    assert_eq!(r.body["ok"], true, "{}", r.text());

    // A view recorded for a person names the principal too; one without a person names it.
    let r = api
        .post_as(
            &engine,
            &format!("/v1/messages/{mid}/viewed"),
            json!({ "actor": "alice" }),
        )
        .await;
    ok(&r, 200);
    let r = api
        .post_as(&engine, &format!("/v1/messages/{mid}/viewed"), json!({}))
        .await;
    ok(&r, 200);
    let r = api.get(&format!("/v1/messages/{mid}")).await;
    ok(&r, 200);
    let details: Vec<&str> = r.body["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event"] == "viewed")
        .filter_map(|e| e["detail"].as_str())
        .collect();
    assert_eq!(details, ["alice (via engine)", "engine"]);
}

// --- 5. dual control covers every destructive or data-reducing action ---

/// A call as admin carrying `Raftlane-Approval: approval` when given.
async fn with_approval(
    api: &Api,
    method: Method,
    path: &str,
    body: Value,
    approval: Option<u64>,
    if_match: Option<u64>,
) -> Resp {
    let (mut headers, bytes) = raftlane_testkit::http::json_request(Some(ADMIN), Some(body));
    if let Some(id) = approval {
        headers.push(("raftlane-approval", id.to_string()));
    }
    if let Some(v) = if_match {
        headers.push(("if-match", v.to_string()));
    }
    api.send_raw(method, path, &headers, bytes).await
}

/// An approval of `operation` with `params`, requested by `requester` and approved by admin.
async fn approved(api: &Api, requester: &str, operation: &str, params: Value) -> u64 {
    let r = api
        .post_as(
            requester,
            "/v1/approvals",
            json!({ "operation": operation, "params": params }),
        )
        .await;
    ok(&r, 201);
    let id = r.body["id"].as_u64().expect("id");
    let r = api
        .post(
            &format!("/v1/approvals/{id}/decide"),
            json!({ "approve": true }),
        )
        .await;
    ok(&r, 200);
    id
}

#[tokio::test]
async fn every_listed_action_waits_for_its_approval() {
    let api = start().await;
    let mid = api.message_at("lab", "emr").await;
    let version = api.get("/v1/config").await.body["version"]
        .as_u64()
        .expect("v");
    let all = [
        "purge",
        "replay_dead",
        "rotate_key",
        "change_membership",
        "create_token",
        "put_config",
        "reset_leases",
        "recover_leases",
        "sweep_dead_letters",
        "cancel_queued",
        "revoke_token",
        "write_reference",
        "delete_user",
        "release_owner",
        "pause_destination",
    ];
    require_approvals(&api, &all).await;
    let config = api.get("/v1/config").await.body["config"].clone();
    let calls: Vec<(Method, String, Value, &str)> = vec![
        (
            Method::POST,
            "/v1/retention/purge".into(),
            json!({ "kind": "state", "older_than": 0 }),
            "purge",
        ),
        (
            Method::POST,
            "/v1/dead-letters/replay".into(),
            json!({}),
            "replay_dead",
        ),
        (
            Method::POST,
            format!("/v1/messages/{mid}/replay"),
            json!({}),
            "replay_dead",
        ),
        (
            Method::POST,
            "/v1/cluster/membership".into(),
            json!({ "voters": [1] }),
            "change_membership",
        ),
        (
            Method::POST,
            "/v1/cluster/learners".into(),
            json!({ "id": 7, "addr": "10.9.9.9:7000" }),
            "change_membership",
        ),
        (
            Method::POST,
            "/v1/tokens".into(),
            json!({ "name": "new-one", "role": "viewer" }),
            "create_token",
        ),
        (
            Method::PUT,
            "/v1/config".into(),
            config.clone(),
            "put_config",
        ),
        (
            Method::POST,
            "/v1/leases/reset".into(),
            json!({}),
            "reset_leases",
        ),
        (
            Method::POST,
            "/v1/leases/recover".into(),
            json!({ "owner": "o" }),
            "recover_leases",
        ),
        (
            Method::POST,
            "/v1/dead-letters/sweep".into(),
            json!({ "stage": "routed", "keep": [] }),
            "sweep_dead_letters",
        ),
        (
            Method::POST,
            "/v1/lanes/outbound/emr/cancel".into(),
            json!({}),
            "cancel_queued",
        ),
        (
            Method::DELETE,
            "/v1/tokens/someone".into(),
            Value::Null,
            "revoke_token",
        ),
        (
            Method::PUT,
            "/v1/reference/codes".into(),
            json!({ "version": 1, "rows": {} }),
            "write_reference",
        ),
        (
            Method::DELETE,
            "/v1/users/u-1".into(),
            Value::Null,
            "delete_user",
        ),
        (
            Method::DELETE,
            "/v1/owners/engine-1".into(),
            Value::Null,
            "release_owner",
        ),
        (
            Method::POST,
            "/v1/destinations/emr/pause".into(),
            json!({}),
            "pause_destination",
        ),
    ];
    let before = api.digest().await;
    for (method, path, body, operation) in calls {
        let r = with_approval(&api, method, &path, body, None, Some(version + 1)).await;
        api_error(&r, 403, "approval_required", None);
        assert_eq!(r.body["error"]["operation"], operation, "{path}");
    }
    nothing_proposed(&api, &before, "listed actions without their approvals").await;
}

#[tokio::test]
async fn a_message_replay_and_config_changes_that_take_data_away_need_approvals() {
    let api = start().await;
    let ops = api.token("ops", "operator", None).await;
    // A dead letter of its own message.
    api.enqueue("lab", "MSH|dead").await;
    let items = api.claim_ingress("lab", 1).await;
    let mid = items[0]["message_id"].as_u64().expect("mid");
    let r = api
        .post(
            &format!("/v1/rows/{}/dead", items[0]["row_id"]),
            json!({ "fence": items[0]["fence"], "error": "bad" }),
        )
        .await;
    ok(&r, 200);
    require_approvals(&api, &["replay_dead", "purge"]).await;
    let version = || async {
        api.get("/v1/config").await.body["version"]
            .as_u64()
            .expect("v")
    };

    // The per-message replay of a dead letter is a dead-letter replay.
    let before = api.digest().await;
    let path = format!("/v1/messages/{mid}/replay");
    let r = with_approval(&api, Method::POST, &path, json!({}), None, None).await;
    api_error(&r, 403, "approval_required", None);
    assert_eq!(r.body["error"]["params"], json!({ "message_id": mid }));
    nothing_proposed(&api, &before, "a message replay without an approval").await;
    let id = approved(&api, &ops, "replay_dead", json!({ "message_id": mid })).await;
    let r = api
        .send_raw(
            Method::POST,
            &path,
            &[
                ("authorization", format!("Bearer {ops}")),
                ("raftlane-approval", id.to_string()),
            ],
            Vec::new(),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["requeued"], 1);

    // With purge listed and put_config not: shortening retention (what the timer purges by;
    // turning an age on shortens it from forever) and unlisting an action need an approval.
    let current = api.get("/v1/config").await.body["config"].clone();
    for change in [
        json!({ "retention": { "message_bodies_ms": 1 } }),
        json!({ "approvals_required": ["replay_dead"] }),
        json!({ "approvals_required": [] }),
    ] {
        let mut doc = current.clone();
        for (k, v) in change.as_object().expect("object") {
            doc[k] = v.clone();
        }
        let v = version().await;
        let before = api.digest().await;
        let r = with_approval(&api, Method::PUT, "/v1/config", doc, None, Some(v)).await;
        api_error(&r, 403, "approval_required", None);
        assert_eq!(r.body["error"]["operation"], "put_config");
        nothing_proposed(&api, &before, "a config change taking data away").await;
    }
    // A change that takes nothing away needs none.
    let mut unrelated = current.clone();
    unrelated["channels"] = json!({ "lab": { "description": "the lab" } });
    let v = version().await;
    let r = with_approval(
        &api,
        Method::PUT,
        "/v1/config",
        unrelated.clone(),
        None,
        Some(v),
    )
    .await;
    ok(&r, 200);
    // The shortening with its approval goes through.
    let mut shorter = unrelated.clone();
    shorter["retention"]["message_bodies_ms"] = json!(1);
    let v = version().await;
    let params = json!({ "expected_version": v, "config": shorter });
    let id = approved(&api, &ops, "put_config", params).await;
    let r = api
        .send_raw(
            Method::PUT,
            "/v1/config",
            &[
                ("authorization", format!("Bearer {ops}")),
                ("content-type", "application/json".to_string()),
                ("raftlane-approval", id.to_string()),
                ("if-match", v.to_string()),
            ],
            shorter.to_string().into_bytes(),
        )
        .await;
    ok(&r, 200);
}
