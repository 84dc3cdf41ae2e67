//! Robustness of the log decoding and apply path against hostile bytes (the stable twin of the
//! cargo-fuzz target in `statemachine/fuzz`): thousands of pseudo-random byte strings and
//! mutations of valid encodings (truncated, bit-flipped, bytes replaced, inserted or removed,
//! length prefixes blown up, spliced) are fed to `codec::decode::<Envelope>` and
//! `codec::decode::<Vec<Envelope>>`; whatever decodes is applied to a machine with state and to
//! a fresh one. Nothing may panic, no store error may surface, the state stays deterministic
//! (two machines fed the same stream end with the same digest) and the audit chains verify.

use raftlane_statemachine::model::approval::ApprovalStatus;
use raftlane_statemachine::model::config::{ConfigDoc, RetryPolicy};
use raftlane_statemachine::model::principal::Role;
use raftlane_statemachine::model::row::Stage;
use raftlane_statemachine::model::user::{AdGroupMap, AuthProvider};
use raftlane_statemachine::wire::codec;
use raftlane_statemachine::wire::command::{
    ApprovalTerms, AuditAuthor, ChildKey, Decision, KeyedDecision, NamedApproval, ReferenceVersion,
};
use raftlane_statemachine::wire::command::{
    BumpCounter, CampaignLeadership, ClaimFifoHead, DeadLetterMissingDestinations,
    DeadLetterMissingHandlers, IssueToken, NodeHeartbeat, NodeLeave, RecordView,
    RecoverInflightOnPromotion, ResetStaleInflight, ResignLeadership,
};
use raftlane_statemachine::wire::command::{
    CancelQueued, ClaimNextFifo, ClaimReady, CompleteWithResponse, CreateApproval, CreateSession,
    CreateUser, DeadLetterNow, DecideApproval, DeleteUser, Delivery, DoneThenClaimNext,
    EnforceSessionCap, EnqueueIngress, EnqueueMessage, HandlerWork, Handoff, HandoffDisposition,
    IngressHandoff, MarkDone, MarkFailed, MessageFields, PurgeDeadLetters, PurgeExpiredSessions,
    PurgeMessageBodies, PurgeState, PutConfig, PutPrincipal, ReceivedStatus, ReclaimExpired,
    RecordAudit, RecordReceived, ReleaseLane, RenewLeases, Replay, ReplayDead, RevokePrincipal,
    RevokeUserSessions, RouteDisposition, RouteHandoff, SealAuditEpoch, SessionChange,
    SetAdGroupMap, SetUserRoles, StateOp, TransformHandoff, UpdateSession, UpdateUser, UpsertRole,
    UserChange, WriteReferenceSnapshot,
};
use raftlane_statemachine::wire::LogFormat;
use raftlane_statemachine::{
    ApprovalId, Command, Envelope, Fence, MemStore, MessageId, RowId, StateMachine,
};
use std::collections::BTreeMap;

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

