//! Encryption at rest as the write path's one wrapper (docs/SPEC.md §2.6), without HTTP: every
//! command kind that carries covered values, proposed plain through a [`Proposer`] with a
//! keyring, is stored as ciphertext, and the write path's reads and claims give the plaintext
//! back. `api/tests/crypto.rs` checks the same through the router.

use raftlane_api::backend;
use raftlane_api::crypto::Keyring;
use raftlane_api::metrics::Metrics;
use raftlane_api::write::claim::MAX_CONTAINED_PER_CLAIM;
use raftlane_api::write::policy::DEFAULT_RETRY;
use raftlane_api::write::{Settings, WriteError};
use raftlane_api::{Backend, LocalBackend, Proposer};
use raftlane_statemachine::model::config::RetryPolicy;
use raftlane_statemachine::query::MessageFilter;
use raftlane_statemachine::row::Stage;
use raftlane_statemachine::wire::command::ReferenceVersion;
use raftlane_statemachine::wire::command::{
    ClaimNextFifo, ClaimReady, CompleteWithResponse, DeadLetterNow, Delivery, EnqueueIngress,
    EnqueueMessage, HandlerWork, Handoff, HandoffDisposition, MarkFailed, MessageFields,
    ReceivedStatus, RecordReceived, RouteDisposition, RouteHandoff, StateOp, TransformHandoff,
    WriteReferenceSnapshot,
};
use raftlane_statemachine::wire::rewrite::ValueRef;
use raftlane_statemachine::{ClaimedRow, Command, Envelope, MessageId, Outcome};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

const TTL: u64 = 120_000;

fn keyring(id: &str, byte: u8) -> Keyring {
    Keyring::new(vec![(id.to_string(), [byte; 32])]).expect("keyring")
}

/// A proposer over `backend`, and the envelopes of one caller with numbered request ids.
struct Node {
    writes: Proposer,
    backend: Arc<LocalBackend>,
    requests: AtomicU32,
    caller: &'static str,
}

impl Node {
    fn start(backend: Arc<LocalBackend>, keyring: Option<Keyring>, caller: &'static str) -> Self {
        let dyn_backend: Arc<dyn Backend> = backend.clone();
        let settings = Settings {
            cluster_auth: None,
            peer_timeout: Duration::from_secs(2),
            membership_timeout: Duration::from_secs(2),
            keyring,
            peer_tls: None,
        };
        Node {
            writes: Proposer::start(dyn_backend, settings, Arc::new(Metrics::default())),
            backend,
            requests: AtomicU32::new(0),
            caller,
        }
    }

    fn envelope(&self, command: Command) -> Envelope {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        Envelope::new(raftlane_raft::now_ms(), self.caller, command)
            .with_request_id(format!("{}/{n}", self.caller))
    }

    async fn propose(&self, command: Command) -> Outcome {
        let name = command.name();
        let (_, response) = self
            .writes
            .write(self.envelope(command))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        response.unwrap_or_else(|r| panic!("{name} rejected: {r}"))
    }

    /// Claim every due row of `stage` and open them as a worker gets them.
    async fn claim(&self, stage: Stage) -> Vec<ClaimedRow> {
        let outcome = self
            .propose(Command::ClaimReady(ClaimReady {
                stage,
                limit: 100,
                channel: None,
                destination: None,
                owner: "w".into(),
                ttl_ms: TTL,
            }))
            .await;
        let Outcome::Claimed(claimed) = outcome else {
            panic!("claim answered {outcome:?}")
        };
        for row in &claimed {
            assert!(
                row.payload.starts_with("enc:v1:"),
                "claimed as stored: {row:?}"
            );
        }
        let envelope = |command| self.envelope(command);
        self.writes
            .open_claims(claimed, &envelope)
            .await
            .expect("opened")
    }

    /// Every covered value as stored (what the Raft log and the disks hold).
    fn stored(&self) -> Vec<(ValueRef, String)> {
        backend::read(self.backend.as_ref(), |r| {
            r.covered_values(None, usize::MAX)
        })
        .expect("read")
    }
}

fn enqueued(outcome: Outcome) -> MessageId {
    match outcome {
        Outcome::Enqueued { message_id, .. } => message_id,
        other => panic!("enqueue answered {other:?}"),
    }
}

fn plain(raw: &str) -> MessageFields {
    MessageFields {
        summary: Some(format!("summary of {raw}")),
        ..MessageFields::default()
    }
}

