//! raftlane's replication layer: openraft, a durable RocksDB log, the state-machine adapter,
//! file snapshots and an authenticated HTTP transport.
//!
//! # Why openraft 0.9
//! 0.9 (pinned `=0.9.25`) is the stable line: its `release-0.9` branch only takes bug fixes, so
//! the storage and network traits we implement stay put. 0.10 is still an alpha whose APIs keep
//! changing between pre-releases; moving to it is a deliberate migration, not a dependency bump.
//! The `storage-v2` feature unseals `RaftLogStorage`/`RaftStateMachine` (separate log and state
//! machine), `serde` lets RPCs and metadata be encoded.
//!
//! # Layout on disk (`<data_dir>`)
//! - `log/`: the Raft log and vote, its own RocksDB, every append and vote fsynced before it is
//!   acknowledged ([`log_store`]), and its durable mark, checked at every start
//!   ([`durable_mark`]).
//! - `sm/`: the replicated state, `StateMachine<RocksStore>`, applied in atomic batches that also
//!   record openraft's `last_applied` and membership ([`sm_adapter`]).
//! - `snapshots/`: snapshot files streamed from the state ([`snapshot`]).
//!
//! # Modules, one job each
//! [`types`] (openraft type config), [`log_store`], [`sm_adapter`], [`snapshot`] (file format),
//! [`auth`] (cluster-secret HMAC), [`clock`] (the cluster's time the leader stamps), [`wire`]
//! (paths and encoding), [`network`] (client), [`server`] (hyper service), [`node`] ([`RaftNode`]
//! handle), [`cluster`] (bootstrap and membership), [`membership_rules`] (what a membership change
//! must not do), [`learners`] and [`learner_removal`] (a learner that cannot catch up is removed),
//! [`start`] (opening the stores and starting a node's tasks), [`timers`] (leader-only
//! housekeeping), [`retention`] (the one retention plan the timer and an operator's purge walk), `quorum` (check-quorum: a leader no majority answers acts as none), `replay`
//! (progress of the replay after a restart), [`config`], [`durable_mark`] (a damaged log is
//! refused, not silently shortened), [`rejoin`] (`--rejoin`: wipe the node's copy, keeping its
//! vote), [`restore`] (a new cluster's node laid down from a backup), [`storage_latency`] (the
//! log's fsync times, slow ones logged), [`storage_health`] (how a node judges its log storage),
//! [`slow_storage`] (a leader on a slow disk hands leadership to a healthy voter) and
//! [`leader_transfer`] (how leadership is handed over, for it and for an operator), and
//! [`log_format`] (the cluster's log format raised once every member reads it: the end of a
//! rolling upgrade).

// openraft's `StorageError` (224 bytes) is the error type its storage traits prescribe; boxing
// it in our own helpers would only add conversions at every trait boundary.
#![allow(clippy::result_large_err)]

pub mod auth;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod durable_mark;
pub mod eager_replication;
mod leader_changes;
pub mod leader_transfer;
pub mod learner_removal;
pub mod learners;
pub mod log_format;
pub mod log_store;
pub mod membership_rules;
pub mod network;
pub mod node;
mod quorum;
pub mod rejoin;
mod replay;
pub mod restore;
pub mod retention;
pub mod server;
pub mod slow_storage;
pub mod sm_adapter;
pub mod snapshot;
pub mod start;
pub mod storage_health;
pub mod storage_latency;
mod test_knob;
pub mod timers;
pub mod types;
mod util;
pub mod wire;

pub use clock::{now_ms, ClockError, ClusterClock};
pub use cluster::ClusterError;
pub use config::{RaftNodeConfig, Tuning};
pub use node::{CoreFailure, NodeError, NotLeader, RaftNode, ReadError, WriteError};
pub use server::{serve_raft, RaftHttpService};
pub use start::{StartError, StateDamage};
pub use types::{NodeId, TypeConfig};
