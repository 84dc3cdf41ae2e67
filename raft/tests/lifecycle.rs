//! Cluster life cycle on in-process clusters: growing and shrinking the voter set, restarting a
//! node with `bootstrap = true`, and replacing a node that is already dead.

use raftlane_raft::Tuning;
use raftlane_statemachine::Outcome;
use raftlane_testkit::raft::*;
use raftlane_testkit::wait::*;
use std::collections::{BTreeMap, BTreeSet};

fn voters(node: &raftlane_raft::RaftNode) -> BTreeSet<u64> {
    node.voters()
}

/// Wait until `node` sees exactly `voters` as voters, no learners and no joint config.
async fn wait_voters(c: &RaftCluster, id: u64, want: &[u64]) {
    let want: BTreeSet<u64> = want.iter().copied().collect();
    wait_metrics(c.node(id), &format!("voters {want:?}"), |m| {
        let mem = m.membership_config.membership();
        mem.get_joint_config().len() == 1
            && mem.voter_ids().collect::<BTreeSet<_>>() == want
            && mem.learner_ids().next().is_none()
    })
    .await;
}

/// Every node of `members` sees exactly `members` as voters, and no longer knows node `gone`.
async fn wait_gone(c: &RaftCluster, members: &[u64], gone: u64) {
    for &id in members {
        wait_voters(c, id, members).await;
        let membership = c.node(id).metrics().membership_config;
        assert!(
            membership.membership().get_node(&gone).is_none(),
            "node {id} still knows node {gone}"
        );
    }
}

/// Learner 4 joins and catches up, is promoted to voter, then voter `x` (a follower) is
/// removed; writes committed at every step survive on every final member, with equal digests.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn add_learner_promote_then_remove_a_voter() {
    init_tracing();
    let mut c = RaftCluster::start(3, tuning()).await;
    let mut writes = c.write_many("before", 20, 5).await;

    let l4 = c.reserve(4).await;
    c.start_node_on(4, l4).await;
    let leader = c.leader_among(&[1, 2, 3]).await;
    let addr4 = c.addrs[&4].clone();
    c.node(leader).add_learner(4, addr4.clone()).await.unwrap();
    wait_metrics(c.node(leader), "4 is a learner", |m| {
        let mem = m.membership_config.membership();
        mem.learner_ids().collect::<Vec<_>>() == vec![4]
            && mem.voter_ids().collect::<BTreeSet<_>>() == BTreeSet::from([1, 2, 3])
    })
    .await;
    // The learner replicates (converged_digest waits for every running node, 4 included) but
    // does not vote.
    writes.extend(c.write_many("as-learner", 20, 5).await);
    c.converged_digest().await;
    assert_writes_present(c.node(4), &writes);
    assert!(!voters(c.node(4)).contains(&4));

    let leader = c.leader().await;
    c.node(leader).promote(4).await.unwrap();
    for id in [1, 2, 3, 4] {
        wait_voters(&c, id, &[1, 2, 3, 4]).await;
    }
    writes.extend(c.write_many("four-voters", 20, 5).await);

    // Remove a follower (not the leader, so the removal needs no leader hand-over).
    let leader = c.leader().await;
    let x = *[1, 2, 3]
        .iter()
        .find(|&&id| id != leader)
        .expect("a follower among 1..3");
    c.node(leader).remove(x).await.unwrap();
    let members: Vec<u64> = [1, 2, 3, 4].into_iter().filter(|&id| id != x).collect();
    wait_gone(&c, &members, x).await;
    c.stop_node(x).await;

    writes.extend(c.write_many("after-remove", 20, 5).await);
    let digest = c.converged_digest().await;
    assert_eq!(c.nodes.keys().copied().collect::<Vec<_>>(), members);
    for &id in &members {
        assert_writes_present(c.node(id), &writes);
        assert_eq!(c.node(id).digest().await.unwrap().1, digest);
    }
    // The three remaining voters still form a working cluster: lose one, keep writing.
    let leader = c.leader().await;
    c.stop_node(leader).await;
    let (_, resp) = c.write(audit("after-failover")).await;
    assert!(matches!(resp, Ok(Outcome::Audit { .. })), "{resp:?}");
    c.converged_digest().await;
    c.shutdown().await;
}