/// One valid envelope of every command kind, aimed at rows, fences and messages that exist in
/// [`warm_machine`]'s state.
fn samples() -> Vec<Envelope> {
    let fields = MessageFields {
        control_id: Some("ctl".into()),
        message_type: Some("ADT^A01".into()),
        source_type: None,
        summary: Some("s".into()),
        metadata: Some("{}".into()),
    };
    let deliveries = vec![
        Delivery {
            destination: "d1".into(),
            payload: "p1".into(),
        },
        Delivery {
            destination: "d2".into(),
            payload: "p2".into(),
        },
    ];
    let retry = RetryPolicy {
        max_attempts: Some(3),
        backoff_ms: 100,
        multiplier_milli: 2000,
        max_backoff_ms: 1000,
    };
    let commands = vec![
        Command::EnqueueIngress(EnqueueIngress {
            channel: "c1".into(),
            raw: "MSH|1".into(),
            fields: fields.clone(),
            idempotency_key: Some("k1".into()),
        }),
        Command::RecordReceived(RecordReceived {
            channel: "c1".into(),
            raw: "x".into(),
            fields: MessageFields::default(),
            status: ReceivedStatus::Error,
            error: Some("bad".into()),
        }),
        Command::EnqueueMessage(EnqueueMessage {
            channel: "c2".into(),
            raw: "y".into(),
            fields,
            deliveries: deliveries.clone(),
            idempotency_key: None,
        }),
        Command::ClaimReady(ClaimReady {
            stage: Stage::Outbound,
            limit: 3,
            channel: None,
            destination: Some("d1".into()),
            owner: "w1".into(),
            ttl_ms: 1000,
        }),
        Command::ClaimNextFifo(ClaimNextFifo {
            stage: Stage::Ingress,
            lane: "c1".into(),
            owner: "w2".into(),
            ttl_ms: 1000,
        }),
        Command::DoneThenClaimNext(DoneThenClaimNext {
            row_id: RowId(1),
            fence: Fence(3),
            owner: "w1".into(),
            ttl_ms: 1000,
        }),
        Command::RenewLeases(RenewLeases {
            ids: vec![RowId(0), RowId(1)],
            owner: "w1".into(),
            ttl_ms: 500,
        }),
        Command::ReclaimExpired(ReclaimExpired {
            stage: Some(Stage::Routed),
        }),
        Command::ReleaseLane(ReleaseLane {
            stage: Stage::Ingress,
            lane: "c1".into(),
            owner: "w2".into(),
        }),
        Command::RouteHandoff(RouteHandoff {
            row_id: RowId(0),
            fence: Fence(3),
            handlers: vec![HandlerWork {
                handler: "h1".into(),
                payload: "w".into(),
            }],
            disposition: RouteDisposition::Routed,
        }),
        Command::Handoff(Handoff {
            row_id: RowId(1),
            fence: Fence(4),
            deliveries: deliveries.clone(),
            disposition: HandoffDisposition::Routed,
        }),
        Command::TransformHandoff(TransformHandoff {
            row_id: RowId(2),
            fence: Fence(5),
            deliveries: deliveries.clone(),
            state_ops: vec![StateOp {
                namespace: "ns".into(),
                key: "k".into(),
                value: "1".into(),
            }],
        }),
        Command::MarkDone(MarkDone {
            row_id: RowId(3),
            fence: Fence(6),
        }),
        Command::CompleteWithResponse(CompleteWithResponse {
            row_id: RowId(4),
            fence: Fence(6),
            body: "ACK".into(),
            outcome: "ok".into(),
            detail: None,
            reingress_to: Some("c3".into()),
        }),
        Command::IngressHandoff(IngressHandoff {
            row_id: RowId(5),
            fence: Fence(7),
            loopback_channel: "c3".into(),
            depth_cap: 2,
            child: None,
        }),
        Command::MarkFailed(MarkFailed {
            row_id: RowId(3),
            fence: Fence(6),
            error: "e".into(),
            retry,
        }),
        Command::DeadLetterNow(DeadLetterNow {
            row_id: RowId(2),
            fence: None,
            error: "poison".into(),
        }),
        Command::Replay(Replay {
            message_id: MessageId(0),
        }),
        Command::ReplayDead(ReplayDead {
            channel: None,
            destination: Some("d1".into()),
        }),
        Command::CancelQueued(CancelQueued {
            destination: "d2".into(),
            channel: None,
            top_only: true,
        }),
        Command::PutConfig(PutConfig {
            expected_version: 0,
            config: ConfigDoc::default(),
        }),
        Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
            name: "ref".into(),
            version: ReferenceVersion::Number(1),
            rows: BTreeMap::from([("a".to_string(), "1".to_string())]),
        }),
        Command::PurgeMessageBodies(PurgeMessageBodies { older_than: 5000 }),
        Command::PurgeDeadLetters(PurgeDeadLetters { older_than: 5000 }),
        Command::PurgeState(PurgeState { older_than: 5000 }),
        Command::ExpireRecords,
        Command::RecordAudit(RecordAudit {
            action: "note".into(),
            channel: Some("c1".into()),
            org: Some("acme".into()),
            detail: Some("d".into()),
            author: AuditAuthor::Principal,
        }),
        Command::SealAuditEpoch(SealAuditEpoch {
            org: "default".into(),
        }),
        Command::CreateApproval(CreateApproval {
            operation: "purge".into(),
            params: "{}".into(),
            terms: ApprovalTerms::Ttl(10_000),
        }),
        Command::DecideApproval(DecideApproval {
            decision: Decision::ById {
                id: ApprovalId(28),
                approve: true,
            },
        }),
        Command::PutPrincipal(PutPrincipal {
            name: "p1".into(),
            token_hash: "ab".repeat(32),
            role: Role::Operator,
            channels: Some(vec!["c1".into()]),
        }),
        Command::RevokePrincipal(RevokePrincipal { name: "p1".into() }),
        Command::UpsertRole(UpsertRole {
            role_id: "admin".into(),
            display_name: "Admin".into(),
            description: None,
            builtin: true,
        }),
        Command::CreateUser(CreateUser {
            user_id: "u1".into(),
            username: "alice".into(),
            auth_provider: AuthProvider::Local,
            display_name: Some("Alice".into()),
            email: None,
            password_hash: Some("hash".into()),
            must_change_password: false,
        }),
        Command::UpdateUser(UpdateUser {
            user_id: "u1".into(),
            change: UserChange::EnableTotp {
                recovery_code_hashes: vec!["r1".into(), "r2".into()],
            },
        }),
        Command::UpdateUser(UpdateUser {
            user_id: "u1".into(),
            change: UserChange::LoginFailure {
                failed_attempts: 2,
                locked_until: Some(9000),
            },
        }),
        Command::SetUserRoles(SetUserRoles {
            user_id: "u1".into(),
            role_ids: vec!["admin".into()],
            assigned_by: Some("root".into()),
        }),
        Command::SetAdGroupMap(SetAdGroupMap {
            map: AdGroupMap::Roles,
            entries: vec![("Admins".into(), "admin".into())],
        }),
        Command::CreateSession(CreateSession {
            token_hash: "cd".repeat(32),
            user_id: "u1".into(),
            expires_at: 5000,
            client: Some("10.0.0.1".into()),
            seed_reauth: true,
        }),
        Command::UpdateSession(UpdateSession {
            token_hash: "cd".repeat(32),
            change: SessionChange::Reauthed {
                client: Some("10.0.0.2".into()),
            },
        }),
        Command::EnforceSessionCap(EnforceSessionCap {
            user_id: "u1".into(),
            keep: 1,
        }),
        Command::RevokeUserSessions(RevokeUserSessions {
            user_id: "u1".into(),
            except_token_hash: None,
        }),
        Command::PurgeExpiredSessions(PurgeExpiredSessions),
        Command::DeleteUser(DeleteUser {
            user_id: "u1".into(),
        }),
        // --- messagefoundry store: queue side (docs/SPEC.md §14) ---
        Command::ClaimFifoHead(ClaimFifoHead {
            stage: Stage::Outbound,
            lane: "d1".into(),
            owner: "node-a:1".into(),
            lane_owner: Some("node-a".into()),
            ttl_ms: 5000,
        }),
        Command::ClaimFifoHead(ClaimFifoHead {
            stage: Stage::Outbound,
            lane: "d1".into(),
            owner: "solo".into(),
            lane_owner: None,
            ttl_ms: 5000,
        }),
        Command::ResetStaleInflight(ResetStaleInflight { stage: None }),
        Command::DeadLetterMissingDestinations(DeadLetterMissingDestinations {
            destinations: vec!["d1".into()],
        }),
        Command::DeadLetterMissingHandlers(DeadLetterMissingHandlers {
            handlers: vec!["h".into()],
        }),
        Command::RecordAudit(RecordAudit {
            action: "auth.login_success".into(),
            channel: None,
            org: Some("mf".into()),
            detail: None,
            author: AuditAuthor::Named(Some("alice".into())),
        }),
        Command::RecordView(RecordView {
            message_id: MessageId(0),
            viewer: Some("alice".into()),
        }),
        Command::IngressHandoff(IngressHandoff {
            row_id: RowId(3),
            fence: Fence(9),
            loopback_channel: "loop".into(),
            depth_cap: 4,
            child: Some(ChildKey {
                key: "k0123".into(),
                control_id: Some("R1".into()),
                message_type: None,
                summary: None,
                peek_failed: true,
            }),
        }),
        Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
            name: "providers".into(),
            version: ReferenceVersion::Label("v1".into()),
            rows: BTreeMap::from([("P1".to_string(), "{}".to_string())]),
        }),
        Command::RecoverInflightOnPromotion(RecoverInflightOnPromotion {
            owner: "node-b:1".into(),
            lane_owner: None,
        }),
        Command::CreateApproval(CreateApproval {
            operation: "purge".into(),
            params: "{}".into(),
            terms: ApprovalTerms::Named(NamedApproval {
                key: "ap-1".into(),
                requester: "alice".into(),
                requested_at: 900,
                expires_at: None,
            }),
        }),
        Command::DecideApproval(DecideApproval {
            decision: Decision::ByKey(KeyedDecision {
                key: "ap-1".into(),
                status: ApprovalStatus::Rejected,
                approver: Some("bob".into()),
                decided_at: 950,
            }),
        }),
        // --- engine coordination (docs/SPEC.md §15) ---
        Command::NodeHeartbeat(NodeHeartbeat {
            node_id: "engine-a".into(),
            host: Some("h".into()),
            pid: Some(4),
        }),
        Command::CampaignLeadership(CampaignLeadership {
            group: "mf".into(),
            node_id: "engine-a".into(),
            ttl_ms: 3000,
        }),
        Command::BumpCounter(BumpCounter {
            name: "config_version".into(),
        }),
        Command::ResignLeadership(ResignLeadership {
            group: "mf".into(),
            node_id: "engine-a".into(),
        }),
        Command::NodeLeave(NodeLeave {
            node_id: "engine-a".into(),
        }),
        Command::RecordView(RecordView {
            message_id: MessageId(0),
            viewer: None,
        }),
        Command::BumpCounter(BumpCounter {
            name: "bound".into(),
        }),
        Command::IssueToken(IssueToken {
            principal: PutPrincipal {
                name: "carol".into(),
                token_hash: "c".repeat(64),
                role: Role::Viewer,
                channels: None,
            },
            nonce: "00ff".into(),
        }),
        // --- sessions dated by the caller ---
        Command::SessionAt(raftlane_statemachine::wire::command::SessionAt {
            at: 9,
            write: raftlane_statemachine::wire::command::SessionWrite::Update(UpdateSession {
                token_hash: "d".repeat(64),
                change: SessionChange::Touch,
            }),
        }),
    ];
    commands
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let e = Envelope::new(
                1000 + 10 * i as u64,
                if i.is_multiple_of(2) { "alice" } else { "bob" },
                c,
            );
            // Every third one carries a request id, so both encodings are exercised; some
            // carry the other header fields (test mode's time, a fingerprint, the operator's
            // word); and the three log formats take turns.
            let mut e = if i % 3 == 0 {
                e.with_request_id(format!("req-{i}"))
            } else {
                e
            };
            e = e
                .at_client_time((i % 7 == 1).then_some(10))
                .fingerprinted((i % 5 == 2).then_some([7; 32]))
                .as_operator(i % 4 == 3);
            e.set_format(LogFormat::READ[i % LogFormat::READ.len()]);
            e
        })
        .collect()
}

