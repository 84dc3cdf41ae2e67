//! The raftlane node: configuration, start-up and wiring of the Raft replica with the HTTP API,
//! and the local dev cluster. The demo workload (`node/demo/`, `raftlane-demo`) and the
//! benchmarks (`node/bench/`, `raftlane-bench`) are crates of their own that start nodes and dev
//! clusters through this library; the fault-injection suite is `chaos/` (`raftlane-chaos`).

pub mod backend;
pub mod certs;
pub mod config;
pub mod ctl;
pub mod data_dir;
pub mod dev;
pub mod exit_status;
pub mod health;
pub mod known_defaults;
pub mod listener;
pub mod node_metrics;
pub mod process;
pub mod rejoin;
pub mod restore;
pub mod secret_file;
pub mod server;
pub mod tls;

use tracing_subscriber::EnvFilter;

/// Log events filtered by `RAFTLANE_LOG` (default `info,openraft=error`): every binary that runs
/// nodes (`raftlane`, `raftlane-demo`, `raftlane-bench`) logs the same way.
pub fn init_logging() {
    let filter = EnvFilter::try_from_env("RAFTLANE_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,openraft=error"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .init();
}
