//! The leader's retention timer: purges proposed from the replicated config's `retention`
//! section (ages) as absolute cutoffs, on the leader only, and nothing while retention is unset.

use raftlane_raft::timers::TIMER_ACTOR;
use raftlane_raft::{now_ms, RaftNode, Tuning};
use raftlane_statemachine::model::config::{ConfigDoc, RetentionConfig};
use raftlane_statemachine::row::Stage;
use raftlane_statemachine::storage::store::Direction;
use raftlane_statemachine::wire::command::{
    Batch, ClaimReady, Delivery, EnqueueMessage, MarkDone, MessageFields, PutConfig,
    ReceivedStatus, RecordReceived, MAX_RETENTION_PAGE,
};
use raftlane_statemachine::{Command, Envelope, MessageId, Outcome, Store, Table};
use raftlane_testkit::raft::*;
use raftlane_testkit::wait::*;
use std::sync::atomic::Ordering;

/// Short retention ticks so the tests see several of them in well under a second.
fn retention_tuning() -> Tuning {
    Tuning {
        retention_interval_ms: 100,
        ..tuning()
    }
}

fn env(command: Command) -> Envelope {
    Envelope::new(now_ms(), "tester", command)
}

async fn put_retention(c: &RaftCluster, expected_version: u64, retention: RetentionConfig) {
    let (_, resp) = c
        .write(env(Command::PutConfig(PutConfig {
            expected_version,
            config: ConfigDoc {
                retention,
                ..ConfigDoc::default()
            },
        })))
        .await;
    assert_eq!(resp, Ok(Outcome::ConfigVersion(expected_version + 1)));
}

/// Enqueue a message with one outbound delivery, claim it and mark it done: the message ends
/// (a terminal status, no live rows), so it is eligible for a body purge.
async fn deliver_one(c: &RaftCluster, body: &str) -> MessageId {
    let (_, resp) = c
        .write(env(Command::EnqueueMessage(EnqueueMessage {
            channel: "orders".into(),
            raw: body.into(),
            fields: MessageFields::default(),
            deliveries: vec![Delivery {
                destination: "api".into(),
                payload: format!("payload of {body}"),
            }],
            idempotency_key: None,
        })))
        .await;
    let Ok(Outcome::Enqueued { message_id, .. }) = resp else {
        panic!("enqueue: {resp:?}");
    };
    let (_, resp) = c
        .write(env(Command::ClaimReady(ClaimReady {
            stage: Stage::Outbound,
            limit: 10,
            channel: None,
            destination: Some("api".into()),
            owner: "worker".into(),
            ttl_ms: 60_000,
        })))
        .await;
    let Ok(Outcome::Claimed(rows)) = resp else {
        panic!("claim: {resp:?}");
    };
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].message_id, message_id);
    let (_, resp) = c
        .write(env(Command::MarkDone(MarkDone {
            row_id: rows[0].row_id,
            fence: rows[0].fence,
        })))
        .await;
    assert_eq!(resp, Ok(Outcome::Done));
    message_id
}

/// `(purged flag, raw body, outbound payload)` of a message on one node.
fn body_state(node: &RaftNode, id: MessageId) -> (bool, String, String) {
    let view = node
        .read_local(|sm| sm.read().message(id))
        .unwrap()
        .unwrap()
        .unwrap_or_else(|| panic!("node {}: message {id:?} missing", node.id()));
    assert!(
        view.message.status.is_terminal(),
        "{:?}",
        view.message.status
    );
    let payload = view
        .rows
        .first()
        .map(|r| r.payload.clone())
        .unwrap_or_default();
    (view.message.purged, view.message.raw, payload)
}

/// Wait until the leader has handled `n` more retention ticks than now.
async fn wait_ticks(node: &RaftNode, n: u64) {
    let stats = node.timer_stats();
    let target = stats.retention_ticks.load(Ordering::Relaxed) + n;
    wait_until("retention ticks", || async {
        stats.retention_ticks.load(Ordering::Relaxed) >= target
    })
    .await;
}