/// Applies decoded envelopes at increasing indices; any store error would be a bug.
struct Target {
    sm: StateMachine<MemStore>,
    index: u64,
}

impl Target {
    fn fresh() -> Self {
        Self {
            sm: StateMachine::open(MemStore::new()).expect("open"),
            index: 0,
        }
    }

    /// Whether the command was accepted.
    fn apply(&mut self, envelope: &Envelope) -> bool {
        self.index += 1;
        self.sm
            .apply(self.index, envelope)
            .expect("a hostile command must not break the store")
            .is_ok()
    }
}

/// A machine with rows in every stage, claims, messages and an approval, so that mutated
/// commands land near real ids and fences.
fn warm_machine() -> Target {
    let mut t = Target::fresh();
    for round in 0..3 {
        for e in samples() {
            let _ = t.apply(&e);
        }
        for stage in Stage::ALL {
            for lane in ["c1", "c2", "c3", "d1", "d2"] {
                let _ = t.apply(&Envelope::new(
                    2000 + round,
                    "w",
                    Command::ClaimNextFifo(ClaimNextFifo {
                        stage,
                        lane: lane.into(),
                        owner: "w1".into(),
                        ttl_ms: 100_000,
                    }),
                ));
            }
        }
    }
    t
}

fn mutate(rng: &mut Lcg, base: &[u8], pool: &[Vec<u8>]) -> Vec<u8> {
    let mut b = base.to_vec();
    let rounds = if rng.below(10) < 7 {
        1
    } else {
        2 + rng.below(2)
    };
    for _ in 0..rounds {
        let len = b.len() as u64;
        match rng.below(9) {
            // Truncate.
            0 => b.truncate(rng.below(len + 1) as usize),
            // Flip one bit.
            1 if len > 0 => {
                let at = rng.below(len) as usize;
                b[at] ^= 1 << rng.below(8);
            }
            // Replace a byte.
            2 if len > 0 => {
                let at = rng.below(len) as usize;
                b[at] = rng.byte();
            }
            // Insert a byte.
            3 => {
                let at = rng.below(len + 1) as usize;
                b.insert(at, rng.byte());
            }
            // Remove a byte.
            4 if len > 0 => {
                b.remove(rng.below(len) as usize);
            }
            // Overwrite eight bytes (a length prefix, an id, a timestamp) with an extreme value.
            5 if len >= 8 => {
                let at = rng.below(len - 7) as usize;
                let v: u64 = match rng.below(5) {
                    0 => u64::MAX,
                    1 => 0,
                    2 => 1 << 40,
                    3 => rng.below(64),
                    _ => u64::MAX - rng.below(3),
                };
                b[at..at + 8].copy_from_slice(&v.to_be_bytes());
            }
            // Change the enum tag (the first bytes after the envelope's fixed fields).
            6 if len >= 4 => {
                let at = rng.below(len.min(64) - 3) as usize;
                b[at..at + 4].copy_from_slice(&(rng.below(40) as u32).to_be_bytes());
            }
            // Splice with another encoding.
            7 => {
                let other = &pool[rng.below(pool.len() as u64) as usize];
                let cut = rng.below(len + 1) as usize;
                let from = rng.below(other.len() as u64 + 1) as usize;
                b.truncate(cut);
                b.extend_from_slice(&other[from..]);
            }
            // Append garbage (trailing bytes must be rejected, not ignored).
            _ => b.extend((0..1 + rng.below(8)).map(|_| rng.byte())),
        }
    }
    b
}

