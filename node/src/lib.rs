//! The raftlane node: configuration, start-up and wiring of the Raft replica with the HTTP API,
//! the local dev cluster and the demo workload.

pub mod backend;
pub mod bench;
pub mod config;
pub mod demo;
pub mod dev;
pub mod health;
pub mod process;
pub mod server;
