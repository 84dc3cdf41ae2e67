//! Every contract type, serialized from example values, fits the schema the OpenAPI document
//! gives it: each member it sends is declared, each required member is sent, types and enums
//! agree. The examples fill every optional member once and leave it out once, so a serde
//! attribute whose effect the schema derive does not mirror (on a contract type, or on a
//! state-machine type an answer carries, whose schema is derived where it is declared) fails
//! here.

use raftlane_contract::schema::{conforms, JsonSchema, Schemas};
use raftlane_contract::*;
use raftlane_statemachine::model::approval::{Approval, ApprovalStatus};
use raftlane_statemachine::model::audit::AuditRow;
use raftlane_statemachine::model::config::{
    ChannelConfig, DestinationConfig, HandlerConfig, RetentionConfig, RetryPolicy,
};
use raftlane_statemachine::model::lane::LaneLease;
use raftlane_statemachine::model::message::{
    Correlation, Event, EventKind, Message, MessageStatus,
};
use raftlane_statemachine::model::principal::{Principal, Role};
use raftlane_statemachine::model::response::CapturedResponse;
use raftlane_statemachine::model::state::ReferenceSnapshot;
use raftlane_statemachine::query::audit::Verification;
use raftlane_statemachine::query::{LaneView, MessageView};
use raftlane_statemachine::row::{Claim, WorkRow};
use raftlane_statemachine::FifoEmpty;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Examples and the schema each must fit, checked once the document's components exist.
struct Examples {
    schemas: Schemas,
    cases: Vec<(String, Value, Value)>,
}

impl Examples {
    fn answer<T: Serialize + JsonSchema>(&mut self, example: &T) {
        let schema = self.schemas.answer::<T>();
        self.push::<T>(schema, example);
    }

    fn request<T: Serialize + JsonSchema>(&mut self, example: &T) {
        let schema = self.schemas.request::<T>();
        self.push::<T>(schema, example);
    }

    /// `example`, a value of another type that serializes as an `S`, against `S`'s request
    /// schema.
    fn request_as<S: JsonSchema>(&mut self, example: &impl Serialize) {
        let schema = self.schemas.request::<S>();
        self.push::<S>(schema, example);
    }

    fn push<T>(&mut self, schema: Value, example: &impl Serialize) {
        let value = serde_json::to_value(example).expect("examples serialize");
        self.cases
            .push((std::any::type_name::<T>().to_string(), value, schema));
    }