/// With a long period the ended message is kept (the cutoff is `now - period`, not `now`);
/// shortened, the leader's timer blanks it on every replica, and only the leader proposes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leader_purges_message_bodies_past_their_retention() {
    init_tracing();
    let c = RaftCluster::start(3, retention_tuning()).await;
    put_retention(
        &c,
        0,
        RetentionConfig {
            message_bodies_ms: Some(3_600_000),
            ..RetentionConfig::default()
        },
    )
    .await;
    let id = deliver_one(&c, "secret body").await;
    let leader = c.leader().await;

    // Proposed, but an hour-old cutoff leaves a message a moment old alone.
    let stats = c.node(leader).timer_stats();
    let purges_before = stats.retention_purges.load(Ordering::Relaxed);
    wait_ticks(c.node(leader), 3).await;
    assert!(stats.retention_purges.load(Ordering::Relaxed) > purges_before);
    assert_eq!(stats.retention_purged.load(Ordering::Relaxed), 0);
    for node in c.nodes.values() {
        assert_eq!(
            body_state(node, id),
            (false, "secret body".into(), "payload of secret body".into())
        );
    }

    // 200 ms retention: the next ticks after the message is 200 ms old purge it.
    put_retention(
        &c,
        1,
        RetentionConfig {
            message_bodies_ms: Some(200),
            ..RetentionConfig::default()
        },
    )
    .await;
    for node in c.nodes.values() {
        wait_until("the body is purged on every node", || async {
            body_state(node, id).0
        })
        .await;
    }
    // Unset it again: the timer stops proposing (after at most one tick that read the old
    // config), so the replicas can be compared at rest.
    put_retention(&c, 2, RetentionConfig::default()).await;
    wait_ticks(c.node(leader), 2).await;
    let purges = stats.retention_purges.load(Ordering::Relaxed);
    wait_ticks(c.node(leader), 3).await;
    if c.leader().await == leader {
        assert_eq!(stats.retention_purges.load(Ordering::Relaxed), purges);
    }
    let digest = c.converged_digest().await;
    for node in c.nodes.values() {
        assert_eq!(body_state(node, id), (true, String::new(), String::new()));
        assert_eq!(node.digest().await.unwrap().1, digest);
        // Recorded in the audit chain, by the timer.
        let audit = node
            .read_local(|sm| sm.read().audit_list("default", 0, usize::MAX))
            .unwrap()
            .unwrap();
        let purge = audit
            .iter()
            .find(|r| r.action == "retention.purge_bodies")
            .unwrap_or_else(|| panic!("node {}: no purge audit row", node.id()));
        assert_eq!(purge.actor.as_deref(), Some(TIMER_ACTOR));
    }
    if c.leader().await == leader {
        assert_eq!(stats.retention_purged.load(Ordering::Relaxed), 1);
        for (nid, node) in &c.nodes {
            if *nid != leader {
                let s = node.timer_stats();
                assert_eq!(s.retention_ticks.load(Ordering::Relaxed), 0, "node {nid}");
                assert_eq!(s.proposals.load(Ordering::Relaxed), 0, "node {nid}");
            }
        }
    }
    c.shutdown().await;
}

/// Without retention periods the timer ticks but proposes nothing: no entry is added and the
/// ended message keeps its body.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_is_purged_while_retention_is_unset() {
    init_tracing();
    let c = RaftCluster::start(3, retention_tuning()).await;
    // A config document whose retention section is empty (the other sections do not matter).
    put_retention(&c, 0, RetentionConfig::default()).await;
    let id = deliver_one(&c, "kept body").await;
    let digest = c.converged_digest().await;
    let leader = c.leader().await;
    let last = c.node(leader).metrics().last_log_index;

    wait_ticks(c.node(leader), 5).await;
    let stats = c.node(leader).timer_stats();
    assert_eq!(stats.retention_purges.load(Ordering::Relaxed), 0);
    assert_eq!(stats.proposals.load(Ordering::Relaxed), 0);
    assert_eq!(stats.failures.load(Ordering::Relaxed), 0);
    assert_eq!(c.node(leader).metrics().last_log_index, last);
    assert_eq!(c.converged_digest().await, digest);
    for node in c.nodes.values() {
        assert_eq!(
            body_state(node, id),
            (false, "kept body".into(), "payload of kept body".into())
        );
    }
    c.shutdown().await;
}

