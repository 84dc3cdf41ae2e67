//! The cluster's clock (`raftlane_raft::clock`) in three-node clusters whose nodes' clocks
//! disagree: what the leader stamps, and what a node beyond the skew bound is told.
//!
//! What they guard against, as reproduced when each proposer stamped its own wall clock: a
//! +240 s leader stamped its own clock into every entry and broke 30 s leases after 7.4 s; one
//! envelope stamped by a 60 s fast follower moved the state clock 60 s ahead, after which it
//! stood still for 60 s.

use raftlane_raft::now_ms;
use raftlane_raft::{ClusterClock, Tuning};
use raftlane_statemachine::Envelope;
use raftlane_testkit::raft::*;
use raftlane_testkit::wait::init_tracing;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The state machine's clock on `node` minus the real time, in ms.
async fn state_clock_offset(c: &RaftCluster, node: u64) -> i64 {
    let clock = c
        .node(node)
        .read_local(|sm| sm.meta().clock)
        .expect("the state is readable");
    clock as i64 - now_ms() as i64
}

/// Wait until `f` holds, for up to 20 s.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fast_leader_and_a_fast_proposer_cannot_move_the_clusters_clock() {
    init_tracing();
    // Node 1 bootstraps and leads, its clock 20 s fast (inside the 30 s bound).
    let c = RaftCluster::start_skewed(3, tuning(), BTreeMap::from([(1, 20_000)]), 1).await;
    let leader = c.leader().await;
    let (_, answer) = c.write(audit("first")).await;
    assert!(answer.is_ok(), "{answer:?}");
    let off = state_clock_offset(&c, leader).await;
    assert!(
        off.abs() < 2_000,
        "leader {leader} (node 1 runs 20 s fast): the state clock is {off:+} ms off the real time"
    );

    // An envelope stamped 60 s ahead, as a fast follower forwards it: re-stamped by the leader.
    let mut fast = audit("forwarded");
    fast.now_ms = now_ms() + 60_000;
    let (_, answer) = c.node(leader).client_write(fast).await.expect("written");
    assert!(answer.is_ok(), "{answer:?}");
    let off = state_clock_offset(&c, leader).await;
    assert!(
        off.abs() < 2_000,
        "the state clock is {off:+} ms off after a +60 s proposal"
    );
    assert_eq!(
        c.node(leader).clock().restamped_far(),
        1,
        "the skew is counted"
    );

    // And the clock keeps moving with real time (no stand-still after a jump).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = c.node(leader).read_local(|sm| sm.meta().clock).unwrap();
    let _ = c.write(audit("later")).await;
    let after = c.node(leader).read_local(|sm| sm.meta().clock).unwrap();
    assert!(after > before, "the state clock moved: {before} → {after}");
    // Every node agrees on the peers' clocks as the leader measured them.
    let offsets = c.node(leader).clock().offsets();
    if leader == 1 {
        for o in &offsets {
            assert!(
                (o.offset_ms + 20_000).abs() < 1_000,
                "node 1 sees node {} {} ms off (expected -20 s)",
                o.node,
                o.offset_ms
            );
        }
    }
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_beyond_the_skew_bound_cannot_lead_and_is_told_why() {
    init_tracing();
    let mut c = RaftCluster::start(3, tuning()).await;
    let _ = c.write(audit("before")).await;
    // A follower's clock jumps 240 s ahead (restarted with it): beyond the bound, its calls are
    // refused and it refuses theirs. It stops hearing the leader and campaigns, in vain.
    let first = c.leader().await;
    let skewed = (1..=3).find(|n| *n != first).expect("a follower");
    let others: Vec<u64> = (1..=3).filter(|n| *n != skewed).collect();
    c.stop_node(skewed).await;
    c.clock_offsets.insert(skewed, 240_000);
    c.start_node(skewed).await;
    let mut env: Envelope = audit("healthy");
    env.now_ms = 0;
    let (_, answer) = c.write(env).await;
    assert!(answer.is_ok(), "{answer:?}");
    let leader = c.leader_among(&others).await;
    let off = state_clock_offset(&c, leader).await;
    assert!(off.abs() < 2_000, "the state clock is {off:+} ms off");
    // The fast node learns from the refusals' answers that its own clock is the odd one out.
    let fast = c.node(skewed).clone();
    eventually("the fast node reports its clock skew", || {
        fast.clock_skew()
            .is_some_and(|s| s.contains("ahead of the cluster's"))
    })
    .await;
    assert!(
        !fast.is_leader(),
        "a node beyond the skew bound cannot lead"
    );
    assert_eq!(
        c.leader_among(&others).await,
        leader,
        "its campaigns disturb no one"
    );
    // The healthy nodes do not think themselves skewed, and count node 1's refusals as skew.
    assert_eq!(c.node(leader).clock_skew(), None);
    let voters = ClusterClock::voters(c.node(leader).raft());
    assert!(c.node(leader).clock().cluster_offset(&voters).is_ok());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leaders_own_timer_proposals_are_not_clock_skew() {
    // The leader's housekeeping proposals were built stamped 0 and re-stamped, so each one was
    // counted (`raftlane_clock_restamped_beyond_bound_total`) and logged every 10 s as a
    // proposal ~1.8·10¹² ms behind the cluster's clock.
    init_tracing();
    let t = Tuning {
        reclaim_interval_ms: 100,
        expire_interval_ms: 100,
        ..tuning()
    };
    let c = RaftCluster::start(3, t).await;
    let leader = c.leader().await;
    let node = c.node(leader).clone();
    eventually("ten timer proposals committed", || {
        node.timer_stats().proposals.load(Ordering::Relaxed) >= 10
    })
    .await;
    assert_eq!(node.clock().restamped_far(), 0, "no skew counted");
    // And they were stamped with the cluster's time.
    let off = state_clock_offset(&c, leader).await;
    assert!(off.abs() < 2_000, "the state clock is {off:+} ms off");
    c.shutdown().await;
}