/// Every value written below holds `SECRET-` (a `-` is not base64: no ciphertext can hold it).
const NEEDLE: &str = "SECRET-";

#[tokio::test(flavor = "multi_thread")]
async fn each_covered_command_is_stored_sealed_and_read_back_plain() {
    let node = Node::start(Arc::new(LocalBackend::new()), Some(keyring("k1", 1)), "t");

    // EnqueueIngress → RouteHandoff → TransformHandoff (deliveries, state) → MarkFailed →
    // CompleteWithResponse.
    let mid = enqueued(
        node.propose(Command::EnqueueIngress(EnqueueIngress {
            channel: "orders".into(),
            raw: "SECRET-raw".into(),
            fields: plain("raw"),
            idempotency_key: None,
        }))
        .await,
    );
    let ingress = node.claim(Stage::Ingress).await;
    assert_eq!(ingress.len(), 1);
    assert_eq!(ingress[0].payload, "SECRET-raw");
    node.propose(Command::RouteHandoff(RouteHandoff {
        row_id: ingress[0].row_id,
        fence: ingress[0].fence,
        handlers: vec![HandlerWork {
            handler: "h".into(),
            payload: "SECRET-handler".into(),
        }],
        disposition: RouteDisposition::Routed,
    }))
    .await;
    let routed = node.claim(Stage::Routed).await;
    assert_eq!(routed[0].payload, "SECRET-handler");
    node.propose(Command::TransformHandoff(TransformHandoff {
        row_id: routed[0].row_id,
        fence: routed[0].fence,
        deliveries: vec![Delivery {
            destination: "wh".into(),
            payload: "SECRET-out".into(),
        }],
        state_ops: vec![StateOp {
            namespace: "ns".into(),
            key: "k".into(),
            value: r#"{"v":"SECRET-state"}"#.into(),
        }],
    }))
    .await;
    let out = node.claim(Stage::Outbound).await;
    assert_eq!(out[0].payload, "SECRET-out");
    let again_now = RetryPolicy {
        max_attempts: None,
        backoff_ms: 0,
        multiplier_milli: 1000,
        max_backoff_ms: 0,
    };
    node.propose(Command::MarkFailed(MarkFailed {
        row_id: out[0].row_id,
        fence: out[0].fence,
        error: "SECRET-boom".into(),
        retry: again_now,
    }))
    .await;
    let out = node.claim(Stage::Outbound).await;
    assert_eq!(out.len(), 1, "the failed row is due again");
    node.propose(Command::CompleteWithResponse(CompleteWithResponse {
        row_id: out[0].row_id,
        fence: out[0].fence,
        body: "SECRET-body".into(),
        outcome: "ok".into(),
        detail: Some("SECRET-detail".into()),
        reingress_to: None,
    }))
    .await;

    // WriteReferenceSnapshot.
    node.propose(Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
        name: "ref".into(),
        version: ReferenceVersion::Number(1),
        rows: BTreeMap::from([("k".to_string(), "SECRET-ref".to_string())]),
    }))
    .await;

    // Handoff → DeadLetterNow.
    let dead_mid = enqueued(
        node.propose(Command::EnqueueIngress(EnqueueIngress {
            channel: "orders".into(),
            raw: "SECRET-dead-raw".into(),
            fields: plain("dead"),
            idempotency_key: None,
        }))
        .await,
    );
    let ingress = node.claim(Stage::Ingress).await;
    node.propose(Command::Handoff(Handoff {
        row_id: ingress[0].row_id,
        fence: ingress[0].fence,
        deliveries: vec![Delivery {
            destination: "dl".into(),
            payload: "SECRET-dl".into(),
        }],
        disposition: HandoffDisposition::Routed,
    }))
    .await;
    let out = node.claim(Stage::Outbound).await;
    node.propose(Command::DeadLetterNow(DeadLetterNow {
        row_id: out[0].row_id,
        fence: Some(out[0].fence),
        error: "SECRET-dead".into(),
    }))
    .await;

    // The producer-judged commands no route proposes today carry covered values too.
    let routed_mid = enqueued(
        node.propose(Command::EnqueueMessage(EnqueueMessage {
            channel: "direct".into(),
            raw: "SECRET-direct".into(),
            fields: plain("direct"),
            deliveries: vec![Delivery {
                destination: "wh2".into(),
                payload: "SECRET-direct-out".into(),
            }],
            idempotency_key: None,
        }))
        .await,
    );
    let received = node
        .propose(Command::RecordReceived(RecordReceived {
            channel: "direct".into(),
            raw: "SECRET-received".into(),
            fields: plain("received"),
            status: ReceivedStatus::Error,
            error: Some("SECRET-received-error".into()),
        }))
        .await;
    let received_mid = enqueued(received);

    // What the state holds: ciphertext under k1 everywhere; an event detail the state machine
    // composed around a ciphertext holds it embedded. No plaintext anywhere.
    let stored = node.stored();
    assert!(stored.len() >= 15, "{stored:?}");
    for (target, value) in &stored {
        assert!(!value.contains(NEEDLE), "{target:?} leaks: {value}");
        match target {
            ValueRef::EventDetail { .. } => {}
            _ => assert!(
                value.is_empty() || value.starts_with("enc:v1:k1:"),
                "{target:?} stored as {value}"
            ),
        }
    }

    // What the write path's reads serve: the plaintext of each.
    let view = node
        .writes
        .read_covered(|r| r.message(mid))
        .expect("read")
        .expect("the message");
    assert_eq!(view.message.raw, "SECRET-raw");
    // (The ingress and routed rows were consumed by their handoffs: their payloads were
    // checked as claimed above.)
    let outbound = view
        .rows
        .iter()
        .find(|r| r.stage == Stage::Outbound)
        .expect("the outbound row");
    assert_eq!(outbound.payload, "SECRET-out");
    assert_eq!(outbound.last_error.as_deref(), Some("SECRET-boom"));
    let details: Vec<&str> = view
        .events
        .iter()
        .filter_map(|e| e.detail.as_deref())
        .collect();
    assert!(details.contains(&"attempt 1: SECRET-boom"), "{details:?}");
    assert!(
        details.iter().all(|d| !d.contains("enc:v1:")),
        "{details:?}"
    );
    assert_eq!(view.responses[0].body, "SECRET-body");
    assert_eq!(view.responses[0].detail.as_deref(), Some("SECRET-detail"));

    let entry = node
        .writes
        .read_covered(|r| r.state_entry("ns", "k"))
        .expect("read")
        .expect("the state entry");
    assert_eq!(entry.value, r#"{"v":"SECRET-state"}"#);
    let reference = node
        .writes
        .read_covered(|r| r.reference("ref"))
        .expect("read")
        .expect("the snapshot");
    assert_eq!(reference.rows["k"], "SECRET-ref");
    let dead = node
        .writes
        .read_covered(|r| r.dead_letters(None, Some("dl"), 10))
        .expect("read");
    assert_eq!(dead[0].payload, "SECRET-dl");
    assert_eq!(dead[0].last_error.as_deref(), Some("SECRET-dead"));
    let listed = node
        .writes
        .read_covered(|r| {
            r.list_messages_page(&MessageFilter {
                limit: 100,
                ..MessageFilter::default()
            })
        })
        .expect("read");
    let raws: Vec<&str> = listed
        .messages
        .iter()
        .map(|m| m.message.raw.as_str())
        .collect();
    for (id, raw) in [
        (mid, "SECRET-raw"),
        (dead_mid, "SECRET-dead-raw"),
        (routed_mid, "SECRET-direct"),
        (received_mid, "SECRET-received"),
    ] {
        assert!(
            listed
                .messages
                .iter()
                .any(|m| m.message.id == id && m.message.raw == raw),
            "{raw} in {raws:?}"
        );
    }
    let received = listed
        .messages
        .iter()
        .find(|m| m.message.id == received_mid)
        .expect("listed");
    assert_eq!(
        received.message.error.as_deref(),
        Some("SECRET-received-error")
    );
    let direct = node.claim(Stage::Outbound).await;
    assert_eq!(direct.len(), 1);
    assert_eq!(direct[0].payload, "SECRET-direct-out");

    // Summaries are not covered: stored as sent.
    let summary = backend::read(node.backend.as_ref(), |r| r.message(mid))
        .expect("read")
        .expect("the message")
        .message
        .summary;
    assert_eq!(summary.as_deref(), Some("summary of raw"));
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_keyring_values_are_stored_as_sent() {
    let node = Node::start(Arc::new(LocalBackend::new()), None, "t");
    let mid = enqueued(
        node.propose(Command::EnqueueIngress(EnqueueIngress {
            channel: "c".into(),
            raw: "clear text".into(),
            fields: MessageFields::default(),
            idempotency_key: None,
        }))
        .await,
    );
    let stored = node.stored();
    // Every value sent is stored as sent; the one event detail is the state machine's own
    // text (`received` "ingress").
    assert!(
        stored.iter().all(|(target, v)| match target {
            ValueRef::EventDetail { .. } => v == "ingress",
            _ => v == "clear text",
        }),
        "{stored:?}"
    );
    assert_eq!(stored.len(), 3, "{stored:?}");
    let view = node.writes.read_covered(|r| r.message(mid)).expect("read");
    assert_eq!(view.expect("the message").message.raw, "clear text");
}

/// A FIFO lane whose heads were written under a key this node no longer has: the claim
/// dead-letters them (under their fences, with a sealed error) and hands out the first good
/// row; a lane of nothing but poison gives up after `MAX_CONTAINED_PER_CLAIM`.
#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_claim_moves_past_poison_heads() {
    let backend = Arc::new(LocalBackend::new());
    let old = Node::start(backend.clone(), Some(keyring("k0", 7)), "old");
    let lane_row = |lane: &str, payload: &str| {
        Command::EnqueueMessage(EnqueueMessage {
            channel: "c".into(),
            raw: format!("raw of {payload}"),
            fields: MessageFields::default(),
            deliveries: vec![Delivery {
                destination: lane.into(),
                payload: payload.into(),
            }],
            idempotency_key: None,
        })
    };
    let fifo_row = |payload: &str| lane_row("fifo", payload);
    for i in 0..2 {
        old.propose(fifo_row(&format!("lost-{i}"))).await;
    }
    for i in 0..MAX_CONTAINED_PER_CLAIM + 1 {
        old.propose(lane_row("poison", &format!("poison-{i}")))
            .await;
    }
    let node = Node::start(backend, Some(keyring("k1", 1)), "new");
    node.propose(fifo_row("good")).await;

    let claim = Command::ClaimNextFifo(ClaimNextFifo {
        stage: Stage::Outbound,
        lane: "fifo".into(),
        owner: "w".into(),
        ttl_ms: TTL,
    });
    let first = node.propose(claim.clone()).await;
    let envelope = |command| node.envelope(command);
    let answer = node
        .writes
        .fifo_claim(first, &claim, &envelope)
        .await
        .expect("claimed")
        .expect("not rejected");
    let Outcome::FifoClaimed(Ok(item)) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(item.payload, "good");
    let dead = node
        .writes
        .read_covered(|r| r.dead_letters(None, Some("fifo"), 10))
        .expect("read");
    assert_eq!(dead.len(), 2, "{dead:?}");
    for row in &dead {
        let error = row.last_error.as_deref().unwrap_or_default();
        assert!(
            error.starts_with("undecryptable payload (key k0)"),
            "{error}"
        );
        assert!(row.payload.starts_with("enc:v1:k0:"), "kept for a replay");
    }
    let stored_errors: Vec<String> = node
        .stored()
        .into_iter()
        .filter(|(t, _)| matches!(t, ValueRef::RowLastError { .. }))
        .map(|(_, v)| v)
        .collect();
    assert!(
        stored_errors.iter().all(|e| e.starts_with("enc:v1:k1:")),
        "the containment's error is sealed too: {stored_errors:?}"
    );

    // A lane of nothing but poison: the request gives up, bounded; the next one moves on.
    let claim = Command::ClaimNextFifo(ClaimNextFifo {
        stage: Stage::Outbound,
        lane: "poison".into(),
        owner: "w".into(),
        ttl_ms: TTL,
    });
    let first = node.propose(claim.clone()).await;
    match node.writes.fifo_claim(first, &claim, &envelope).await {
        Err(WriteError::PoisonLane { contained }) => {
            assert_eq!(contained, MAX_CONTAINED_PER_CLAIM)
        }
        other => panic!("expected the request to give up, got {other:?}"),
    }
    let first = node.propose(claim.clone()).await;
    match node.writes.fifo_claim(first, &claim, &envelope).await {
        Ok(Ok(Outcome::FifoClaimed(Err(_)))) => {}
        other => panic!("the lane is empty once the last head is contained: {other:?}"),
    }
}

#[test]
fn a_default_retry_is_exported_for_callers() {
    // The write path's default, the one a `fail` without a policy proposes.
    assert_eq!(DEFAULT_RETRY.backoff_ms, 1000);
    let e = WriteError::PoisonLane { contained: 64 };
    assert_eq!(
        e.to_string(),
        "64 undecryptable rows dead-lettered in this lane; claim again"
    );
}