/// A message recorded as filtered: ended at once, one entry.
fn filtered(n: usize) -> Command {
    Command::RecordReceived(RecordReceived {
        channel: "orders".into(),
        raw: format!("filtered {n}"),
        fields: MessageFields::default(),
        status: ReceivedStatus::Filtered,
        error: None,
    })
}

fn message_count(node: &RaftNode) -> u64 {
    node.read_local(|sm| {
        sm.store()
            .scan(Table::Messages, &[], None, Direction::Forward)
            .map(|scan| scan.count() as u64)
    })
    .unwrap()
    .unwrap()
}

/// With a deletion period the leader deletes ended messages in bounded pages: more ended
/// messages than one page holds go in one tick, page after page, until a page says nothing is
/// left; a live message stays, and the next ticks propose one empty page each.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retention_tick_pages_through_to_the_end() {
    init_tracing();
    // Ticks far enough apart that the messages go in between two of them.
    let tuning = Tuning {
        retention_interval_ms: 3_000,
        message_retention_ms: 1,
        ..tuning()
    };
    let c = RaftCluster::start(3, tuning).await;
    let leader = c.leader().await;
    let stats = c.node(leader).timer_stats();
    // The first tick: the indexing walk (nothing from before the index) and an empty page.
    wait_until("the first tick's two pages", || async {
        stats.retention_pages.load(Ordering::Relaxed) >= 2
    })
    .await;
    let ticks = stats.retention_ticks.load(Ordering::Relaxed);
    let pages = stats.retention_pages.load(Ordering::Relaxed);
    let ended = MAX_RETENTION_PAGE as usize * 2 + 500;
    // Batched so that 2,500 messages take a few entries, not 2,500 round trips.
    for chunk in (0..ended).collect::<Vec<_>>().chunks(500) {
        let commands: Vec<Envelope> = chunk.iter().map(|n| env(filtered(*n))).collect();
        let (_, resp) = c.write(env(Command::Batch(Batch { commands }))).await;
        assert!(matches!(resp, Ok(Outcome::Batch(_))), "{resp:?}");
    }
    let (_, live) = c
        .write(env(Command::EnqueueMessage(EnqueueMessage {
            channel: "orders".into(),
            raw: "live".into(),
            fields: MessageFields::default(),
            deliveries: vec![Delivery {
                destination: "api".into(),
                payload: "p".into(),
            }],
            idempotency_key: None,
        })))
        .await;
    assert!(matches!(live, Ok(Outcome::Enqueued { .. })), "{live:?}");
    wait_until("a tick deleted every ended message", || async {
        stats.retention_purged.load(Ordering::Relaxed) >= ended as u64
    })
    .await;
    // One tick, three pages of at most 1,000 deletions (the last one short), no walk.
    assert_eq!(stats.retention_ticks.load(Ordering::Relaxed), ticks + 1);
    assert_eq!(stats.retention_pages.load(Ordering::Relaxed), pages + 3);
    assert_eq!(stats.retention_purged.load(Ordering::Relaxed), ended as u64);
    let digest = c.converged_digest().await;
    for node in c.nodes.values() {
        assert_eq!(message_count(node), 1, "node {}", node.id());
        assert_eq!(node.digest().await.unwrap().1, digest);
    }
    // The next tick reads nothing already handled: one empty page.
    wait_until("the next tick's page", || async {
        stats.retention_pages.load(Ordering::Relaxed) >= pages + 4
    })
    .await;
    assert_eq!(stats.retention_purged.load(Ordering::Relaxed), ended as u64);
    c.shutdown().await;
}
