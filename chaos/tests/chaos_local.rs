//! The short chaos run CI executes: fixed seed, local backend, every fault kind, about a minute
//! and a half in all. It runs the `raftlane` binary's `node` subcommand as child processes, so
//! the binary must be built first (`cargo build --release -p raftlane-node`, which the README's
//! test command does); without it the test prints a note and passes vacuously.

mod common;

use raftlane_chaos::ChaosOptions;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn short_chaos_run_finds_no_violations() {
    let dir = std::env::temp_dir().join(format!("raftlane-chaos-test-bin-{}", std::process::id()));
    let Some(binary) = common::private_copy(&dir) else {
        println!("note: the raftlane binary is not built; skipping the chaos run (build it with `cargo build --release -p raftlane-node`)");
        return;
    };
    let seed = std::env::var("RAFTLANE_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_240_601);
    let mut opts = ChaosOptions::local(binary, seed, Duration::from_secs(55));
    opts.quiesce_timeout = Duration::from_secs(45);
    opts.workload.producers = 2;
    opts.workload.produce_every = Duration::from_millis(120);
    let report = common::run_passing(opts, &dir).await;
    let injected: u64 = report.faults_by_kind().values().map(|(ok, _)| ok).sum();
    assert!(injected >= 5, "only {injected} faults were injected");
}
