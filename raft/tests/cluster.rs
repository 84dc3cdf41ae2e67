//! Three-node clusters in one process over real loopback HTTP.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use openraft::network::RPCOption;
use openraft::raft::VoteRequest;
use openraft::RaftNetwork;
use raftlane_raft::auth::{ClusterAuth, AUTH_HEADER};
use raftlane_raft::network::{HttpNetwork, NetworkConfig};
use raftlane_raft::types::Vote;
use raftlane_raft::{now_ms, wire, NotLeader, ReadError, WriteError};
use raftlane_statemachine::Outcome;
use raftlane_testkit::raft::*;
use raftlane_testkit::wait::*;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_reach_every_node_with_equal_digests() {
    init_tracing();
    let c = RaftCluster::start(3, tuning()).await;
    let writes = c.write_many("w", 40, 10).await;
    let digest = c.converged_digest().await;
    for node in c.nodes.values() {
        assert_writes_present(node, &writes);
        assert_eq!(node.digest().await.unwrap().1, digest);
    }

    // Linearizable reads: the leader serves them and sees every acknowledged write...
    let leader = c.leader().await;
    let count = c
        .node(leader)
        .read_linearizable(|sm| sm.read().audit_anchor("default").map(|h| h.count))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(count, 40);
    // ...followers redirect to it, as they do for writes.
    let follower = *c.nodes.keys().find(|&&id| id != leader).unwrap();
    match c.node(follower).read_linearizable(|_| ()).await {
        Err(ReadError::ForwardToLeader(NotLeader { leader_id, addr })) => {
            assert_eq!(leader_id, Some(leader));
            assert_eq!(addr.as_deref(), Some(c.addrs[&leader].as_str()));
        }
        other => panic!("follower read: {other:?}"),
    }
    match c.node(follower).client_write(audit("on-follower")).await {
        Err(WriteError::ForwardToLeader(NotLeader { leader_id, addr })) => {
            assert_eq!(leader_id, Some(leader));
            assert_eq!(addr.as_deref(), Some(c.addrs[&leader].as_str()));
        }
        other => panic!("follower write: {other:?}"),
    }
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leader_loss_elects_a_new_leader_without_losing_writes() {
    init_tracing();
    let mut c = RaftCluster::start(3, tuning()).await;
    let mut writes = c.write_many("before", 40, 8).await;
    let old = c.leader().await;
    c.stop_node(old).await;

    let new = c.leader().await;
    assert_ne!(new, old);
    writes.extend(c.write_many("after", 20, 5).await);
    c.converged_digest().await;
    for node in c.nodes.values() {
        assert_writes_present(node, &writes);
    }

    // The old leader comes back as a follower and catches up.
    c.start_node(old).await;
    let digest = c.converged_digest().await;
    assert_writes_present(c.node(old), &writes);
    assert_eq!(c.node(old).digest().await.unwrap().1, digest);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_node_restarts_from_disk_with_the_same_digest() {
    init_tracing();
    let mut c = RaftCluster::start(3, tuning()).await;
    let writes = c.write_many("r", 50, 10).await;
    let digest = c.converged_digest().await;
    for id in 1..=3 {
        c.stop_node(id).await;
    }
    for id in 1..=3 {
        let node = c.start_node(id).await;
        // Straight from disk, before any new entry (leader no-ops do not change the digest).
        assert_eq!(
            node.digest().await.unwrap().1,
            digest,
            "node {id} after restart"
        );
    }
    assert_eq!(c.converged_digest().await, digest);
    for node in c.nodes.values() {
        assert_writes_present(node, &writes);
    }
    // And the restarted cluster takes writes.
    let (_, resp) = c.write(audit("after-restart")).await;
    assert!(
        matches!(resp, Ok(Outcome::Audit { seq: 50, .. })),
        "{resp:?}"
    );
    c.converged_digest().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lagging_node_catches_up_by_snapshot() {
    init_tracing();
    let t = raftlane_raft::Tuning {
        snapshot_logs_since_last: 50,
        max_in_snapshot_log_to_keep: 0,
        purge_batch_size: 1,
        // Small chunks, so a snapshot takes several InstallSnapshot requests.
        snapshot_chunk_bytes: 4096,
        ..tuning()
    };
    let mut c = RaftCluster::start(3, t).await;
    let mut writes = c.write_many("a", 10, 5).await;
    c.converged_digest().await;
    let leader = c.leader().await;
    let lagger = *c.nodes.keys().find(|&&id| id != leader).unwrap();
    let lag_applied = c
        .node(lagger)
        .metrics()
        .last_applied
        .map(|l| l.index)
        .unwrap_or(0);
    c.stop_node(lagger).await;

    writes.extend(c.write_many("b", 250, 25).await);
    // The leader must have dropped the entries the lagger needs.
    wait_metrics(c.node(leader), "leader purged past the lagger", |m| {
        m.purged.map(|p| p.index).unwrap_or(0) > lag_applied + 1
    })
    .await;
    assert!(
        c.node(leader)
            .sm_stats()
            .snapshots_built
            .load(Ordering::Relaxed)
            >= 1
    );

    let node = c.start_node(lagger).await;
    let digest = c.converged_digest().await;
    assert!(
        node.sm_stats().snapshots_installed.load(Ordering::Relaxed) >= 1,
        "the lagger caught up without a snapshot"
    );
    assert!(node.metrics().snapshot.is_some());
    assert_writes_present(&node, &writes);

    // The installed snapshot (plus the log after it) is what a restart recovers.
    c.stop_node(lagger).await;
    let node = c.start_node(lagger).await;
    assert_eq!(node.digest().await.unwrap().1, digest);
    writes.extend(c.write_many("c", 10, 5).await);
    c.converged_digest().await;
    assert_writes_present(c.node(lagger), &writes);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn membership_changes_from_123_to_124() {
    init_tracing();
    let mut c = RaftCluster::start(3, tuning()).await;
    let mut writes = c.write_many("m", 20, 5).await;
    let l4 = c.reserve(4).await;
    c.start_node_on(4, l4).await;

    let leader = c.leader_among(&[1, 2, 3]).await;
    let addr4 = c.addrs[&4].clone();
    c.node(leader).replace(3, 4, addr4).await.unwrap();

    // Every remaining member sees the new voter set; node 3 is out.
    for id in [1, 2, 4] {
        wait_metrics(c.node(id), "voters {1,2,4}", |m| {
            let mem = m.membership_config.membership();
            mem.voter_ids().collect::<BTreeSet<_>>() == BTreeSet::from([1, 2, 4])
                && mem.get_node(&3).is_none()
        })
        .await;
    }
    c.stop_node(3).await;

    writes.extend(c.write_many("after", 20, 5).await);
    let digest = c.converged_digest().await;
    for id in [1, 2, 4] {
        assert_writes_present(c.node(id), &writes);
        assert_eq!(c.node(id).digest().await.unwrap().1, digest);
    }
    // Leadership works within the new set: stop the leader, {the other two} elect one.
    let leader = c.leader().await;
    c.stop_node(leader).await;
    let new = c.leader().await;
    assert_ne!(new, leader);
    assert!([1, 2, 4].contains(&new));
    let (_, resp) = c.write(audit("final")).await;
    assert!(resp.is_ok(), "{resp:?}");
    c.shutdown().await;
}

async fn raw_post(addr: &str, path: &str, body: Vec<u8>, auth: Option<String>) -> (u16, Bytes) {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let mut req = hyper::Request::post(format!("http://{addr}{path}"));
    if let Some(a) = auth {
        req = req.header(AUTH_HEADER, a);
    }
    let resp = client
        .request(req.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.into_body().collect().await.unwrap().to_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wrong_cluster_secret_is_refused() {
    init_tracing();
    let c = RaftCluster::start(3, tuning()).await;
    c.write_many("s", 5, 5).await;
    let leader = c.leader().await;
    let target = *c.nodes.keys().find(|&&id| id != leader).unwrap();
    let addr = c.addrs[&target].clone();
    let before = c.node(target).metrics();
    let refused_before = c
        .node(target)
        .server_stats()
        .unauthorized
        .load(Ordering::Relaxed);

    // A vote for a far higher term: processed, it would make the target adopt that term.
    let rpc = VoteRequest::new(Vote::new(before.current_term + 100, 99), None);
    let body = wire::encode(&rpc).unwrap();
    let wrong = ClusterAuth::new("not-the-cluster-secret", 300_000);
    let right = ClusterAuth::new(SECRET, 300_000);

    let signed_wrong = wrong.sign(target, wire::PATH_VOTE, now_ms(), &body);
    assert_eq!(
        raw_post(&addr, wire::PATH_VOTE, body.clone(), Some(signed_wrong))
            .await
            .0,
        401
    );
    assert_eq!(
        raw_post(&addr, wire::PATH_VOTE, body.clone(), None).await.0,
        401
    );
    // Right secret, but signed for other bytes / another endpoint / long ago.
    let for_other_body = right.sign(target, wire::PATH_VOTE, now_ms(), b"other");
    assert_eq!(
        raw_post(&addr, wire::PATH_VOTE, body.clone(), Some(for_other_body))
            .await
            .0,
        401
    );
    let for_other_path = right.sign(target, wire::PATH_APPEND, now_ms(), &body);
    assert_eq!(
        raw_post(&addr, wire::PATH_VOTE, body.clone(), Some(for_other_path))
            .await
            .0,
        401
    );
    let stale = right.sign(target, wire::PATH_VOTE, now_ms() - 3_600_000, &body);
    assert_eq!(
        raw_post(&addr, wire::PATH_VOTE, body.clone(), Some(stale))
            .await
            .0,
        401
    );

    let after = c.node(target).metrics();
    assert!(
        after.current_term < before.current_term + 100,
        "a refused vote was processed"
    );
    assert_ne!(after.vote.leader_id().voted_for(), Some(99));
    assert_eq!(
        c.node(target)
            .server_stats()
            .unauthorized
            .load(Ordering::Relaxed)
            - refused_before,
        5
    );

    // A valid call is served once: the identical request played again is refused (within the
    // freshness window its nonce is remembered), and so is one signed for another node (a
    // signature names the node it is for).
    let stale_vote = wire::encode(&VoteRequest::new(Vote::new(0, 99), None)).unwrap();
    let once = right.sign(target, wire::PATH_VOTE, now_ms(), &stale_vote);
    assert_eq!(
        raw_post(
            &addr,
            wire::PATH_VOTE,
            stale_vote.clone(),
            Some(once.clone())
        )
        .await
        .0,
        200
    );
    // Refused saying only that authentication failed (the reason is in the node's log).
    let blank = raftlane_raft::auth::AuthError::Replayed.public_body();
    let (status, why) = raw_post(&addr, wire::PATH_VOTE, stale_vote.clone(), Some(once)).await;
    assert_eq!(status, 401);
    assert_eq!(String::from_utf8_lossy(&why), blank);
    let other = *c.nodes.keys().find(|&&id| id != target).unwrap();
    let for_other_node = right.sign(other, wire::PATH_VOTE, now_ms(), &stale_vote);
    let (status, why) = raw_post(&addr, wire::PATH_VOTE, stale_vote, Some(for_other_node)).await;
    assert_eq!(status, 401);
    assert_eq!(
        String::from_utf8_lossy(&why),
        blank,
        "no node id in the answer"
    );

    // A node configured with the wrong secret cannot talk to the cluster (mapped to
    // Unreachable, so openraft backs off)...
    let rogue = HttpNetwork::new(99, wrong, NetworkConfig::default());
    let err = rogue
        .peer(target, &addr)
        .vote(rpc.clone(), RPCOption::new(Duration::from_secs(10)))
        .await
        .unwrap_err();
    assert!(
        matches!(err, openraft::error::RPCError::Unreachable(_)),
        "{err:?}"
    );
    // ...while the right secret gets an answer (a stale vote: not granted).
    let good = HttpNetwork::new(99, right, NetworkConfig::default());
    let resp = good
        .peer(target, &addr)
        .vote(
            VoteRequest::new(Vote::new(0, 99), None),
            RPCOption::new(Duration::from_secs(10)),
        )
        .await
        .unwrap();
    assert!(!resp.vote_granted);

    c.converged_digest().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn only_the_leader_runs_the_housekeeping_timers() {
    init_tracing();
    let t = raftlane_raft::Tuning {
        reclaim_interval_ms: 200,
        expire_interval_ms: 500,
        ..tuning()
    };
    let c = RaftCluster::start(3, t).await;
    let leader = c.leader().await;
    let term = c.node(leader).metrics().current_term;
    wait_until("the leader proposed housekeeping commands", || async {
        c.node(leader)
            .timer_stats()
            .proposals
            .load(Ordering::Relaxed)
            >= 5
    })
    .await;
    if c.node(leader).metrics().current_term == term && c.leader().await == leader {
        for (id, node) in &c.nodes {
            if *id != leader {
                assert_eq!(
                    node.timer_stats().proposals.load(Ordering::Relaxed),
                    0,
                    "follower {id} proposed"
                );
            }
        }
    }
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_are_batched_on_followers() {
    init_tracing();
    let c = RaftCluster::start(3, tuning()).await;
    let leader = c.leader().await;
    let writes = c.write_many("g", 300, 100).await;
    assert_eq!(writes.len(), 300);
    c.converged_digest().await;
    for (id, node) in &c.nodes {
        let s = node.log_stats();
        let (appends, entries, syncs) = (
            s.appends.load(Ordering::Relaxed),
            s.entries.load(Ordering::Relaxed),
            s.syncs.load(Ordering::Relaxed),
        );
        eprintln!(
            "node {id} (leader: {}): {appends} appends, {entries} entries, {syncs} syncs",
            *id == leader
        );
        assert!(entries >= 300);
        if *id != leader {
            assert!(
                appends < entries,
                "follower {id} did not batch: {appends} appends for {entries} entries"
            );
        }
    }
    c.shutdown().await;
}

/// Rough write throughput through a three-node cluster (run with `--ignored --nocapture`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore]
async fn throughput() {
    init_tracing();
    let c = RaftCluster::start(3, tuning()).await;
    for (n, concurrency) in [(500, 1), (2000, 50), (4000, 200)] {
        let start = std::time::Instant::now();
        c.write_many(&format!("t{concurrency}"), n, concurrency)
            .await;
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "{n} writes, {concurrency} concurrent: {:.0} writes/s, {:.2} ms mean latency",
            n as f64 / secs,
            secs * 1000.0 * concurrency as f64 / n as f64
        );
    }
    c.converged_digest().await;
    c.shutdown().await;
}
