//! The Rust client's methods against a real three-node cluster, area by area: each call goes
//! over loopback HTTP through the client's own retry loop, and each answer is the contract type
//! the method decodes, checked for what the call did. (Which routes exist is
//! `tests/client_routes.rs`; what each route does in every case is the API's own tests.)

use raftlane_client::contract::{
    ApprovalRequest, AuditAppendRequest, AuthProvider, CancelRequest, ClaimRequest,
    CreateSessionRequest, CreateUserRequest, DeadBody, DeliveryBody, EnqueueRequest,
    FifoClaimRequest, GroupEntry, HeartbeatRequest, KeyedApprovalRequest, KeyedDecideRequest,
    PasswordChange, PurgeKind, PurgeRequest, ReauthChange, ReferenceRequest, ReferenceVersion,
    RenewRequest, ReplayDeadRequest, RoleRequest, RouteBody, RouteHandler, RowStatus, Stage,
    StateOpBody, TokenRequest, TransformBody, UserRolesRequest,
};
use raftlane_client::{
    ApprovalStatus, AuditSearch, ClaimedRow, Client, ClientError, Consistency, DeadLetterFilter,
    DeadStage, LanePage, MessageFilter, MessageRead, MessageStatus, Role, RowAction, RowAnswer,
};
use raftlane_testkit::node::NodeCluster;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

fn code(e: &ClientError) -> (Option<u16>, Option<&str>) {
    (e.status(), e.code())
}

/// A claim of up to ten rows of `stage` for `owner`.
fn claim(stage: Stage, owner: &str, ttl_ms: u64, destination: Option<&str>) -> ClaimRequest {
    ClaimRequest {
        stage,
        limit: 10,
        owner: owner.to_string(),
        ttl_ms,
        channel: None,
        destination: destination.map(str::to_string),
        wait_ms: None,
    }
}

/// A message its producer routed already: one outbound row to `destination`.
fn routed_message(raw: &str, destination: &str) -> EnqueueRequest {
    EnqueueRequest {
        deliveries: Some(vec![DeliveryBody {
            destination: destination.to_string(),
            payload: format!("{raw} for {destination}"),
        }]),
        ..EnqueueRequest::raw(raw)
    }
}

