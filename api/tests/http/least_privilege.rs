//! Least-privilege reads and scopes beyond channels (docs/SPEC.md §9.4, §9.7): lists carry no
//! bodies, a body read is recorded, the metadata role never reads bodies, audit orgs are
//! scoped, global reads need an unscoped token, lease owner names belong to their principal.

use crate::harness::*;

/// A message routed to `dest` and dead-lettered there: `(message id, dead row id)`.
async fn dead_letter(api: &Api, channel: &str, dest: &str) -> (u64, u64) {
    let id = api.enqueue(channel, "MSH|secret-body").await;
    let item = api.claim_ingress(channel, 1).await.remove(0);
    api.handoff_to(&item, dest, "OUT|secret-payload").await;
    let row = api.claim_head(dest, "w-dead", LONG_TTL).await;
    let r = api
        .post(
            &format!("/v1/rows/{}/dead", row.row_id.0),
            json!({ "fence": row.fence.0, "error": "poison" }),
        )
        .await;
    ok(&r, 200);
    (id, row.row_id.0)
}

#[tokio::test]
async fn lists_carry_no_bodies_and_a_body_read_is_recorded() {
    let api = start().await;
    let (id, row) = dead_letter(&api, "lab", "emr").await;
    let viewer = api.token("vera", "viewer", None).await;

    let list = api.get_as(&viewer, "/v1/messages?channel=lab").await;
    ok(&list, 200);
    assert_eq!(ids_of(&list.body["messages"]), vec![id]);
    assert!(
        list.body["messages"][0].get("raw").is_none(),
        "{}",
        list.body
    );
    assert!(!list.text().contains("secret"), "{}", list.text());
    let dead = api.get_as(&viewer, "/v1/dead-letters").await;
    ok(&dead, 200);
    assert_eq!(dead.body["dead_letters"][0]["id"], row);
    assert!(!dead.text().contains("secret"), "{}", dead.text());

    // A plain read: every member but the bodies, and nothing written.
    let before = api.digest().await;
    let plain = api.get_as(&viewer, &format!("/v1/messages/{id}")).await;
    ok(&plain, 200);
    assert!(!plain.text().contains("secret"), "{}", plain.text());
    assert_eq!(plain.body["message"]["status"], "error");
    nothing_proposed(&api, &before, "a read without bodies").await;

    // A body read: the bodies, and a `viewed` event naming who read them.
    let path = format!("/v1/messages/{id}?body=true&viewer=dr.house");
    let full = api.get_as(&viewer, &path).await;
    ok(&full, 200);
    assert_eq!(full.body["message"]["raw"], "MSH|secret-body");
    let payloads: Vec<&Value> = full.body["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| &r["payload"])
        .collect();
    assert!(
        payloads.contains(&&json!("OUT|secret-payload")),
        "{payloads:?}"
    );
    assert!(full.body["viewed_index"].as_u64().is_some());
    let after = api.get(&format!("/v1/messages/{id}")).await;
    assert_eq!(
        event_kinds(&after.body).last().map(String::as_str),
        Some("viewed")
    );
    let events = after.body["events"].as_array().expect("events");
    assert_eq!(
        events.last().expect("event")["detail"],
        "dr.house (via vera)"
    );

    // A viewer cannot read bodies unrecorded; a worker (who processes them) can.
    let worker = api.token("wanda", "worker", None).await;
    let before = api.digest().await;
    let r = api
        .get_as(
            &viewer,
            &format!("/v1/messages/{id}?body=true&record_view=false"),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    let r = api
        .get_as(
            &worker,
            &format!("/v1/messages/{id}?body=true&record_view=false"),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["message"]["raw"], "MSH|secret-body");
    nothing_proposed(&api, &before, "unrecorded body reads").await;

    // A row read carries its payload: a processing read, not a viewer's.
    api_error(
        &api.get_as(&viewer, &format!("/v1/rows/{row}")).await,
        403,
        "forbidden",
        None,
    );
    ok(&api.get_as(&worker, &format!("/v1/rows/{row}")).await, 200);
}

#[tokio::test]
async fn the_metadata_role_reads_everything_but_bodies() {
    let api = start().await;
    let id = api.enqueue("lab", "MSH|secret-body").await;
    let meta = api.token("mia", "metadata", None).await;
    let list = api.get_as(&meta, "/v1/messages").await;
    ok(&list, 200);
    assert_eq!(ids_of(&list.body["messages"]), vec![id]);
    ok(&api.get_as(&meta, &format!("/v1/messages/{id}")).await, 200);
    let before = api.digest().await;
    let r = api
        .get_as(&meta, &format!("/v1/messages/{id}?body=true"))
        .await;
    api_error(&r, 403, "forbidden", None);
    nothing_proposed(&api, &before, "a metadata principal's body read").await;
    // Like a viewer, it writes nothing.
    let r = api
        .post_as(&meta, "/v1/channels/lab/messages", json!({ "raw": "x" }))
        .await;
    api_error(&r, 403, "forbidden", None);
}

#[tokio::test]
async fn audit_orgs_are_scoped() {
    let api = start().await;
    let clinic = api.token("clinic-auditor", "operator", None).await;
    let r = api
        .post(
            "/v1/tokens",
            json!({ "name": "clinic-auditor", "role": "operator", "orgs": ["clinic"] }),
        )
        .await;
    ok(&r, 201);
    let clinic_new = r.body["token"].as_str().expect("token").to_string();
    assert_ne!(clinic, clinic_new);
    let scoped = api.token("lab-viewer", "viewer", Some(&["lab"])).await;
    let unscoped = api.token("all-viewer", "viewer", None).await;

    let before = api.digest().await;
    for (token, org) in [
        (&clinic_new, "default"),
        (&scoped, "default"),
        (&scoped, "clinic"),
    ] {
        for path in [
            "/v1/audit",
            "/v1/audit/anchor",
            "/v1/audit/verify",
            "/v1/audit/search?actor=admin",
        ] {
            let sep = if path.contains('?') { '&' } else { '?' };
            let r = api.get_as(token, &format!("{path}{sep}org={org}")).await;
            api_error(&r, 403, "forbidden", None);
            message_contains(&r, "audit org");
        }
    }
    let r = api
        .post_as(
            &clinic_new,
            "/v1/audit",
            json!({ "action": "note", "detail": "x" }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    nothing_proposed(&api, &before, "audit calls outside the org scope").await;

    let r = api
        .post_as(
            &clinic_new,
            "/v1/audit",
            json!({ "action": "note", "org": "clinic", "detail": "x" }),
        )
        .await;
    ok(&r, 200);
    ok(&api.get_as(&clinic_new, "/v1/audit?org=clinic").await, 200);
    ok(&api.get_as(&unscoped, "/v1/audit?org=default").await, 200);
    ok(&api.get_as(&unscoped, "/v1/audit?org=clinic").await, 200);
    // Re-created without orgs, the principal loses the earlier scope (unscoped: every org).
    let r = api
        .post(
            "/v1/tokens",
            json!({ "name": "clinic-auditor", "role": "operator" }),
        )
        .await;
    ok(&r, 201);
    let again = r.body["token"].as_str().expect("token").to_string();
    ok(&api.get_as(&again, "/v1/audit?org=default").await, 200);
}

#[tokio::test]
async fn global_reads_need_an_unscoped_token() {
    let api = start().await;
    let scoped = api.token("lab-op", "operator", Some(&["lab"])).await;
    let unscoped = api.token("any-viewer", "viewer", None).await;
    // (`/v1/state` lists a scoped token's own namespaces: `ownership.rs`.)
    for path in [
        "/v1/reference",
        "/v1/approvals?status=pending",
        "/v1/approvals/1",
    ] {
        let r = api.get_as(&scoped, path).await;
        api_error(&r, 403, "forbidden", None);
        message_contains(&r, "channel-scoped");
        assert_ne!(
            api.get_as(&unscoped, path).await.status.as_u16(),
            403,
            "{path}"
        );
    }
}

#[tokio::test]
async fn a_lease_owner_name_belongs_to_its_principal() {
    let api = start().await;
    let a = api.token("worker-a", "worker", None).await;
    let b = api.token("worker-b", "worker", None).await;
    api.enqueue("lab", "MSH|1").await;
    let r = api
        .post_as(
            &a,
            "/v1/lanes/ingress/lab/claim",
            json!({ "owner": "wa", "ttl_ms": LONG_TTL }),
        )
        .await;
    ok(&r, 200);
    let row = r.body["item"]["row_id"].as_u64().expect("row id");
    let before = api.digest().await;
    let r = api
        .post_as(
            &b,
            "/v1/leases/renew",
            json!({ "owner": "wa", "ids": [row], "ttl_ms": 86_400_000u64 }),
        )
        .await;
    api_error(&r, 403, "owner_of_another_principal", Some("owner"));
    let r = api
        .post_as(
            &b,
            "/v1/lanes/ingress/lab/release",
            json!({ "owner": "wa" }),
        )
        .await;
    api_error(&r, 403, "owner_of_another_principal", Some("owner"));
    // Rejected by the state machine: applied as no-ops that change nothing.
    assert_eq!(
        api.digest().await.1,
        before.1,
        "a refused renewal or release changed the state"
    );
    let r = api
        .post_as(
            &a,
            "/v1/leases/renew",
            json!({ "owner": "wa", "ids": [row], "ttl_ms": 1_000 }),
        )
        .await;
    ok(&r, 200);
}