#[test]
fn valid_encodings_round_trip() {
    for e in samples() {
        let bytes = codec::encode(&e);
        assert_eq!(codec::decode::<Envelope>(&bytes).expect("decode"), e);
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(
            codec::decode::<Envelope>(&longer).is_err(),
            "trailing bytes accepted"
        );
        for cut in 0..bytes.len() {
            assert!(
                codec::decode::<Envelope>(&bytes[..cut]).is_err(),
                "truncated at {cut} decoded"
            );
        }
    }
    let all = samples();
    assert_eq!(
        codec::decode::<Vec<Envelope>>(&codec::encode(&all)).expect("decode"),
        all
    );
}

#[test]
fn hostile_bytes_never_panic_and_stay_deterministic() {
    let mut rng = Lcg(0x5eed);
    let singles: Vec<Vec<u8>> = samples().iter().map(codec::encode).collect();
    let lists = vec![
        codec::encode(&samples()),
        codec::encode(&samples()[..5].to_vec()),
        codec::encode(&samples()[..2].to_vec()),
    ];
    let mut pool = singles.clone();
    pool.extend(lists.iter().cloned());
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    // Pure noise of every small length, and some longer.
    for _ in 0..1500 {
        let max = if rng.below(4) == 0 { 400 } else { 48 };
        let len = rng.below(max);
        inputs.push((0..len).map(|_| rng.byte()).collect());
    }
    // Mutations of valid encodings, single and lists.
    // A quarter of them lists, whatever the number of sample commands.
    for _ in 0..12_000 {
        let bases = if rng.below(4) == 0 { &lists } else { &singles };
        let base = &bases[rng.below(bases.len() as u64) as usize];
        inputs.push(mutate(&mut rng, base, &pool));
    }
    // Every truncation of the list encoding.
    let list = codec::encode(&samples());
    for cut in (0..list.len()).step_by(7) {
        inputs.push(list[..cut].to_vec());
    }

    let mut warm_a = warm_machine();
    let mut warm_b = warm_machine();
    let mut decoded = 0usize;
    let mut decoded_lists = 0usize;
    let mut accepted = 0usize;
    for bytes in &inputs {
        if let Ok(e) = codec::decode::<Envelope>(bytes) {
            decoded += 1;
            accepted += usize::from(warm_a.apply(&e));
            let _ = warm_b.apply(&e);
            let _ = Target::fresh().apply(&e);
        }
        if let Ok(list) = codec::decode::<Vec<Envelope>>(bytes) {
            decoded_lists += 1;
            let mut fresh = Target::fresh();
            for e in list.iter().take(256) {
                accepted += usize::from(warm_a.apply(e));
                let _ = warm_b.apply(e);
                let _ = fresh.apply(e);
            }
        }
    }
    assert!(
        decoded > 500,
        "only {decoded} inputs decoded as an envelope: the mutations are too destructive"
    );
    assert!(
        decoded_lists > 50,
        "only {decoded_lists} inputs decoded as a list"
    );
    assert!(
        accepted > 200,
        "only {accepted} decoded commands were accepted"
    );
    if std::env::var("RAFTLANE_DECODE_STATS").is_ok_and(|v| v == "1") {
        println!(
            "{} inputs, {decoded} envelopes, {decoded_lists} lists, {accepted} accepted",
            inputs.len()
        );
    }
    assert_eq!(
        warm_a.sm.digest().expect("digest"),
        warm_b.sm.digest().expect("digest")
    );
    let reader = warm_a.sm.read();
    for org in reader.audit_orgs().expect("orgs") {
        let v = reader.audit_verify(&org, None).expect("verify");
        assert!(v.ok, "audit chain of {org:?} after hostile input: {v:?}");
    }
    // The state is still readable end to end.
    for item in warm_a.sm.export() {
        item.expect("export");
    }
    let _ = reader.stats();
}

/// Writes a seed corpus for the cargo-fuzz target (`statemachine/fuzz/corpus/apply/`): every
/// sample envelope on its own, the whole list, and short runs of it. Run on demand:
/// `cargo test -p raftlane-statemachine --test decode write_fuzz_seeds -- --ignored`.
#[test]
#[ignore = "writes files; run on demand before fuzzing"]
fn write_fuzz_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/apply");
    std::fs::create_dir_all(&dir).expect("create corpus dir");
    let all = samples();
    let mut seeds: Vec<Vec<u8>> = all.iter().map(codec::encode).collect();
    seeds.push(codec::encode(&all));
    for w in all.windows(4).step_by(3) {
        seeds.push(codec::encode(&w.to_vec()));
    }
    for (i, seed) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:03}")), seed).expect("write seed");
    }
}