/// The one row a claim of `stage` (and `destination`) hands `owner`.
async fn claim_one(c: &Client, stage: Stage, owner: &str, destination: Option<&str>) -> ClaimedRow {
    let mut rows = c
        .claim_with(&claim(stage, owner, 60_000, destination))
        .await
        .expect("claim")
        .items;
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows.remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn messages_dead_letters_and_the_dashboard() {
    let cluster = NodeCluster::start().await.unwrap();
    let c = cluster.follower_client().await.unwrap();

    // Enqueue with the message's fields and an idempotency key; the repeat is the first one.
    let adt = EnqueueRequest {
        control_id: Some("c-1".into()),
        message_type: Some("ADT^A01".into()),
        ..EnqueueRequest::raw("MSH|ADT|1")
    };
    let first = c.enqueue_with("adt", &adt, Some("k-1")).await.unwrap();
    let again = c.enqueue_with("adt", &adt, Some("k-1")).await.unwrap();
    assert!(!first.duplicate && again.duplicate);
    assert_eq!(again.message_id, first.message_id);
    let id = first.message_id;

    // The list and the count, filtered.
    let adt_only = MessageFilter {
        channel: Some("adt".into()),
        ..MessageFilter::default()
    };
    let page = c.messages(&adt_only).await.unwrap();
    assert_eq!(page.messages.len(), 1, "{page:?}");
    assert_eq!(page.messages[0].message.control_id.as_deref(), Some("c-1"));
    assert_eq!(page.next_cursor, None);
    let received = MessageFilter {
        status: Some(MessageStatus::Received),
        message_type: Some("ADT^A01".into()),
        ..MessageFilter::default()
    };
    assert_eq!(c.count_messages(&received).await.unwrap(), 1);
    let processed = MessageFilter {
        status: Some(MessageStatus::Processed),
        ..MessageFilter::default()
    };
    assert_eq!(c.count_messages(&processed).await.unwrap(), 0);

    // A body read for a viewer records a view; so does an explicit record.
    let read = MessageRead {
        body: true,
        record_view: None,
        viewer: Some("dr-x".into()),
    };
    let detail = c.message_read(&id.to_string(), &read).await.unwrap();
    assert_eq!(detail.message.raw.as_deref(), Some("MSH|ADT|1"));
    assert!(detail.viewed_index.is_some(), "{detail:?}");
    let viewed = c.record_view(id, Some("nurse")).await.unwrap();
    assert!(viewed.index > detail.viewed_index.unwrap_or(0));
    let detail = c.message(id).await.unwrap();
    assert_eq!(detail.message.raw, None, "no body unless asked");
    let views = detail
        .events
        .iter()
        .filter(|e| serde_json::to_value(e.event).ok() == Some(json!("viewed")))
        .count();
    assert_eq!(views, 2, "{:?}", detail.events);

    // A message replayed: its dead ingress row is pending again.
    let ingress = claim_one(&c, Stage::Ingress, "router", None).await;
    let dead = RowAction::Dead(DeadBody {
        fence: Some(ingress.fence),
        error: "unparseable".into(),
    });
    let answer = c.row(ingress.row_id.0, dead).await.unwrap();
    assert!(
        matches!(answer, RowAnswer::Done { ok: true, .. }),
        "{answer:?}"
    );
    assert_eq!(c.replay(id).await.unwrap().requeued, 1);
    let row = c.row_detail(ingress.row_id).await.unwrap().row;
    assert_eq!(row.status, RowStatus::Pending);

    // A dead outbound row: listed and counted with its message's fields, then replayed.
    let lab = c
        .enqueue_with("lab", &routed_message("MSH|ORU|2", "lis"), None)
        .await
        .unwrap();
    let out = claim_one(&c, Stage::Outbound, "sender", Some("lis")).await;
    assert_eq!(out.message_id, lab.message_id);
    let dead = RowAction::Dead(DeadBody {
        fence: Some(out.fence),
        error: "refused by lis".into(),
    });
    c.row(out.row_id.0, dead).await.unwrap();
    let outbound = DeadLetterFilter::default();
    let letters = c.dead_letters(&outbound).await.unwrap().dead_letters;
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0].row.id, out.row_id);
    assert_eq!(letters[0].row.destination_name.as_deref(), Some("lis"));
    assert_eq!(letters[0].row.last_error.as_deref(), Some("refused by lis"));
    assert_eq!(c.count_dead_letters(&outbound).await.unwrap(), 1);
    let ingress_only = DeadLetterFilter {
        stage: DeadStage::Only(Stage::Ingress),
        ..DeadLetterFilter::default()
    };
    assert_eq!(c.count_dead_letters(&ingress_only).await.unwrap(), 0);
    let replayed = c
        .replay_dead(&ReplayDeadRequest {
            channel: None,
            destination: Some("lis".into()),
        })
        .await
        .unwrap();
    assert_eq!(replayed.requeued, 1);
    let all = DeadLetterFilter {
        stage: DeadStage::All,
        ..DeadLetterFilter::default()
    };
    assert_eq!(c.count_dead_letters(&all).await.unwrap(), 0);

    // The figures: row counts, the state's size, traffic per connection.
    let stats = c.stats().await.unwrap();
    assert_eq!(stats.messages, 2);
    assert_eq!(stats.rows["ingress"]["pending"], 1, "{stats:?}");
    assert_eq!(stats.rows["outbound"]["pending"], 1, "{stats:?}");
    let stale = c
        .with_consistency(Consistency::Stale)
        .stats()
        .await
        .unwrap();
    assert!(stale.last_applied <= c.stats().await.unwrap().last_applied);
    let storage = c.storage_stats().await.unwrap();
    assert_eq!(storage.messages, 2);
    assert!(storage.events >= 2 && storage.size_bytes > 0, "{storage:?}");
    let traffic = c.connection_metrics(None, Some(60_000)).await.unwrap();
    let inbound: BTreeMap<&str, u64> = traffic
        .inbound
        .iter()
        .map(|t| (t.channel.as_str(), t.read))
        .collect();
    assert_eq!(inbound, BTreeMap::from([("adt", 1), ("lab", 1)]));
    let lis = traffic
        .destinations
        .iter()
        .find(|d| d.destination == "lis")
        .expect("lis");
    assert_eq!(lis.queue_depth, 1);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_lanes_leases_recovery_and_pauses() {
    let cluster = NodeCluster::start().await.unwrap();
    let c = cluster.follower_client().await.unwrap();
    for n in 0..2 {
        c.enqueue("lab", &format!("MSH|{n}"), None).await.unwrap();
    }

    // Lanes: one, two deep, no holder.
    let lane = c.lane(Stage::Ingress, "lab").await.unwrap();
    assert_eq!((lane.depth, lane.inflight, lane.holder), (2, 0, None));
    let page = c
        .lanes(&LanePage {
            stage: Some(Stage::Ingress),
            ..LanePage::default()
        })
        .await
        .unwrap();
    let names: Vec<&str> = page.lanes.iter().map(|l| l.lane.as_str()).collect();
    assert_eq!(names, ["ingress:lab"]);
    assert_eq!(page.next_cursor, None);

    // A FIFO claim (a wait the head does not need), the lane held, the lease renewed.
    let fifo = FifoClaimRequest {
        owner: "w1".into(),
        ttl_ms: 30_000,
        lane_lease: None,
        row_owner: None,
        wait_ms: Some(200),
    };
    let head = c
        .claim_fifo_with("ingress", "lab", &fifo)
        .await
        .unwrap()
        .item
        .expect("the lane's head");
    assert_eq!(c.held_lanes("w1").await.unwrap().lanes, ["ingress:lab"]);
    let renewal = RenewRequest {
        owner: "w1".into(),
        ids: vec![head.row_id.0],
        ttl_ms: 60_000,
    };
    assert_eq!(c.renew(&renewal).await.unwrap().renewed, 1);
    let row = c.row_detail(head.row_id).await.unwrap().row;
    assert_eq!(row.status, RowStatus::Inflight);
    let held = row.claim.expect("claimed");
    assert_eq!(held.owner, "w1");
    assert!(held.lease_expires_at > head.lease_expires_at, "renewed");
    assert!(
        c.release_lane(Stage::Ingress, "lab", "w1")
            .await
            .unwrap()
            .released
    );
    assert!(c.held_lanes("w1").await.unwrap().lanes.is_empty());

    // Taking work back: a reset, an expired lease reclaimed, a new leader's recovery.
    assert_eq!(
        c.reset_inflight(Some(Stage::Ingress)).await.unwrap().reset,
        1
    );
    let short = c
        .claim_with(&claim(Stage::Ingress, "w2", 1, None))
        .await
        .unwrap();
    assert_eq!(short.items.len(), 2);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let reclaimed = c.reclaim_expired(Some(Stage::Ingress)).await.unwrap();
    assert_eq!(reclaimed.reclaimed, 2);
    let long = c
        .claim_with(&claim(Stage::Ingress, "w3", 60_000, None))
        .await
        .unwrap();
    assert_eq!(long.items.len(), 2);
    let recovered = c.recover_inflight("w4", None).await.unwrap();
    assert_eq!(recovered.recovered, 2);
    assert_eq!(c.lane(Stage::Ingress, "lab").await.unwrap().depth, 2);

    // A paused destination hands nothing out, and says why it is paused.
    for n in 0..2 {
        c.enqueue_with("lab", &routed_message(&format!("ORU|{n}"), "emr"), None)
            .await
            .unwrap();
    }
    let paused = c
        .pause_destination("emr", Some("maintenance"))
        .await
        .unwrap();
    assert!(paused.paused && paused.changed);
    let list = c.paused_destinations().await.unwrap().destinations;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].reason.as_deref(), Some("maintenance"));
    let none = c
        .claim_with(&claim(Stage::Outbound, "sender", 60_000, Some("emr")))
        .await
        .unwrap();
    assert!(none.items.is_empty(), "{none:?}");
    let resumed = c.resume_destination("emr").await.unwrap();
    assert!(!resumed.paused && resumed.changed);
    assert!(c
        .paused_destinations()
        .await
        .unwrap()
        .destinations
        .is_empty());

    // The head cancelled, the other row swept: emr is not among the names kept.
    let cancelled = c
        .cancel(
            "emr",
            &CancelRequest {
                channel: None,
                top_only: true,
            },
        )
        .await
        .unwrap();
    assert_eq!(cancelled.cancelled, 1);
    let swept = c
        .sweep_dead_letters(Stage::Outbound, &["other".to_string()])
        .await
        .unwrap();
    assert_eq!(swept.dead, 1);
    assert_eq!(
        c.count_dead_letters(&DeadLetterFilter::default())
            .await
            .unwrap(),
        1
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn config_audit_state_reference_and_retention() {
    let cluster = NodeCluster::start().await.unwrap();
    let c = cluster.follower_client().await.unwrap();

    // Configuration: a compare-and-set, a stale one refused naming the current version, the
    // earlier version still readable.
    let current = c.config().await.unwrap();
    let mut doc = current.config.clone();
    doc.approvals_required.insert("rotate_key".into());
    let written = c.put_config_written(current.version, &doc).await.unwrap();
    assert_eq!(written.version, current.version + 1);
    let stale = c.put_config(current.version, &doc).await.unwrap_err();
    assert_eq!(code(&stale), (Some(412), Some("version_mismatch")));
    assert_eq!(stale.current_version(), Some(written.version));
    let now = c.config().await.unwrap();
    assert_eq!(now.version, written.version);
    assert!(now.config.approvals_required.contains("rotate_key"));
    assert!(!now.set_by.is_empty());
    let earlier = c.config_version(current.version).await.unwrap();
    assert_eq!(earlier.config, current.config);

    // The audit chain: rows on behalf of a person, listed, searched, anchored, sealed.
    let append = |action: &str| AuditAppendRequest {
        action: action.to_string(),
        channel: None,
        org: Some("acme".into()),
        detail: Some("d".into()),
        actor: Some("dr-x".into()),
    };
    let one = c.audit_append_with(&append("export.pdf")).await.unwrap();
    let two = c.audit_append_with(&append("sign-in")).await.unwrap();
    assert_eq!(two.seq, one.seq + 1);
    let rows = c.audit_rows("acme", None, None).await.unwrap();
    assert_eq!(rows.rows.len(), 2);
    assert_eq!(rows.rows[1].prev_hash, rows.rows[0].hash);
    let later = c.audit_rows("acme", Some(two.seq), None).await.unwrap();
    assert_eq!(later.rows.len(), 1);
    let found = c
        .audit_search(&AuditSearch {
            org: "acme".into(),
            actor: "dr-x".into(),
            action_prefix: Some("export".into()),
            limit: None,
        })
        .await
        .unwrap();
    assert_eq!(found.rows.len(), 1);
    assert_eq!(found.rows[0].action, "export.pdf");
    let anchor = c.audit_anchor("acme").await.unwrap();
    assert_eq!((anchor.count, anchor.head.as_str()), (2, two.hash.as_str()));
    let sealed = c.audit_seal("acme").await.unwrap();
    assert_eq!(sealed.seq, two.seq + 1);
    let verified = c.audit_verify_against(&anchor).await.unwrap();
    assert!(verified.ok, "{verified:?}");
    assert_eq!((verified.count, verified.eras), (3, 1));

    // Transform state, written by a transform and read back.
    c.enqueue("lab", "MSH|1", None).await.unwrap();
    let row = claim_one(&c, Stage::Ingress, "router", None).await;
    let route = RowAction::Route(RouteBody {
        fence: row.fence,
        handlers: vec![RouteHandler {
            handler: "h".into(),
            payload: "p".into(),
        }],
        disposition: None,
        claim_next: None,
    });
    c.row(row.row_id.0, route).await.unwrap();
    let row = claim_one(&c, Stage::Routed, "transformer", None).await;
    let transform = RowAction::Transform(TransformBody {
        fence: row.fence,
        deliveries: vec![DeliveryBody {
            destination: "ehr".into(),
            payload: "bundle".into(),
        }],
        state_ops: vec![StateOpBody {
            namespace: "lab".into(),
            key: "last".into(),
            value: json!({ "n": 1 }),
        }],
        claim_next: None,
    });
    c.row(row.row_id.0, transform).await.unwrap();
    let namespaces = c.namespaces().await.unwrap().namespaces;
    assert_eq!(namespaces.len(), 1);
    assert_eq!(namespaces[0].namespace, "lab");
    let ns = c.namespace("lab", true).await.unwrap();
    let entries = ns.entries.expect("entries asked for");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].value, json!({ "n": 1 }));
    assert_eq!(c.namespace("lab", false).await.unwrap().entries, None);
    let entry = c.state_entry("lab", "last").await.unwrap();
    assert_eq!(
        (entry.key.as_str(), entry.value.clone()),
        ("last", json!({ "n": 1 }))
    );

    // A reference set under a text label.
    let set = ReferenceRequest {
        version: ReferenceVersion::Label("v1".into()),
        rows: BTreeMap::from([("a".to_string(), "1".to_string())]),
    };
    assert_eq!(c.put_reference("codes", &set).await.unwrap().row_count, 1);
    let codes = c.reference("codes").await.unwrap();
    assert_eq!(codes.label.as_deref(), Some("v1"));
    assert_eq!(codes.rows, set.rows);
    let sets = c.reference_sets().await.unwrap().sets;
    assert_eq!(sets.len(), 1);
    assert_eq!(sets[0].name, "codes");

    // Retention: the state purged, the entry gone.
    let purge = PurgeRequest {
        kind: PurgeKind::State,
        older_than_ms: None,
        older_than: Some(u64::MAX),
    };
    assert_eq!(c.purge(&purge).await.unwrap().purged, 1);
    let gone = c.state_entry("lab", "last").await.unwrap_err();
    assert_eq!(code(&gone).0, Some(404));
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn approvals_tokens_owner_names_and_keys() {
    let cluster = NodeCluster::start().await.unwrap();
    let admin = cluster.follower_client().await.unwrap();

    // Two operators, made through the client; the list shows them, never a token.
    let operator = |name: &str| TokenRequest {
        name: name.to_string(),
        role: Role::Operator,
        channels: None,
        orgs: None,
    };
    let alice = admin.create_token(&operator("alice")).await.unwrap();
    let bob = admin.create_token(&operator("bob")).await.unwrap();
    assert_eq!(
        (alice.name.as_str(), alice.role.as_str()),
        ("alice", "operator")
    );
    let names: Vec<String> = admin
        .tokens()
        .await
        .unwrap()
        .tokens
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"alice".into()) && names.contains(&"bob".into()));
    let alice_c = admin.with_token(alice.token);
    let bob_c = admin.with_token(bob.token);

    // Dual control on purges: refused without an approval, run with bob's, used up.
    let current = admin.config().await.unwrap();
    let mut doc = current.config;
    doc.approvals_required.insert("purge".into());
    admin.put_config(current.version, &doc).await.unwrap();
    let purge = PurgeRequest {
        kind: PurgeKind::State,
        older_than_ms: Some(0),
        older_than: None,
    };
    let refused = alice_c.purge(&purge).await.unwrap_err();
    assert_eq!(code(&refused), (Some(403), Some("approval_required")));
    let asked = alice_c
        .create_approval(&ApprovalRequest {
            operation: "purge".into(),
            params: serde_json::to_value(&purge).unwrap(),
            ttl_ms: None,
        })
        .await
        .unwrap();
    let pending = admin.pending_approvals(None).await.unwrap().approvals;
    assert!(pending.iter().any(|a| a.id == asked.id), "{pending:?}");
    let own = alice_c.decide_approval(asked.id, true).await.unwrap_err();
    assert_eq!(code(&own), (Some(403), Some("self_approval")));
    let decided = bob_c.decide_approval(asked.id, true).await.unwrap();
    assert!(decided.approved);
    alice_c.with_approval(asked.id).purge(&purge).await.unwrap();
    let used = admin.approval(asked.id).await.unwrap();
    assert_eq!(used.status, ApprovalStatus::Consumed);
    assert_eq!(used.requester, "alice");

    // Keyed approvals: the caller's key, requester and times; decided once.
    let keyed = KeyedApprovalRequest {
        key: "exp-1".into(),
        operation: "export".into(),
        params: "{}".into(),
        requester: "eve".into(),
        requested_at: 1_000,
        expires_at: None,
    };
    let created = admin.create_keyed_approval(&keyed).await.unwrap();
    let view = admin.keyed_approval("exp-1").await.unwrap();
    assert_eq!((view.id, view.key.as_deref()), (created.id, Some("exp-1")));
    assert_eq!(view.status, ApprovalStatus::Pending);
    let decision = KeyedDecideRequest {
        status: ApprovalStatus::Approved,
        approver: Some("dan".into()),
        decided_at: 2_000,
    };
    let decided = admin
        .decide_keyed_approval("exp-1", &decision)
        .await
        .unwrap();
    assert_eq!(
        (decided.id, decided.status),
        (created.id, ApprovalStatus::Approved)
    );
    let twice = admin
        .decide_keyed_approval("exp-1", &decision)
        .await
        .unwrap_err();
    assert_eq!(code(&twice), (Some(409), Some("already_decided")));

    // Owner names: reserved for alice, read, released.
    let bound = admin.reserve_owner("worker-7", "alice").await.unwrap();
    assert_eq!(bound.principal.as_deref(), Some("alice"));
    assert_eq!(bound.changed, Some(true));
    let read = admin.owner("worker-7").await.unwrap();
    assert_eq!(read.principal.as_deref(), Some("alice"));
    assert_eq!(read.changed, None, "a read changes nothing");
    assert_eq!(
        admin.release_owner("worker-7").await.unwrap().changed,
        Some(true)
    );
    assert_eq!(admin.owner("worker-7").await.unwrap().principal, None);

    // Revoking bob: his token stops working (on the node the client asks, once it applied
    // the revocation: a node that lags still knows the token for a moment).
    assert!(admin.revoke_token("bob").await.unwrap().revoked);
    let started = std::time::Instant::now();
    loop {
        match bob_c.stats().await {
            Err(e) if code(&e) == (Some(401), Some("unauthorized")) => break,
            other => assert!(
                started.elapsed() < Duration::from_secs(10),
                "bob's token still answers: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!admin
        .tokens()
        .await
        .unwrap()
        .tokens
        .iter()
        .any(|t| t.name == "bob"));

    // Key rotation: bad input named; a cluster without a keyring says so.
    let bad = admin.rotate_keys(Some(0)).await.unwrap_err();
    assert_eq!((bad.status(), bad.field()), (Some(400), Some("batch_size")));
    let off = admin.rotate_keys(None).await.unwrap_err();
    assert_eq!(code(&off), (Some(409), Some("no_keyring")));
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn users_roles_groups_and_sessions() {
    let cluster = NodeCluster::start().await.unwrap();
    let c = cluster.follower_client().await.unwrap();

    let user = CreateUserRequest {
        id: "u1".into(),
        username: "ann".into(),
        auth_provider: AuthProvider::Local,
        display_name: Some("Ann".into()),
        email: None,
        password_hash: Some("h1".into()),
        must_change_password: false,
    };
    assert_eq!(c.create_user(&user).await.unwrap().id, "u1");
    let taken = c.create_user(&user).await.unwrap_err();
    assert_eq!(code(&taken), (Some(409), Some("already_exists")));
    assert_eq!(c.user("u1").await.unwrap().username, "ann");
    let found = c.users_limited(Some("ann"), Some(0)).await.unwrap();
    assert_eq!((found.count, found.users.len()), (1, 0));
    let change = PasswordChange {
        password_hash: "h2".into(),
        must_change_password: true,
    };
    assert!(
        c.change_user("u1", "password", &change)
            .await
            .unwrap()
            .changed
    );
    let ann = c.user("u1").await.unwrap();
    assert_eq!(ann.password_hash.as_deref(), Some("h2"));
    assert!(ann.must_change_password);
    let secrets = c.user_secrets("u1").await.unwrap();
    assert_eq!(secrets.totp_secret, None);

    // Roles and the directory groups that give them.
    let role = RoleRequest {
        display_name: "Auditor".into(),
        description: None,
        builtin: false,
    };
    assert_eq!(c.put_role("auditor", &role).await.unwrap().id, "auditor");
    assert!(c
        .roles()
        .await
        .unwrap()
        .roles
        .iter()
        .any(|r| r.id == "auditor" && r.display_name == "Auditor"));
    let assign = UserRolesRequest {
        role_ids: vec!["auditor".into()],
        assigned_by: Some("admin".into()),
    };
    assert_eq!(c.set_user_roles("u1", &assign).await.unwrap().assigned, 1);
    assert_eq!(c.user_roles("u1").await.unwrap().role_ids, ["auditor"]);
    let entries = vec![GroupEntry {
        group: "staff".into(),
        value: "auditor".into(),
    }];
    assert_eq!(c.put_group_map("roles", entries).await.unwrap().stored, 1);
    let groups = ["staff".to_string(), "nobody".to_string()];
    let map = c.group_map_for("roles", Some(&groups)).await.unwrap();
    assert_eq!(map.values, Some(vec!["auditor".to_string()]));
    assert_eq!(c.group_map("roles").await.unwrap().values, None);

    // Sessions: created, read, re-authenticated, capped, revoked, purged once expired.
    let clock = c.stats().await.unwrap().clock;
    let session = |hash: &str, expires_at: u64| CreateSessionRequest {
        token_hash: hash.to_string(),
        user_id: "u1".into(),
        expires_at,
        client: Some("web".into()),
        seed_reauth: true,
        at: None,
    };
    let day = clock + 86_400_000;
    c.create_session(&session("th-1", day)).await.unwrap();
    assert_eq!(c.session("th-1").await.unwrap().user_id, "u1");
    let reauth = ReauthChange {
        client: Some("cli".into()),
        at: None,
    };
    assert!(
        c.change_session_with("th-1", "reauth", &reauth)
            .await
            .unwrap()
            .changed
    );
    assert_eq!(
        c.session("th-1").await.unwrap().client.as_deref(),
        Some("cli")
    );
    c.create_session(&session("th-2", day)).await.unwrap();
    assert_eq!(c.user_sessions("u1").await.unwrap().sessions.len(), 2);
    assert_eq!(c.cap_user_sessions("u1", 1).await.unwrap().revoked, 1);
    assert_eq!(c.revoke_user_sessions("u1", None).await.unwrap().revoked, 1);
    assert!(c.user_sessions("u1").await.unwrap().sessions.is_empty());
    c.create_session(&session("th-3", clock + 300))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(c.purge_expired_sessions().await.unwrap().purged, 1);
    assert_eq!(code(&c.session("th-3").await.unwrap_err()).0, Some(404));

    assert!(c.delete_user("u1").await.unwrap().deleted);
    assert_eq!(code(&c.user("u1").await.unwrap_err()).0, Some(404));
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn engine_coordination() {
    let cluster = NodeCluster::start().await.unwrap();
    let c = cluster.follower_client().await.unwrap();

    let beat = HeartbeatRequest {
        host: Some("host-a".into()),
        pid: Some(42),
    };
    c.engine_heartbeat("e1", &beat).await.unwrap();
    let nodes = c.engine_nodes().await.unwrap();
    assert_eq!(nodes.nodes.len(), 1);
    assert_eq!(
        (nodes.nodes[0].node_id.as_str(), nodes.nodes[0].pid),
        ("e1", Some(42))
    );
    assert_eq!(nodes.nodes[0].status, "active");

    let won = c.campaign("sweeper", "e1", 10_000).await.unwrap();
    assert_eq!(won.owner.as_deref(), Some("e1"));
    let lost = c.campaign("sweeper", "e2", 10_000).await.unwrap();
    assert_eq!((lost.owner.as_deref(), lost.fence), (Some("e1"), won.fence));
    assert_eq!(
        c.leadership("sweeper").await.unwrap().owner.as_deref(),
        Some("e1")
    );
    assert!(c.resign("sweeper", "e1").await.unwrap().resigned);
    assert_eq!(c.leadership("sweeper").await.unwrap().owner, None);

    assert_eq!(c.bump_counter("batches").await.unwrap().value, 1);
    assert_eq!(c.bump_counter("batches").await.unwrap().value, 2);
    assert_eq!(c.counter("batches").await.unwrap().value, 2);

    assert!(c.engine_leave("e1").await.unwrap().left);
    let nodes = c.engine_nodes().await.unwrap();
    assert_eq!(nodes.nodes[0].status, "left");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_administration_and_probes() {
    let cluster = NodeCluster::start().await.unwrap();
    let c = cluster.client();
    c.enqueue("lab", "MSH|1", None).await.unwrap();

    let status = c.cluster().await.unwrap();
    assert_eq!(status.membership.len(), 3);
    let leader = status.leader_id.expect("a leader");
    let digest = c.state_digest().await.unwrap();
    assert_eq!(digest.digest.len(), 64);
    assert!((1..=3).contains(&digest.node_id));

    // A snapshot on demand, and a backup streamed into memory.
    let taken = c.snapshot().await.unwrap();
    assert!(taken.index > 0);
    let mut file = Vec::new();
    let backup = c.backup(&mut file).await.unwrap();
    assert_eq!(backup.bytes, file.len() as u64);
    assert!(
        backup.bytes > 0 && backup.index >= taken.index,
        "{backup:?} {taken:?}"
    );
    assert!((1..=3).contains(&backup.node_id));

    // The log format: raising it to the one it has already is accepted and changes nothing.
    let format = c.log_format().await.unwrap();
    assert!(format.reads.contains(&format.log_format), "{format:?}");
    let raised = c.raise_log_format(format.log_format).await.unwrap();
    assert_eq!(raised.log_format, format.log_format);

    // Leadership handed to another voter.
    let to = (1..=3).find(|id| *id != leader).expect("another voter");
    let moved = c.transfer_leader(Some(to)).await.unwrap();
    assert_eq!(moved.leader_id, Some(to));

    // A learner added, the voters kept as they are.
    let fourth = cluster.start_unconfigured(4).await.expect("node 4");
    let ack = c.add_learner(4, &fourth.addr.to_string()).await.unwrap();
    assert!(ack.ok);
    assert!(c.change_membership(&[1, 2, 3]).await.unwrap().ok);
    let members: Vec<(u64, bool)> = c
        .cluster()
        .await
        .unwrap()
        .membership
        .iter()
        .map(|m| (m.id, m.voter))
        .collect();
    assert!(members.contains(&(4, false)), "{members:?}");

    // What a node serves without a token.
    assert_eq!(c.healthz().await.unwrap().status, "ok");
    assert!(c.readyz().await.unwrap().ready);
    assert!(c.metrics().await.unwrap().contains("raftlane_"));
    let doc = c.openapi().await.unwrap();
    assert!(doc.0["paths"].get("/v1/stats").is_some());
    let page = c.operator_page().await.unwrap();
    assert!(page.to_lowercase().contains("<html"), "{page:.200}");
    fourth.shutdown().await;
    cluster.shutdown().await;
}