/// A node restarted with `bootstrap = true` (as a node whose service file always says
/// "bootstrap" is) finds its vote and log and does not initialize again — not even when its
/// peer list names only itself, which, if honoured, would make it a one-node cluster. Checked
/// with a log already purged up to a snapshot, the case where "has this node any log?" is
/// easiest to get wrong. First the whole cluster restarts that way (so each node's state can be
/// compared straight from disk, before any leader exists), then one follower alone while the
/// others keep committing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restart_with_bootstrap_true_does_not_reinitialize() {
    init_tracing();
    let t = Tuning {
        snapshot_logs_since_last: 30,
        max_in_snapshot_log_to_keep: 0,
        purge_batch_size: 1,
        ..tuning()
    };
    let mut c = RaftCluster::start(3, t).await;
    let mut writes = c.write_many("before", 60, 10).await;
    let digest = c.converged_digest().await;
    // Every node has built a snapshot and purged the log behind it.
    for id in 1..=3 {
        wait_metrics(c.node(id), "snapshot built and log purged", |m| {
            m.snapshot.is_some() && m.purged.is_some()
        })
        .await;
    }

    // Round 1: the whole cluster, every node with bootstrap = true; node 2 with only itself as
    // its peer list.
    let mut before = BTreeMap::new();
    for (&id, node) in &c.nodes {
        before.insert(id, (node.metrics(), node.applied_log_id().unwrap()));
    }
    for id in 1..=3 {
        c.stop_node(id).await;
    }
    for id in 1..=3 {
        let mut cfg = c.config(id, true);
        if id == 2 {
            cfg.peers = BTreeMap::from([(2, c.addrs[&2].clone())]);
        }
        let l = c.rebind(id).await;
        let node = c.start_node_with(cfg, l).await;
        let (m, applied) = &before[&id];
        let last = m.last_log_index;
        // Straight from disk, before any new entry (leader no-ops do not change the digest).
        assert_eq!(node.applied_log_id().unwrap(), *applied, "node {id}");
        assert_eq!(node.digest().await.unwrap().1, digest, "node {id}");
        let now = wait_metrics(&node, "log loaded", |n| n.last_log_index >= last).await;
        assert_eq!(
            now.membership_config, m.membership_config,
            "node {id}: membership changed at start"
        );
        // An explicit second bootstrap call is a no-op too.
        assert_eq!(node.bootstrap(&c.addrs.clone()).await, Ok(false));
    }
    writes.extend(c.write_many("after-full-restart", 10, 5).await);
    c.converged_digest().await;
    for n in c.nodes.values() {
        assert_eq!(voters(n), BTreeSet::from([1, 2, 3]), "node {}", n.id());
        assert_writes_present(n, &writes);
        // The log continued past where it was (no second log starting at 1).
        let last = before[&n.id()].0.last_log_index.unwrap_or(0);
        assert!(n.metrics().last_log_index.unwrap_or(0) >= last + 10);
    }

    // Round 2: one follower, down while the others commit, back with bootstrap = true and only
    // itself as its peer list.
    let leader = c.leader().await;
    let id = *c.nodes.keys().find(|&&id| id != leader).unwrap();
    let m = c.node(id).metrics();
    c.stop_node(id).await;
    writes.extend(c.write_many("while-down", 10, 5).await);
    let mut cfg = c.config(id, true);
    cfg.peers = BTreeMap::from([(id, c.addrs[&id].clone())]);
    let l = c.rebind(id).await;
    let node = c.start_node_with(cfg, l).await;
    let now = wait_metrics(&node, "log loaded", |n| {
        n.last_log_index >= m.last_log_index
    })
    .await;
    assert_eq!(now.membership_config, m.membership_config);
    writes.extend(c.write_many("after-follower-restart", 10, 5).await);
    c.converged_digest().await;
    for n in c.nodes.values() {
        assert_eq!(voters(n), BTreeSet::from([1, 2, 3]), "node {}", n.id());
        assert_writes_present(n, &writes);
    }
    assert!(c.node(id).metrics().last_log_index.unwrap_or(0) >= m.last_log_index.unwrap_or(0) + 20);
    c.shutdown().await;
}

/// Voter 3 dies (really stopped) and then is replaced by a new node 4 through the two
/// survivors: the learner catches up, the voter set becomes {1, 2, 4} and node 3 is gone from
/// the membership; the new set commits and survives the loss of its leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replace_a_dead_node() {
    init_tracing();
    let mut c = RaftCluster::start(3, tuning()).await;
    let mut writes = c.write_many("before", 20, 5).await;
    c.converged_digest().await;

    // Make sure the dead node is a follower, so the survivors keep their leader; then kill it.
    let leader = c.leader().await;
    let dead = *[3, 2, 1]
        .iter()
        .find(|&&id| id != leader)
        .expect("a follower");
    c.stop_node(dead).await;
    writes.extend(c.write_many("degraded", 20, 5).await);

    let l4 = c.reserve(4).await;
    c.start_node_on(4, l4).await;
    let survivors: Vec<u64> = [1, 2, 3].into_iter().filter(|&id| id != dead).collect();
    let leader = c.leader_among(&survivors).await;
    let addr4 = c.addrs[&4].clone();
    c.node(leader).replace(dead, 4, addr4).await.unwrap();

    let mut members = survivors.clone();
    members.push(4);
    wait_gone(&c, &members, dead).await;

    writes.extend(c.write_many("replaced", 20, 5).await);
    let digest = c.converged_digest().await;
    for &id in &members {
        assert_writes_present(c.node(id), &writes);
        assert_eq!(c.node(id).digest().await.unwrap().1, digest);
    }
    // Node 4 counts towards the quorum: stop the leader, the other two elect one and commit.
    let leader = c.leader().await;
    c.stop_node(leader).await;
    let new = c.leader().await;
    assert_ne!(new, leader);
    assert!(members.contains(&new));
    writes.extend(c.write_many("final", 5, 5).await);
    c.converged_digest().await;
    for n in c.nodes.values() {
        assert_writes_present(n, &writes);
    }
    c.shutdown().await;
}

/// A leader restarted at once wins its leadership back by an election, in a new term, instead
/// of taking it up again in its old one (`log_store::as_restarted`): its followers may hold
/// entries of the old term it never wrote (eager replication), which it would otherwise write
/// over under the same log ids. Writes made before go on being there, and the nodes agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_leader_is_elected_again_in_a_new_term() {
    init_tracing();
    let mut c = RaftCluster::start(3, tuning()).await;
    let writes = c.write_many("before", 20, 5).await;
    let leader = c.leader().await;
    let term = c.node(leader).metrics().current_term;
    c.stop_node(leader).await;
    let l = c.rebind(leader).await;
    let cfg = c.config(leader, false);
    c.start_node_with(cfg, l).await;
    let now = c.leader().await;
    let new_term = c.node(now).metrics().current_term;
    assert!(
        new_term > term,
        "leader {now} leads in term {new_term}, the term {leader} led before its restart"
    );
    c.write_many("after", 5, 5).await;
    c.converged_digest().await;
    for id in 1..=3 {
        assert_writes_present(c.node(id), &writes);
    }
    c.shutdown().await;
}