    fn check(self) -> usize {
        let mut doc = json!({ "components": { "schemas": {} } });
        let mut cases = json!(self
            .cases
            .iter()
            .map(|(_, _, s)| s.clone())
            .collect::<Vec<_>>());
        // The request schemas' refs are final once `finish` has named them: carry the case
        // schemas through it inside the document.
        doc["cases"] = cases.take();
        self.schemas.finish(&mut doc);
        let components = &doc["components"]["schemas"];
        let mut failures = Vec::new();
        for (i, (name, value, _)) in self.cases.iter().enumerate() {
            if let Err(e) = conforms(value, &doc["cases"][i], components) {
                failures.push(format!("{name}: {e}\n  value: {value}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        self.cases.len()
    }
}

fn claimed(full: bool) -> ClaimedRow {
    ClaimedRow {
        row_id: RowId(7),
        message_id: MessageId(3),
        stage: Stage::Outbound,
        channel_id: "lab".into(),
        destination_name: full.then(|| "emr".into()),
        handler_name: full.then(|| "h".into()),
        payload: "MSH|".into(),
        attempts: 1,
        fence: Fence(42),
        lease_expires_at: 1_000,
        created_at: None,
    }
}

fn message(full: bool) -> Message {
    let some = |s: &str| full.then(|| s.to_string());
    Message {
        id: MessageId(3),
        channel_id: "lab".into(),
        received_at: 5,
        source_type: some("mllp"),
        control_id: some("c1"),
        message_type: some("ADT^A01"),
        raw: "MSH|".into(),
        status: MessageStatus::Processed,
        error: some("e"),
        summary: some("s"),
        metadata: some("{\"k\":1}"),
        correlation: full.then_some(Correlation {
            correlation_id: MessageId(1),
            root_id: MessageId(1),
            depth: 1,
            reingress_of_seq: 0,
        }),
        idempotency_key: some("k"),
        purged: false,
    }
}

fn work_row(full: bool) -> WorkRow {
    let some = |s: &str| full.then(|| s.to_string());
    WorkRow {
        id: RowId(9),
        message_id: MessageId(3),
        stage: Stage::Routed,
        channel_id: "lab".into(),
        destination_name: some("emr"),
        handler_name: some("h"),
        payload: "p".into(),
        status: RowStatus::Inflight,
        attempts: 2,
        next_attempt_at: 10,
        last_error: some("boom"),
        created_at: 1,
        updated_at: 2,
        claim: full.then(|| Claim {
            owner: "w".into(),
            lease_expires_at: 20,
            fence: Fence(4),
        }),
        last_fence: full.then_some(Fence(3)),
    }
}

fn config_doc() -> ConfigDoc {
    let mut doc = ConfigDoc::default();
    doc.channels.insert(
        "lab".into(),
        ChannelConfig {
            description: Some("d".into()),
        },
    );
    doc.channels.insert("adt".into(), ChannelConfig::default());
    doc.destinations.insert(
        "emr".into(),
        DestinationConfig {
            url: Some("http://emr".into()),
            retry: Some(RetryPolicy {
                max_attempts: Some(3),
                backoff_ms: 100,
                multiplier_milli: 2000,
                max_backoff_ms: 1000,
            }),
        },
    );
    doc.destinations
        .insert("billing".into(), DestinationConfig::default());
    doc.handlers.insert(
        "h".into(),
        HandlerConfig {
            channel: Some("lab".into()),
        },
    );
    doc.retention = RetentionConfig {
        message_bodies_ms: Some(1),
        dead_letters_ms: Some(2),
        state_ms: None,
        dedupe_window_ms: Some(4),
    };
    doc.approvals_required.insert("purge".into());
    doc
}

fn each_action() -> Vec<RowAction> {
    vec![
        RowAction::Route(RouteBody {
            fence: Fence(1),
            handlers: vec![RouteHandler {
                handler: "h".into(),
                payload: "p".into(),
            }],
            disposition: Some(RouteDisposition::Routed),
            claim_next: None,
        }),
        RowAction::Handoff(HandoffBody {
            fence: Fence(1),
            deliveries: vec![DeliveryBody {
                destination: "d".into(),
                payload: "p".into(),
            }],
            disposition: None,
            claim_next: None,
        }),
        RowAction::Handoff(HandoffBody {
            fence: Fence(1),
            deliveries: vec![],
            disposition: Some(HandoffDisposition::Filtered),
            claim_next: None,
        }),
        RowAction::Transform(TransformBody {
            fence: Fence(1),
            deliveries: vec![],
            state_ops: vec![StateOpBody {
                namespace: "n".into(),
                key: "k".into(),
                value: json!({ "a": [1, 2] }),
            }],
            claim_next: None,
        }),
        RowAction::Done(DoneBody {
            fence: Fence(1),
            claim_next: Some(ClaimNext {
                owner: "w".into(),
                ttl_ms: 5,
            }),
        }),
        RowAction::Response(ResponseBody {
            fence: Fence(1),
            body: "b".into(),
            outcome: "ok".into(),
            detail: Some("d".into()),
            reingress_to: Some("loop".into()),
        }),
        RowAction::Fail(FailBody {
            fence: Fence(1),
            error: "e".into(),
            retry: Some(RetryBody {
                max_attempts: None,
                backoff_ms: 1,
                multiplier: 1.5,
                max_backoff_ms: 9,
            }),
        }),
        RowAction::Dead(DeadBody {
            fence: None,
            error: "e".into(),
        }),
        RowAction::Reingress(ReingressBody {
            fence: Fence(1),
            loopback_channel: "loop".into(),
            depth_cap: Some(2),
            child_key: None,
            control_id: None,
            message_type: None,
            summary: None,
            peek_failed: None,
        }),
        RowAction::Reingress(ReingressBody {
            fence: Fence(1),
            loopback_channel: "loop".into(),
            depth_cap: None,
            child_key: Some("0123456789abcdef0123456789abcdef".into()),
            control_id: Some("R1".into()),
            message_type: Some("RSP^K11".into()),
            summary: Some("reply".into()),
            peek_failed: Some(true),
        }),
    ]
}

#[test]
fn examples_conform_to_their_schemas() {
    let mut x = Examples {
        schemas: Schemas::new(),
        cases: Vec::new(),
    };

    // messages
    x.request(&EnqueueRequest::raw("MSH|"));
    x.request(&EnqueueRequest {
        raw: "MSH|".into(),
        control_id: Some("c".into()),
        message_type: Some("t".into()),
        source_type: Some("s".into()),
        summary: Some("s".into()),
        metadata: Some(json!({ "k": 1 })),
        deliveries: Some(vec![DeliveryBody {
            destination: "d".into(),
            payload: "p".into(),
        }]),
        status: None,
        error: None,
    });
    x.request(&EnqueueRequest {
        status: Some(raftlane_statemachine::wire::command::ReceivedStatus::Error),
        error: Some("bad parse".into()),
        ..EnqueueRequest::raw("MSH|")
    });
    x.answer(&Enqueued {
        message_id: MessageId(4),
        duplicate: true,
        index: 12,
    });
    x.answer(&MessageList {
        messages: vec![
            ListedMessage {
                message: MessageMeta::split(message(true)).0,
                last_event: Some(EventKind::Received),
            },
            ListedMessage {
                message: MessageMeta::split(message(false)).0,
                last_event: None,
            },
        ],
        next_cursor: Some(2),
    });
    for (full, bodies) in [(true, true), (false, false), (true, false)] {
        x.answer(&MessageDetail::new(
            MessageView {
                message: message(full),
                events: vec![Event {
                    ts: 1,
                    event: EventKind::Delivered,
                    destination: full.then(|| "emr".into()),
                    detail: full.then(|| "d".into()),
                }],
                rows: vec![work_row(full)],
                responses: vec![CapturedResponse {
                    message_id: MessageId(3),
                    destination: "emr".into(),
                    response_seq: 0,
                    body: "b".into(),
                    outcome: "ok".into(),
                    detail: full.then(|| "d".into()),
                    captured_at: 3,
                }],
            },
            bodies,
        ));
    }
    x.answer(&Requeued {
        index: 1,
        requeued: 2,
    });
    x.request(&ReplayDeadRequest::default());
    x.request(&ReplayDeadRequest {
        channel: Some("c".into()),
        destination: Some("d".into()),
    });
    x.answer(&DeadLetters {
        dead_letters: vec![
            DeadLetterRow {
                row: RowMeta::split(work_row(true)).0,
                control_id: Some("C1".into()),
                message_type: Some("ADT^A01".into()),
                received_at: Some(7),
                summary: Some("s".into()),
            },
            DeadLetterRow {
                row: RowMeta::split(work_row(false)).0,
                control_id: None,
                message_type: None,
                received_at: None,
                summary: None,
            },
        ],
    });
    x.answer(&Count { count: 4 });
    // engine coordination
    x.request(&HeartbeatRequest::default());
    x.request(&HeartbeatRequest {
        host: Some("h".into()),
        pid: Some(1),
    });
    x.answer(&HeartbeatAck { index: 1 });
    x.answer(&NodeLeft {
        left: true,
        index: 2,
    });
    x.answer(&EngineNodes {
        nodes: vec![EngineNode {
            node_id: "a".into(),
            host: None,
            pid: None,
            started_at: 1,
            last_seen: 2,
            status: "active".into(),
        }],
        now: 3,
    });
    x.request(&CampaignRequest {
        node_id: "a".into(),
        ttl_ms: 5,
    });
    x.request(&ResignRequest {
        node_id: "a".into(),
    });
    x.answer(&Resigned {
        resigned: true,
        index: 4,
    });
    x.answer(&Leadership::of("mf".into(), None, 6));
    x.answer(&CounterValue {
        name: "config_version".into(),
        value: 7,
    });
    x.answer(&HeldLanes {
        owner: "a".into(),
        lanes: vec!["outbound:ob1".into()],
    });
    x.request(&KeyedApprovalRequest {
        key: "ap-1".into(),
        operation: "replay_dead".into(),
        params: "{}".into(),
        requester: "alice".into(),
        requested_at: 5,
        expires_at: None,
    });
    x.request(&KeyedDecideRequest {
        status: ApprovalStatus::Expired,
        approver: None,
        decided_at: 6,
    });
    x.answer(&KeyedDecided {
        key: "ap-1".into(),
        id: ApprovalId(3),
        status: ApprovalStatus::Rejected,
        index: 7,
    });
    x.request(&ViewedRequest::default());
    x.request(&ViewedRequest {
        actor: Some("alice".into()),
    });
    x.answer(&Viewed { index: 9 });
    x.answer(&RowDetail {
        row: work_row(true),
    });
    x.request(&StageScope::default());
    x.request(&StageScope {
        stage: Some(Stage::Outbound),
    });
    x.answer(&Reclaimed {
        index: 1,
        reclaimed: 2,
    });
    x.answer(&ResetRows { index: 1, reset: 2 });
    x.request(&RecoverRequest {
        owner: "node-a:1".into(),
        lane_owner: Some("node-a".into()),
    });
    x.request(&RecoverRequest {
        owner: "node-a:1".into(),
        lane_owner: None,
    });
    x.answer(&Recovered {
        index: 1,
        recovered: 3,
    });
    x.request(&SweepRequest {
        stage: Stage::Outbound,
        keep: vec!["OB1".into()],
    });
    x.answer(&Swept { index: 1, dead: 1 });
    x.answer(&ConnectionMetrics {
        inbound: vec![InboundTraffic {
            channel: "IB".into(),
            read: 2,
            errored: 1,
            last_at: Some(5),
        }],
        destinations: vec![DestinationTraffic {
            channel: "IB".into(),
            destination: "OB1".into(),
            queue_depth: 1,
            written: 1,
            dead: 0,
            oldest_pending_at: None,
            recent_done: 1,
            last_done_at: Some(6),
        }],
    });
    x.answer(&StorageStats {
        messages: 1,
        events: 3,
        size_bytes: 900,
        last_applied: 12,
    });
    let mut rows = BTreeMap::new();
    rows.insert(
        "outbound".to_string(),
        BTreeMap::from([("pending".to_string(), 3u64)]),
    );
    x.answer(&Stats {
        clock: 1,
        last_applied: 2,
        messages: 3,
        rows,
    });

    // work
    x.request(&FifoClaimRequest {
        owner: "w".into(),
        ttl_ms: 5,
        lane_lease: None,
        row_owner: None,
        wait_ms: None,
    });
    x.request(&FifoClaimRequest {
        owner: "node-a".into(),
        ttl_ms: 5,
        lane_lease: Some(false),
        row_owner: Some("node-a:1".into()),
        wait_ms: Some(5_000),
    });
    for claim in [
        Ok(claimed(true)),
        Ok(claimed(false)),
        Err(FifoEmpty::Empty),
        Err(FifoEmpty::NotDue { due_at: 5 }),
        Err(FifoEmpty::LaneBusy {
            holder: "w".into(),
            expires_at: 9,
        }),
    ] {
        x.answer(&FifoClaim::from(claim));
    }
    x.request(&ReleaseRequest { owner: "w".into() });
    x.answer(&Released { released: true });
    x.request(&CancelRequest::default());
    x.request(&CancelRequest {
        channel: Some("c".into()),
        top_only: true,
    });
    x.answer(&Cancelled { cancelled: 2 });
    x.request(&ClaimRequest {
        stage: Stage::Outbound,
        limit: 3,
        owner: "w".into(),
        ttl_ms: 5,
        channel: Some("c".into()),
        destination: Some("d".into()),
        wait_ms: Some(250),
    });
    x.answer(&Claimed {
        items: vec![claimed(true), claimed(false)],
    });
    x.request(&RenewRequest {
        owner: "w".into(),
        ids: vec![1, 2],
        ttl_ms: 5,
    });
    x.answer(&Renewed { renewed: 2 });
    for holder in [
        Some(LaneLease {
            owner: "w".into(),
            expires_at: 3,
        }),
        None,
    ] {
        let status = LaneStatus::at(
            LaneView {
                lane: "outbound:lab".into(),
                stage: Stage::Outbound,
                name: "lab".into(),
                depth: 2,
                oldest_created_at: holder.as_ref().map(|_| 1),
                inflight: 1,
                holder,
            },
            5,
        );
        x.answer(&status);
        x.answer(&LaneList {
            lanes: vec![status],
            next_cursor: Some("outbound:lab".into()),
        });
    }
    x.answer(&LaneList {
        lanes: Vec::new(),
        next_cursor: None,
    });

    // rows
    let actions = each_action();
    for action in &actions {
        x.request_as::<RowActionBody>(&action.body().expect("a body"));
    }
    x.request(&RowActionsRequest {
        actions: actions
            .into_iter()
            .enumerate()
            .map(|(i, action)| RowActionItem {
                row: i as u64,
                action,
            })
            .collect(),
    });
    let answers = [
        RowAnswer::HandedOff {
            applied: true,
            index: 1,
            next: None,
        },
        RowAnswer::Done {
            index: 2,
            next: None,
            ok: true,
        },
        RowAnswer::Done {
            index: 2,
            next: Some(FifoClaim::from(Ok(claimed(true)))),
            ok: true,
        },
        RowAnswer::Failed {
            dead: false,
            index: 3,
            next_attempt_at: 9,
        },
        RowAnswer::Reingressed {
            child_message_id: Some(MessageId(5)),
            index: 4,
        },
        RowAnswer::Reingressed {
            child_message_id: None,
            index: 4,
        },
    ];
    for a in &answers {
        x.answer(a);
    }
    let mut extra = serde_json::Map::new();
    extra.insert("current_version".into(), json!(3));
    let refused = ItemError {
        error: ErrorDetail {
            code: "stale_fence".into(),
            message: "m".into(),
            field: Some("fence".into()),
            extra,
        },
        status: 409,
    };
    x.answer(&RowActionResults {
        results: answers
            .iter()
            .cloned()
            .map(RowActionResult::Applied)
            .chain([RowActionResult::Refused(refused.clone())])
            .collect(),
    });
    x.answer(&ErrorBody {
        error: refused.error,
    });

    // config
    x.request(&config_doc());
    x.request(&ConfigDoc::default());
    x.answer(&ConfigAnswer {
        config: config_doc(),
        set_at: 1,
        set_by: "admin".into(),
        version: 2,
    });
    x.answer(&ConfigWritten {
        version: 2,
        index: 3,
    });

    // audit
    x.request(&AuditAppendRequest {
        action: "a".into(),
        ..Default::default()
    });
    x.request(&AuditAppendRequest {
        action: "a".into(),
        channel: Some("c".into()),
        org: Some("o".into()),
        detail: Some("d".into()),
        actor: Some("alice".into()),
    });
    x.answer(&AuditAppended {
        hash: "ab".into(),
        index: 1,
        seq: 0,
    });
    x.request(&AuditSealRequest { org: "o".into() });
    let row = |full: bool| AuditRow {
        seq: 1,
        ts: 2,
        actor: full.then(|| "admin".into()),
        action: "a".into(),
        channel_id: full.then(|| "c".into()),
        org: "o".into(),
        detail: full.then(|| "d".into()),
        prev_hash: [0; 32],
        hash: [1; 32],
        principal: full.then(|| "engine".into()),
    };
    x.answer(&AuditRows {
        org: "o".into(),
        rows: vec![AuditEntry::from(row(true)), AuditEntry::from(row(false))],
    });
    x.answer(&AuditAnchor {
        count: 1,
        era: 0,
        head: "ab".into(),
        org: "o".into(),
    });
    for ok in [true, false] {
        x.answer(&AuditVerification::from(Verification {
            ok,
            count: 2,
            head_hash: "ab".into(),
            eras: 1,
            first_bad_seq: (!ok).then_some(1),
            reason: (!ok).then(|| "broken link".into()),
        }));
    }

    // admin
    x.answer(&NamespaceVersion {
        namespace: "n".into(),
        version: 3,
        entries: None,
    });
    x.answer(&NamespaceVersion {
        namespace: "n".into(),
        version: 3,
        entries: Some(vec![StateValue {
            key: "k".into(),
            message_id: MessageId(1),
            namespace: "n".into(),
            set_at: 2,
            value: serde_json::json!({"anon": "A1"}),
        }]),
    });
    x.answer(&NamespaceList {
        namespaces: vec![NamespaceVersion {
            namespace: "n".into(),
            version: 3,
            entries: None,
        }],
    });
    x.answer(&ReferenceList {
        sets: vec![
            ReferenceSetInfo {
                name: "providers".into(),
                version: 2,
                label: Some("v2".into()),
                synced_at: 5,
                row_count: 1,
            },
            ReferenceSetInfo {
                name: "codes".into(),
                version: 1,
                label: None,
                synced_at: 5,
                row_count: 0,
            },
        ],
    });
    x.request(&ReferenceRequest {
        version: ReferenceVersion::Label("v1".into()),
        rows: BTreeMap::new(),
    });
    x.answer(&StateValue {
        key: "k".into(),
        message_id: MessageId(1),
        namespace: "n".into(),
        set_at: 2,
        value: json!({ "a": 1 }),
    });
    x.request(&ReferenceRequest {
        version: ReferenceVersion::Number(1),
        rows: BTreeMap::from([("k".to_string(), "v".to_string())]),
    });
    x.answer(&ReferenceWritten {
        index: 1,
        row_count: 1,
    });
    x.answer(&Reference::from(ReferenceSnapshot {
        version: 1,
        rows: BTreeMap::from([("k".to_string(), "v".to_string())]),
        synced_at: 2,
        row_count: 1,
    }));
    for kind in [PurgeKind::Bodies, PurgeKind::DeadLetters, PurgeKind::State] {
        x.request(&PurgeRequest {
            kind,
            older_than_ms: Some(5),
            older_than: None,
        });
        x.request(&PurgeRequest {
            kind,
            older_than_ms: None,
            older_than: Some(200_000),
        });
    }
    x.answer(&Purged {
        index: 1,
        purged: 2,
    });
    x.request(&ApprovalRequest {
        operation: "purge".into(),
        params: json!({ "kind": "state" }),
        ttl_ms: Some(5),
    });
    x.answer(&ApprovalCreated {
        id: ApprovalId(1),
        index: 2,
    });
    for decided in [true, false] {
        let approval = Approval {
            id: ApprovalId(1),
            operation: "purge".into(),
            params: "{}".into(),
            requester: "a".into(),
            requested_at: 1,
            status: if decided {
                ApprovalStatus::Approved
            } else {
                ApprovalStatus::Pending
            },
            approver: decided.then(|| "b".into()),
            decided_at: decided.then_some(2),
            expires_at: 10,
        };
        x.answer(&ApprovalView::at(approval.clone(), 20));
        x.answer(&ApprovalList {
            approvals: vec![ApprovalView::keyed(Some("ap-1".into()), approval)],
        });
    }
    x.request(&DecideRequest { approve: true });
    x.answer(&ApprovalDecided {
        approved: true,
        id: ApprovalId(1),
        index: 3,
    });

    // tokens
    let principal = |channels: Option<Vec<String>>| Principal {
        name: "w".into(),
        token_hash: "h".into(),
        role: Role::Worker,
        channels,
        created_at: 1,
    };
    x.answer(&TokenList {
        tokens: vec![
            TokenInfo::from(principal(Some(vec!["lab".into()]))),
            TokenInfo::from(principal(None)),
        ],
    });
    x.request(&TokenRequest {
        name: "w".into(),
        role: Role::Worker,
        channels: Some(vec!["lab".into()]),
        orgs: Some(vec!["clinic".into()]),
    });
    x.answer(&TokenCreated {
        index: 1,
        name: "w".into(),
        role: Role::Worker,
        token: "rl_x".into(),
    });
    x.answer(&Revoked {
        index: 1,
        revoked: true,
    });
    x.request(&OwnerReservation {
        principal: "engine-a".into(),
    });
    for full in [true, false] {
        x.answer(&OwnerBinding {
            owner: "engine-1".into(),
            principal: full.then(|| "engine-a".to_string()),
            index: full.then_some(7),
            changed: full.then_some(true),
        });
    }

    // users, roles, directory groups, sessions
    for full in [true, false] {
        let some = |v: &str| full.then(|| v.to_string());
        let at = |t: u64| full.then_some(t);
        x.request(&CreateUserRequest {
            id: "u1".into(),
            username: "alice".into(),
            auth_provider: if full {
                AuthProvider::Local
            } else {
                AuthProvider::Ad
            },
            display_name: some("Alice"),
            email: some("a@x"),
            password_hash: some("h"),
            must_change_password: full,
        });
        let user = UserView {
            id: "u1".into(),
            username: "alice".into(),
            auth_provider: "local".into(),
            display_name: some("Alice"),
            email: some("a@x"),
            disabled: full,
            created_at: 1,
            updated_at: 2,
            last_login_at: at(3),
            password_hash: some("h"),
            password_changed_at: at(4),
            must_change_password: full,
            failed_attempts: 1,
            locked_until: at(5),
            channel_scope: some("[\"lab\"]"),
            totp_enabled: full,
            totp_enrolled_at: at(6),
        };
        x.answer(&user);
        x.answer(&UserList {
            users: vec![user],
            count: 1,
        });
        x.answer(&UserSecrets {
            totp_secret: some("s"),
            recovery_code_hashes: vec!["r1".into()],
            last_totp_step: at(7),
        });
        x.request(&ProfileChange {
            display_name: some("A"),
            email: some("e"),
        });
        x.request(&TotpSecretChange { secret: some("s") });
        x.request(&LoginFailureChange {
            failed_attempts: 2,
            locked_until: at(9),
        });
        x.request(&ChannelScopeChange { scope: some("[]") });
        x.request(&ConsumeChange {
            recovery_code_hash: some("r1"),
            totp_step: at(3),
        });
        x.answer(&UserChanged {
            index: 1,
            changed: true,
            consumed: full.then_some(true),
        });
        let role = RoleView {
            id: "ops".into(),
            display_name: "Ops".into(),
            description: some("operators"),
            builtin: full,
        };
        x.answer(&RoleList { roles: vec![role] });
        x.request(&RoleRequest {
            display_name: "Ops".into(),
            description: some("operators"),
            builtin: full,
        });
        x.answer(&UserRoles {
            role_ids: vec!["ops".into()],
            assignments: vec![RoleAssignmentView {
                role_id: "ops".into(),
                assigned_at: 1,
                assigned_by: some("root"),
            }],
        });
        x.request(&UserRolesRequest {
            role_ids: vec!["ops".into()],
            assigned_by: some("root"),
        });
        x.answer(&GroupMap {
            map: "roles".into(),
            entries: vec![GroupEntry {
                group: "g".into(),
                value: "ops".into(),
            }],
            values: full.then(|| vec!["ops".into()]),
        });
        x.request(&CreateSessionRequest {
            token_hash: "t".into(),
            user_id: "u1".into(),
            expires_at: 10,
            client: some("10.0.0.1"),
            seed_reauth: full,
            at: at(9),
        });
        let session = SessionView {
            token_hash: "t".into(),
            user_id: "u1".into(),
            created_at: 1,
            expires_at: 10,
            last_used_at: 2,
            revoked_at: at(3),
            client: some("10.0.0.1"),
            reauth_at: at(4),
            mfa_verified_at: at(5),
        };
        x.answer(&session);
        x.answer(&SessionList {
            sessions: vec![session],
        });
        x.request(&ReauthChange {
            client: some("c"),
            at: at(6),
        });
        x.request(&SessionChangeAt { at: at(7) });
        x.request(&RevokeSessionsRequest {
            except_token_hash: some("t"),
            at: at(8),
        });
        x.request(&SessionCapRequest {
            keep: 2,
            at: at(10),
        });
    }
    x.answer(&UserCreated {
        index: 1,
        id: "u1".into(),
    });
    x.answer(&UserDeleted {
        index: 1,
        deleted: true,
    });
    x.request(&PasswordChange {
        password_hash: "h".into(),
        must_change_password: true,
    });
    x.request(&DisabledChange { disabled: true });
    x.request(&TotpEnableChange {
        recovery_code_hashes: vec!["r".into()],
    });
    x.request(&NoChangeBody {});
    x.answer(&RoleWritten {
        index: 1,
        id: "ops".into(),
    });
    x.answer(&RolesAssigned {
        index: 1,
        assigned: 1,
    });
    x.request(&GroupMapRequest {
        entries: vec![GroupEntry {
            group: "g".into(),
            value: "v".into(),
        }],
    });
    x.answer(&GroupMapWritten {
        index: 1,
        stored: 1,
    });
    x.answer(&SessionCreated {
        index: 1,
        token_hash: "t".into(),
    });
    x.answer(&SessionChanged {
        index: 1,
        changed: false,
    });
    x.answer(&SessionsRevoked {
        index: 1,
        revoked: 2,
    });
    x.answer(&SessionsPurged {
        index: 1,
        purged: 3,
    });

    // keys
    x.request(&RotateRequest::default());
    x.request(&RotateRequest {
        batch_size: Some(10),
    });
    x.answer(&Rotated {
        active_key: "k2".into(),
        batches: 1,
        conflicts: 0,
        rewritten: 3,
        skipped: 1,
    });

    // cluster
    x.answer(&StateDigest {
        node_id: 1,
        last_applied: 2,
        digest: "ab".into(),
    });
    for leader_id in [Some(1), None] {
        x.answer(&ClusterStatus {
            last_applied: 1,
            last_log_index: 2,
            leader_id,
            membership: vec![Member {
                addr: "127.0.0.1:1".into(),
                id: 1,
                voter: true,
            }],
            node_id: 1,
            term: 3,
            removed_learners: match leader_id {
                Some(_) => vec![RemovedLearner {
                    id: 4,
                    addr: "n4:7000".into(),
                    reason: "did not catch up".into(),
                    removed_at_ms: 5,
                }],
                None => vec![],
            },
        });
    }
    x.request(&LearnerRequest {
        id: 4,
        addr: "n4:7000".into(),
    });
    x.request(&MembershipRequest { voters: vec![1, 2] });
    x.request(&LogFormatRequest { format: 2 });
    x.answer(&LogFormatStatus {
        node_id: 1,
        log_format: 2,
        reads: vec![1, 2],
    });
    x.answer(&Ack { ok: true });
    x.answer(&Health {
        status: "ok".into(),
    });
    x.answer(&Readiness {
        ready: true,
        reason: None,
    });
    x.answer(&Readiness {
        ready: false,
        reason: Some("no leader".into()),
    });

    let checked = x.check();
    assert!(checked >= 85, "only {checked} examples");
}

/// The check is not vacuous: a member the schema does not declare, or a missing required one,
/// fails it.
#[test]
fn a_value_with_an_undeclared_or_missing_member_does_not_conform() {
    let mut schemas = Schemas::new();
    let mut doc = json!({ "components": { "schemas": {} } });
    doc["claim"] = schemas.answer::<FifoClaim>();
    doc["detail"] = schemas.answer::<MessageDetail>();
    schemas.finish(&mut doc);
    let components = &doc["components"]["schemas"];
    let mut claim = serde_json::to_value(FifoClaim::from(Ok(claimed(true)))).expect("json");
    assert!(conforms(&claim, &doc["claim"], components).is_ok());
    claim["item"]["surprise"] = json!(1);
    let e = conforms(&claim, &doc["claim"], components).expect_err("undeclared member");
    assert!(e.to_string().contains("surprise"), "{e}");
    let mut claim = serde_json::to_value(FifoClaim::from(Ok(claimed(true)))).expect("json");
    claim["item"]
        .as_object_mut()
        .expect("an item")
        .remove("fence");
    assert!(conforms(&claim, &doc["claim"], components).is_err());
    let mut detail = serde_json::to_value(MessageDetail::new(
        MessageView {
            message: message(true),
            events: vec![],
            rows: vec![work_row(true)],
            responses: vec![],
        },
        true,
    ))
    .expect("json");
    assert!(conforms(&detail, &doc["detail"], components).is_ok());
    detail["rows"][0]["claim"]["extra"] = json!(true);
    assert!(conforms(&detail, &doc["detail"], components).is_err());
}
