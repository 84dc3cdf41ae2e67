//! A slow disk under the chaos workload: each synced write of one node's raft log takes
//! 300–800 ms longer (`RAFTLANE_TEST_FSYNC_DELAY_FILE`, a test-only hook), on the leader first.
//! The leader hands its leadership off and the cluster's acknowledged writes come back to half
//! their rate within 12 s (the `throughput` checker), with every other checker green.
//!
//! Without the handoff (SPEC §11.7, "A slow disk") the rate stays at a fraction for as long as
//! the disk is slow: every commit waits for the leader's fsync.

mod common;

use raftlane_chaos::faults::{Fault, FaultKind, Target};
use raftlane_chaos::schedule;
use raftlane_chaos::ChaosOptions;
use std::time::Duration;

/// The first seed from `from` whose schedule slows the leader's disk first.
fn seed_hitting_the_leader_first(from: u64, opts: &ChaosOptions) -> u64 {
    (from..from + 1000)
        .find(|seed| {
            let steps =
                schedule::build(*seed, opts.duration, &opts.faults, opts.workload.lease_ttl);
            matches!(
                steps.first().map(|s| &s.fault),
                Some(Fault::SlowFsync {
                    target: Target::Leader,
                    ..
                })
            )
        })
        .unwrap_or(from)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_disk_on_the_leader_costs_throughput_only_until_it_hands_off() {
    let dir = std::env::temp_dir().join(format!(
        "raftlane-chaos-slow-fsync-bin-{}",
        std::process::id()
    ));
    let Some(binary) = common::private_copy(&dir) else {
        println!("note: the raftlane binary is not built; skipping (cargo build --release -p raftlane-node)");
        return;
    };
    let mut opts = ChaosOptions::local(binary, 0, Duration::from_secs(45));
    opts.faults = vec![FaultKind::SlowFsync];
    opts.quiesce_timeout = Duration::from_secs(45);
    opts.seed = std::env::var("RAFTLANE_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| seed_hitting_the_leader_first(33_000, &opts));
    let report = common::run_passing(opts, &dir).await;
    let slowed_leader = report
        .faults
        .iter()
        .any(|f| f.error.is_none() && f.description.contains("(the leader)"));
    assert!(
        slowed_leader,
        "no slow disk hit the leader: {:?}",
        report.faults
    );
    let throughput = report
        .verdicts
        .iter()
        .find(|v| v.name == "throughput")
        .expect("a throughput verdict");
    assert!(
        throughput.checked >= 1,
        "no slow disk was judged: {:?}",
        throughput.notes
    );
}
